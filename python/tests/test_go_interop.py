"""The integration checks of test_integration.RoundTrips against the fake
engine of the Go shm package (shm/shmtest, fakeengine.py) in its own
process: shm.Listen's control socket, shm's rings, ParseSubmission,
Completion.Encode, TakeWaiter and Wake, so every byte the Python side
writes is checked by the Go code. Needs Go and this repository's module;
built once per run (HOMA_SKIP_GO=1 skips).

Against it: the engine's own echo (port 7), and tests/echo_server.py in
another process (reply on its port, reply_async on the next), with the
engine's defaults and with the other release mode and rings that wrap
past 2^64.
"""

import unittest

import fakeengine
import support
from fakeengine import need_go
from support import need_x86_64
from test_integration import RoundTrips, echo_server, start_process, stop_process


@need_x86_64
@need_go
class _Go:
    flags = ()

    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.path = support.socket_path("homa.sock")
        cls.procs.append(start_process(fakeengine.command(cls.path, "-echo", "7", *cls.flags), "ready"))
        if cls.echo_port:
            cls.procs.append(echo_server(cls.path, cls.echo_port))
        cls.peer = ("127.0.0.1", cls.echo_port or 7)
        cls.async_peer = ("127.0.0.1", cls.echo_port + 1) if cls.echo_port else None  # echo_server.py's reply_async

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            stop_process(p)


class TestGoEngineEcho(_Go, RoundTrips, unittest.TestCase):
    echo_port = 0  # the engine answers port 7 itself


class TestGoEnginePythonServer(_Go, RoundTrips, unittest.TestCase):
    echo_port = 99


class TestGoEngineFlagWrap(_Go, RoundTrips, unittest.TestCase):
    echo_port = 99
    flags = ("-release", "flag", "-ring-start", str((1 << 64) - 2000))


if __name__ == "__main__":
    unittest.main()
