"""The homa-dpdk package's build backend (PEP 517, PEP 660), in the tree.

Standard library only and no build requirements, so pip builds and
installs the package offline with build isolation on (its default) and
with any pip that reads pyproject.toml's backend-path (pip 22 and later):
nothing is fetched from an index. The package is the Python sources, its
binding homa_dpdk/_native (the CPython C API) and libhoma, the worker
protocol's C library, which the build compiles from native/ with the
system's C compiler (cc, or $CC) into homa_dpdk/libhoma.so.1 (soname
libhoma.so.1, native/libhoma.map as its version script when there is one);
_native links it with an rpath of $ORIGIN, so the package directory is
all it needs, installed or in the tree. A wheel is therefore for one
interpreter and platform (cpXY-cpXY-linux_x86_64).

native/ is found at ../native from python/ (a checkout), or at native/ in
python/ (an sdist, which carries a copy).

If _build/torch_ext.py exists, the build also calls
torch_ext.build(build_dir, pkg_dir, libhoma_path): build_dir is a scratch
directory (python/build/torch_ext, kept, for builds in place), pkg_dir the
package directory the build fills (its files go into the wheel, or stay in
the tree for --inplace and editable installs), libhoma_path the
libhoma.so.1 built there.

In a source tree, `python3 python/_build/homa_build.py --inplace` builds
the two libraries into python/homa_dpdk/ for the interpreter that runs it
(nothing when they are newer than their sources: native/, _native*.c, this
file), then calls the torch hook (--no-torch: not).
"""

import base64
import contextlib
import fcntl
import glob
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "homa-dpdk"
DIST = "homa_dpdk"  # the distribution's name in file names
VERSION = "0.1.0"
PACKAGE = "homa_dpdk"
LIBHOMA = "libhoma.so.1"

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
BUILD_DIR = os.path.dirname(os.path.abspath(__file__))  # python/_build/
PKG_DIR = os.path.join(HERE, PACKAGE)
# What the build makes (never packaged from the tree, never in an sdist).
BUILT_SUFFIXES = (".so", ".so.1", ".o")
SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp")  # in the sdist, not in the wheel


def _tag():
    """cpXY-cpXY-<platform> of the running interpreter."""
    py = "cp%d%d" % sys.version_info[:2]
    abi = py + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (py, abi, plat)


def _ext_suffix():
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def native_dir():
    """native/: the sdist's copy first, then the checkout's."""
    for d in (os.path.join(HERE, "native"), os.path.join(os.path.dirname(HERE), "native")):
        if os.path.isfile(os.path.join(d, "include", "homa.h")):
            return d
    raise RuntimeError("homa_build: native/ (libhoma's sources, include/homa.h) not found at %s/native or %s/native"
                       % (HERE, os.path.dirname(HERE)))


def _libhoma_sources(nd):
    srcs = sorted(glob.glob(os.path.join(nd, "src", "*.c")))
    if not srcs:
        raise RuntimeError("homa_build: no libhoma sources in %s/src" % nd)
    return srcs


def _inputs(nd):
    """Every file the two libraries are built from."""
    files = _libhoma_sources(nd) + sorted(glob.glob(os.path.join(nd, "src", "*.h")))
    files += sorted(glob.glob(os.path.join(nd, "include", "*.h")))
    files += [p for p in [os.path.join(nd, "libhoma.map")] if os.path.exists(p)]
    files += _binding_sources() + [os.path.join(PKG_DIR, "_native.h"), os.path.abspath(__file__)]
    return files  # not the torch extension's: its hook decides what it rebuilds


def _binding_sources():
    """The binding's C files (homa_dpdk/_native*.c; _native.h says which does what)."""
    return sorted(glob.glob(os.path.join(PKG_DIR, "_native*.c")))


def _cc():
    return shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")[:1] or ["cc"]


