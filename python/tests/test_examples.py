"""The examples run, against the Go fake engine of fakeengine.py (as
processes): python/examples/param_server.py is deterministic (two runs
against fresh servers print the same checksum line), and
python/examples/hello.py (docs' first Python example) gets its array
echoed."""

import os
import subprocess
import sys
import unittest

import fakeengine
import support
from fakeengine import need_go
from support import HAVE_NUMPY, need_x86_64
from test_integration import start_process, stop_process

EXAMPLE = os.path.join(support.ROOT, "examples", "param_server.py")
HELLO = os.path.join(support.ROOT, "examples", "hello.py")


@need_x86_64
@need_go
@unittest.skipUnless(HAVE_NUMPY, "numpy is not installed (the example needs it)")
class TestParamServer(unittest.TestCase):
    def run_once(self, path, port):
        srv = start_process([sys.executable, EXAMPLE, "--role", "server", "--socket", path, "--port", str(port),
                             "--dim", "4096"], "param_server: serving")
        try:
            r = subprocess.run([sys.executable, EXAMPLE, "--role", "worker", "--socket", path, "--server",
                                f"127.0.0.1:{port}", "--steps", "5", "--dim", "4096"],
                               capture_output=True, text=True, timeout=120)
        finally:
            stop_process(srv)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(sum(1 for x in lines if x.startswith("step ")), 5, r.stdout)
        self.assertTrue(lines[-1].startswith("checksum "), r.stdout)
        return lines[-1]

    def test_deterministic(self):
        path = support.socket_path("homa.sock")
        d = start_process(fakeengine.command(path), "ready")
        self.addCleanup(stop_process, d)
        first = self.run_once(path, 5000)
        second = self.run_once(path, 5001)
        self.assertEqual(first, second)
        self.assertIn("version 5 steps 5 dim 4096", first)


@need_x86_64
@need_go
@unittest.skipUnless(HAVE_NUMPY, "numpy is not installed (the example needs it)")
class TestHello(unittest.TestCase):
    def test_echoed(self):
        path = support.socket_path("homa.sock")
        d = start_process(fakeengine.command(path, "-echo", "99"), "ready")
        self.addCleanup(stop_process, d)
        r = subprocess.run([sys.executable, HELLO, "--socket", path, "--to", "127.0.0.1:99"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "127.0.0.1:99 answered [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]\n")


if __name__ == "__main__":
    unittest.main()
