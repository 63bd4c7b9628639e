"""The homa-dpdk package's build backend (PEP 517, PEP 660), in the tree.

Standard library only and no build requirements, so pip builds and
installs the package offline with build isolation on (its default) and
with any pip that reads pyproject.toml's backend-path (pip 22 and later):
nothing is fetched from an index. The package is pure Python: a wheel is
the package's files and its metadata, zipped as the wheel format says
(https://packaging.python.org/specifications/binary-distribution-format/).
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "homa-dpdk"
DIST = "homa_dpdk"  # the distribution's name in file names
VERSION = "0.1.0"
PACKAGE = "homa_dpdk"
TAG = "py3-none-any"

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/


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
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Intended Audience :: Science/Research",
        "Classifier: Topic :: System :: Networking",
        "Provides-Extra: numpy",
        "Requires-Dist: numpy; extra == \"numpy\"",
        "Description-Content-Type: text/markdown",
    ])
    return head + "\n\n" + readme


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: homa_build\nRoot-Is-Purelib: true\nTag: " + TAG + "\n"


def _dist_info():
    return "%s-%s.dist-info" % (DIST, VERSION)


def _package_files():
    """The package's files: (path in the wheel, path on disk), sorted."""
    out = []
    root = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(wheel_directory, entries):
    """Writes a wheel of entries [(path, bytes)] plus its dist-info."""
    info = _dist_info()
    entries = list(entries) + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", _wheel_file().encode()),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(p, d) for p, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = "%s-%s-%s.whl" % (DIST, VERSION, TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            zi = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
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
    entries = []
    for path, full in _package_files():
        with open(full, "rb") as f:
            entries.append((path, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose one .pth file puts this source tree on sys.path."""
    return _write_wheel(wheel_directory, [(DIST + ".pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (DIST, VERSION)
    name = base + ".tar.gz"
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
             ("README.md", os.path.join(HERE, "README.md")),
             ("_build/homa_build.py", os.path.abspath(__file__))] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, full in files:
            t.add(full, arcname=base + "/" + path, recursive=False)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