def _run(cmd, quiet):
    if not quiet:
        print(" ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("homa_build: the compiler failed (%d):\n%s\n%s" % (r.returncode, " ".join(cmd), r.stdout))
    if r.stdout and not quiet:
        print(r.stdout, file=sys.stderr, end="")


def build_core(out_dir, build_dir, quiet=False):
    """Builds libhoma.so.1 and _native<EXT_SUFFIX> into out_dir; build_dir
    is scratch space. Each file is moved into place whole. Returns the
    paths made."""
    nd = native_dir()
    cc = _cc()
    flags = ["-O2", "-fPIC", "-Wall", "-pthread"]
    lib_tmp = os.path.join(build_dir, LIBHOMA)
    # as native/Makefile builds it: only what HM_EXPORT marks (and the version script lists) is exported
    cmd = cc + flags + ["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden", "-shared", "-I",
                        os.path.join(nd, "include"), "-I", os.path.join(nd, "src")]
    cmd += _libhoma_sources(nd) + ["-Wl,-soname," + LIBHOMA, "-o", lib_tmp]
    vs = os.path.join(nd, "libhoma.map")
    if os.path.exists(vs):
        cmd.append("-Wl,--version-script=" + vs)
    _run(cmd, quiet)
    ext = "_native" + _ext_suffix()
    ext_tmp = os.path.join(build_dir, ext)
    pyinc = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(pyinc, "Python.h")):
        raise RuntimeError("homa_build: Python.h not found in %s (Debian: apt-get install python3-dev)" % pyinc)
    # only PyInit__native is exported (PyMODINIT_FUNC); libhoma is found beside the module
    cmd = cc + flags + ["-std=gnu11", "-fvisibility=hidden", "-shared", "-I", pyinc, "-I", os.path.join(nd, "include"),
                        "-I", PKG_DIR] + _binding_sources() + [lib_tmp, "-Wl,-rpath,$ORIGIN", "-o", ext_tmp]
    _run(cmd, quiet)
    os.makedirs(out_dir, exist_ok=True)
    made = []
    for tmp, name in ((lib_tmp, LIBHOMA), (ext_tmp, ext)):
        dst = os.path.join(out_dir, name)
        shutil.copyfile(tmp, dst + ".tmp")
        os.chmod(dst + ".tmp", 0o755)
        os.replace(dst + ".tmp", dst)  # a process that has the old one mapped keeps it
        made.append(dst)
    return made


def build_torch(build_dir, out_dir):
    """The torch extension's hook: torch_ext.build(build_dir, out_dir,
    libhoma_path) when _build/torch_ext.py exists (its errors are the
    build's)."""
    if not os.path.exists(os.path.join(BUILD_DIR, "torch_ext.py")):
        return None
    sys.path.insert(0, BUILD_DIR)
    try:
        import torch_ext
    finally:
        sys.path.remove(BUILD_DIR)
    return torch_ext.build(build_dir, out_dir, os.path.join(out_dir, LIBHOMA))


@contextlib.contextmanager
def _locked():
    """One build of the tree at a time (the tests of two interpreters may
    start at once): a lock on this file."""
    with open(os.path.abspath(__file__), "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def up_to_date():
    """Whether python/homa_dpdk/ holds both libraries, newer than every input."""
    try:
        outs = [os.path.join(PKG_DIR, LIBHOMA), os.path.join(PKG_DIR, "_native" + _ext_suffix())]
        oldest = min(os.path.getmtime(p) for p in outs)
        return all(os.path.getmtime(p) <= oldest for p in _inputs(native_dir()))
    except (OSError, RuntimeError):
        return False


def build_inplace(force=False, quiet=False, torch=True):
    """Builds libhoma and _native into python/homa_dpdk/ unless they are up
    to date, and then, if torch, the torch extension through its hook, in
    python/build/torch_ext (kept, so that it recompiles only what changed,
    as torch_ext.py --inplace does). Returns True if it built the first two.
    The package's own tests pass torch=False (the extension takes minutes)."""
    with _locked():
        built = False
        if force or not up_to_date():
            with tempfile.TemporaryDirectory(prefix="homa-build-") as tmp:
                build_core(PKG_DIR, tmp, quiet)
            built = True
        if torch:
            build_torch(os.path.join(HERE, "build", "torch_ext"), PKG_DIR)
        return built


# ------------------------------------------------------------ the wheel


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    head = "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + VERSION,
        "Summary: Python worker interface of the homa-dpdk daemon (shared-memory rings, Homa RPCs)",
        "Requires-Python: >=3.9",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Programming Language :: C",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Intended Audience :: Science/Research",
        "Classifier: Topic :: System :: Networking",
        "Provides-Extra: numpy",
        "Requires-Dist: numpy; extra == \"numpy\"",
        "Description-Content-Type: text/markdown",
    ])
    return head + "\n\n" + readme


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: homa_build\nRoot-Is-Purelib: false\nTag: " + _tag() + "\n"


