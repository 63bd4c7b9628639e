"""The integration checks of test_integration.RoundTrips against two
stand-ins for the daemon, each in its own process:

* testdata/goengine: the Go shm package itself (shm.Listen's control socket,
  shm's rings, ParseSubmission, Completion.Encode, TakeWaiter and Wake), so
  every byte the Python side writes is checked by the Go code. Needs Go and
  this repository's module; built once per run (HOMA_SKIP_GO=1 skips).
* fakedaemon.py: the Python fake daemon as a process.

Against each: the engine's own echo (goengine: port 7) where there is one,
and tests/echo_server.py in another process (reply on its port, reply_async
on the next).
"""

import atexit
import os
import shutil
import subprocess
import tempfile
import unittest

import support
from support import need_x86_64
from test_integration import RoundTrips, echo_server, start_process, stop_process

REPO = os.path.dirname(support.ROOT)


def find_go():
    if os.environ.get("HOMA_SKIP_GO"):
        return None
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go and os.path.exists(os.path.join(REPO, "go.mod")):
        return go
    return None


GO = find_go()
_built = {}


def goengine_binary():
    if "bin" not in _built:
        d = tempfile.mkdtemp(prefix="homa-goengine-")
        atexit.register(shutil.rmtree, d, True)
        out = os.path.join(d, "goengine")
        r = subprocess.run([GO, "build", "-o", out, "./python/tests/testdata/goengine"], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
        _built["bin"] = out if r.returncode == 0 else None
        _built["err"] = r.stderr
    if _built["bin"] is None:
        raise RuntimeError("go build ./python/tests/testdata/goengine failed:\n" + _built["err"])
    return _built["bin"]


class _Daemon:
    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.path = support.socket_path("homa.sock")
        cls.procs.append(cls.start_daemon())
        if cls.echo_port:
            cls.procs.append(echo_server(cls.path, cls.echo_port))
        cls.peer = ("127.0.0.1", cls.echo_port or 7)
        cls.async_peer = ("127.0.0.1", cls.echo_port + 1) if cls.echo_port else None  # echo_server.py's reply_async

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            stop_process(p)


@need_x86_64
@unittest.skipUnless(GO, "Go or the repository's go.mod not found (or HOMA_SKIP_GO set)")
class _Go(_Daemon):
    @classmethod
    def start_daemon(cls):
        return start_process([goengine_binary(), "-socket", cls.path], "ready")


class TestGoEngineEcho(_Go, RoundTrips, unittest.TestCase):
    echo_port = 0  # the engine answers port 7 itself


class TestGoEnginePythonServer(_Go, RoundTrips, unittest.TestCase):
    echo_port = 99


@need_x86_64
class TestFakeDaemonProcess(_Daemon, RoundTrips, unittest.TestCase):
    echo_port = 99

    @classmethod
    def start_daemon(cls):
        return start_process([os.environ.get("PYTHON", support.sys.executable),
                              os.path.join(support.HERE, "fakedaemon.py"), "--socket", cls.path], "listening")
