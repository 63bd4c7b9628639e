"""Shared by the tests: puts the source tree's homa_dpdk first on sys.path
(the tests check this tree, installed or not), builds its libraries in
place first when they are missing or older than their sources
(_build/homa_build.py --inplace, for the interpreter running the tests),
and small helpers. With HOMA_TEST_INSTALLED=1 they check the installed
package instead (tests/install.sh), and fail if homa_dpdk would come from
this tree."""

import atexit
import mmap
import os
import shutil
import platform
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # python/
INSTALLED = os.environ.get("HOMA_TEST_INSTALLED") == "1"
if INSTALLED:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != ROOT]
elif sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)
if HERE not in sys.path:
    sys.path.insert(1, HERE)


def build_inplace():
    """Builds this tree's homa_dpdk libraries for this interpreter if they
    are stale (the tree's own build backend, under its lock); not the
    torch extension, which these tests do not use."""
    sys.path.insert(0, os.path.join(ROOT, "_build"))
    try:
        import homa_build
    finally:
        sys.path.pop(0)
    homa_build.build_inplace(quiet=True, torch=False)


if not INSTALLED:
    build_inplace()
if INSTALLED:
    import homa_dpdk as _installed

    if os.path.dirname(os.path.dirname(os.path.abspath(_installed.__file__))) == ROOT:
        raise ImportError("HOMA_TEST_INSTALLED=1 but homa_dpdk comes from the source tree " + ROOT)

X86_64 = platform.machine().lower() in ("x86_64", "amd64") and platform.python_implementation() == "CPython"
need_x86_64 = unittest.skipUnless(X86_64, "libhoma's rings and this binding run only on CPython on x86-64")

try:
    import numpy  # noqa: F401

    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False


def anon(n):
    """An anonymous shared mapping of n bytes (page-aligned, like a region)."""
    return mmap.mmap(-1, n, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def socket_path(name):
    """A fresh socket path in a private temporary directory."""
    d = tempfile.mkdtemp(prefix="homa-py-")
    atexit.register(shutil.rmtree, d, True)
    return os.path.join(d, name)