def _dist_info():
    return "%s-%s.dist-info" % (DIST, VERSION)


def _walk(root, rel_to):
    """Files under root: (path relative to rel_to, full path), sorted, no caches or build products."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "build"))
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo", ".tmp") + BUILT_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, rel_to).replace(os.sep, "/"), full))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(wheel_directory, entries):
    """Writes a wheel of entries [(path, bytes, mode)] plus its dist-info."""
    info = _dist_info()
    entries = list(entries) + [
        (info + "/METADATA", _metadata().encode("utf-8"), 0o644),
        (info + "/WHEEL", _wheel_file().encode(), 0o644),
        (info + "/top_level.txt", (PACKAGE + "\n").encode(), 0o644),
    ]
    record = [_record_line(p, d) for p, d, _ in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    name = "%s-%s-%s.whl" % (DIST, VERSION, _tag())
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, mode in entries:
            zi = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = mode << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


# --------------------------------------------------------- PEP 517 hooks


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(info, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The package's Python files and the libraries built for this interpreter."""
    entries = []
    for path, full in _walk(PKG_DIR, HERE):
        if path.endswith(SOURCE_SUFFIXES):
            continue
        with open(full, "rb") as f:
            entries.append((path, f.read(), 0o644))
    with tempfile.TemporaryDirectory(prefix="homa-wheel-") as tmp:
        out = os.path.join(tmp, PACKAGE)
        scratch = os.path.join(tmp, "build")
        os.makedirs(scratch)
        build_core(out, scratch, quiet=True)
        build_torch(scratch, out)
        for path, full in _walk_built(out):
            with open(full, "rb") as f:
                entries.append((PACKAGE + "/" + path, f.read(), 0o755))
    return _write_wheel(wheel_directory, entries)


def _walk_built(out):
    got = []
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            got.append((os.path.relpath(full, out).replace(os.sep, "/"), full))
    return got


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The libraries built in place (python/homa_dpdk/), and a wheel whose
    one .pth file puts this source tree on sys.path."""
    build_inplace(quiet=True)
    return _write_wheel(wheel_directory, [(DIST + ".pth", (HERE + "\n").encode(), 0o644)])


def build_sdist(sdist_directory, config_settings=None):
    """The Python sources, the backend (and torch_ext.py if present), and a
    copy of native/ under native/."""
    base = "%s-%s" % (DIST, VERSION)
    name = base + ".tar.gz"
    nd = native_dir()
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
             ("README.md", os.path.join(HERE, "README.md")),
             ("_build/homa_build.py", os.path.abspath(__file__))]
    if os.path.exists(os.path.join(BUILD_DIR, "torch_ext.py")):
        files.append(("_build/torch_ext.py", os.path.join(BUILD_DIR, "torch_ext.py")))
    files += _walk(PKG_DIR, HERE)
    for sub in ("include", "src"):
        files += [("native/" + p, full) for p, full in _walk(os.path.join(nd, sub), nd)]
    for extra in ("libhoma.map", "Makefile"):
        if os.path.exists(os.path.join(nd, extra)):
            files.append(("native/" + extra, os.path.join(nd, extra)))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, full in files:
            t.add(full, arcname=base + "/" + path, recursive=False)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(pkg_info))
    return name


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="homa_build.py", description="Build homa_dpdk's libraries.")
    ap.add_argument("--inplace", action="store_true",
                    help="build libhoma.so.1 and _native into python/homa_dpdk/ for this interpreter")
    ap.add_argument("--force", action="store_true", help="build even when up to date")
    ap.add_argument("--quiet", action="store_true", help="print no compiler command lines")
    ap.add_argument("--no-torch", action="store_true", help="do not build the torch extension (_build/torch_ext.py)")
    args = ap.parse_args(argv)
    if not args.inplace:
        ap.error("nothing to do: pip builds wheels through PEP 517; --inplace builds the source tree")
    try:
        built = build_inplace(args.force, args.quiet, not args.no_torch)
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    if not args.quiet:
        print("homa_build: %s %s" % ("built in" if built else "up to date:", PKG_DIR), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
