"""Builds homa_dpdk._torch_homa, the torch.distributed backend "homa" (a C++
c10d ProcessGroup over libhoma, sources in python/homa_dpdk/csrc/), with g++
against the installed torch's headers and libraries: the flags that
torch.utils.cpp_extension would use, without its ninja run.

    build(build_dir, pkg_dir, libhoma_path) -> path of the module, or None

compiles csrc/*.cpp into build_dir and links pkg_dir/_torch_homa<EXT_SUFFIX>
against libhoma_path (libhoma.so.1, found beside the module at run time:
rpath $ORIGIN; copied into pkg_dir when it is not there). It returns None,
and says why on stderr, without building, when this interpreter has no
torch or torch's C++ headers are absent (python3-torch without
libtorch-dev, or a Python such as pyenv's that has no torch): `import
homa_dpdk.torch` then raises an ImportError that names what is missing.

From the source tree, with the interpreter that has torch:

    /usr/bin/python3 python/_build/torch_ext.py --inplace

builds into python/homa_dpdk/ (libhoma from python/homa_dpdk/libhoma.so.1,
or native/build/libhoma.so.1 after `make -C native`, which it runs when
neither exists). Standard library only, so the package's build backend
(homa_build.py) can import it.
"""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig

NAME = "_torch_homa"
HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)                       # python/
ROOT = os.path.dirname(PYDIR)                       # the repository
CSRC = os.path.join(PYDIR, "homa_dpdk", "csrc")


def _say(msg):
    print("torch_ext: " + msg, file=sys.stderr, flush=True)


def _torch_facts():
    """(include dirs, library dir, cxx11 abi, pybind11 defines) of this
    interpreter's torch, or a string saying what is missing."""
    try:
        import torch  # noqa: F401
        import torch.utils.cpp_extension as ce
    except ImportError as e:
        return "this Python (%s) has no torch (%s): install python3-torch and use /usr/bin/python3" % (sys.executable, e)
    incs = [d for d in ce.include_paths() if os.path.isdir(d)]
    hdr = "torch/csrc/distributed/c10d/ProcessGroup.hpp"
    if not any(os.path.exists(os.path.join(d, hdr)) for d in incs):
        return "torch's C++ headers (%s) are missing: install libtorch-dev" % hdr
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    if not glob.glob(os.path.join(libdir, "libtorch_python.so*")):
        libdir = None  # Debian: in the linker's default path
    defines = []
    for p in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        v = getattr(torch._C, "_PYBIND11_" + p, None)
        if v is not None:
            defines.append('-DPYBIND11_%s="%s"' % (p, v))
    return incs, libdir, int(torch._C._GLIBCXX_USE_CXX11_ABI), defines


def _find_libhoma(pkg_dir):
    for p in (os.path.join(pkg_dir, "libhoma.so.1"), os.path.join(ROOT, "native", "build", "libhoma.so.1")):
        if os.path.exists(p):
            return p
    return None


def _nice(cmd):
    return ["nice", "-n", "10"] + cmd if shutil.which("nice") else cmd


def _run(cmd):
    r = subprocess.run(_nice(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("torch_ext: %s failed:\n%s" % (" ".join(cmd[:3]) + " ...", r.stdout))
    if r.stdout.strip():
        _say(r.stdout.strip())


def _compile_all(jobs):
    """Runs the compile commands of jobs [(name, cmd)], as many at once as
    there are CPUs."""
    running, failed = [], []
    width = max(1, os.cpu_count() or 1)
    jobs = list(jobs)
    while jobs or running:
        while jobs and len(running) < width:
            name, cmd = jobs.pop(0)
            _say("compiling " + name)
            running.append((name, subprocess.Popen(_nice(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                   text=True)))
        name, p = running.pop(0)
        out, _ = p.communicate()
        if p.returncode != 0:
            failed.append("%s:\n%s" % (name, out))
        elif out.strip():
            _say(out.strip())
    if failed:
        raise RuntimeError("torch_ext: compiling failed: " + "\n".join(failed))


def build(build_dir, pkg_dir, libhoma_path=None):
    """Builds pkg_dir/_torch_homa<EXT_SUFFIX>; returns its path, or None
    (and why, on stderr) when torch or its headers are missing."""
    facts = _torch_facts()
    if isinstance(facts, str):
        _say("not building the backend \"homa\": " + facts)
        return None
    incs, libdir, abi, defines = facts
    libhoma_path = libhoma_path or _find_libhoma(pkg_dir)
    if libhoma_path is None or not os.path.exists(libhoma_path):
        raise RuntimeError("torch_ext: libhoma.so.1 not found (%s): run make -C native" % libhoma_path)
    homa_inc = os.path.join(ROOT, "native", "include")
    if not os.path.exists(os.path.join(homa_inc, "homa.h")):
        homa_inc = os.path.join(os.path.dirname(os.path.abspath(libhoma_path)), "include")
    os.makedirs(build_dir, exist_ok=True)
    os.makedirs(pkg_dir, exist_ok=True)
    cxx = os.environ.get("CXX", "g++")
    cflags = ["-O2", "-g0", "-fPIC", "-std=c++17", "-Wall", "-Wno-unused-parameter",
              "-DTORCH_EXTENSION_NAME=" + NAME, "-DTORCH_API_INCLUDE_EXTENSION_H",
              "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi] + defines
    cflags += ["-I" + homa_inc, "-I" + CSRC]
    cflags += ["-isystem" + d for d in incs] + ["-isystem" + sysconfig.get_paths()["include"]]
    objs, jobs = [], []
    for src in sorted(glob.glob(os.path.join(CSRC, "*.cpp"))):
        obj = os.path.join(build_dir, os.path.basename(src)[:-4] + ".o")
        deps = [src] + glob.glob(os.path.join(CSRC, "*.hpp")) + [os.path.join(homa_inc, "homa.h")]
        if not os.path.exists(obj) or os.path.getmtime(obj) < max(os.path.getmtime(d) for d in deps):
            jobs.append((os.path.basename(src), [cxx] + cflags + ["-c", src, "-o", obj]))
        objs.append(obj)
    _compile_all(jobs)
    # libhoma travels with the module: linked by its soname, found at $ORIGIN.
    lib_in_pkg = os.path.join(pkg_dir, "libhoma.so.1")
    if os.path.abspath(libhoma_path) != os.path.abspath(lib_in_pkg):
        shutil.copy2(libhoma_path, lib_in_pkg + ".tmp")
        os.replace(lib_in_pkg + ".tmp", lib_in_pkg)
    out = os.path.join(pkg_dir, NAME + sysconfig.get_config_var("EXT_SUFFIX"))
    if not jobs and os.path.exists(out) and os.path.getmtime(out) >= max(
            os.path.getmtime(p) for p in objs + [lib_in_pkg]):
        _say(os.path.basename(out) + " is up to date")
        return out
    ldflags = ["-shared", "-Wl,-rpath,$ORIGIN", "-Wl,--no-as-needed", lib_in_pkg]
    if libdir:
        ldflags += ["-L" + libdir, "-Wl,-rpath," + libdir]
    ldflags += ["-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python"]
    _say("linking " + os.path.basename(out))
    _run([cxx] + objs + ["-o", out + ".tmp"] + ldflags)
    os.replace(out + ".tmp", out)
    return out


def main(argv):
    if "--inplace" not in argv:
        print(__doc__)
        return 2
    pkg = os.path.join(PYDIR, "homa_dpdk")
    lib = _find_libhoma(pkg)
    if lib is None and isinstance(_torch_facts(), tuple):
        _say("building libhoma: make -C native")
        subprocess.run(["make", "-C", os.path.join(ROOT, "native")], check=True)
        lib = _find_libhoma(pkg)
    out = build(os.path.join(PYDIR, "build", "torch_ext"), pkg, lib)
    if out:
        _say("built " + os.path.relpath(out, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
