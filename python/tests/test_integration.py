"""Round trips through a real daemon: run only when HOMA_SOCKET (a daemon's
control socket) and HOMA_PEER (ip:port of an echo server reachable through
that daemon, e.g. tests/echo_server.py) are set.

    HOMA_SOCKET=/run/homa-dpdk/workers.sock HOMA_PEER=10.0.0.2:99 \\
        python3 -m unittest discover -s python/tests -p test_integration.py -v

HOMA_PEER6 (e.g. fd00::2:99): the echo server's IPv6 address, for the
round trips over IPv6 (TestDaemonIPv6).

HOMA_UNBOUND_PORT (default 32766): a port nobody binds at the peer's
address; HOMA_RPC_TIMEOUT (default 30): seconds a call may take, above the
daemon's RPC timeout so that the error tests see the daemon's error;
HOMA_ASYNC_PEER (default: HOMA_PEER's port + 1, where echo_server.py answers
with reply_async; empty: skip that test): an echo server that answers with
reply_async.

The checks are in RoundTrips, which test_go_interop.py runs against the Go
shm package and the fake daemon too.
"""

import os
import subprocess
import sys
import time
import unittest

import support
from support import HAVE_NUMPY, need_x86_64

import homa_dpdk

if HAVE_NUMPY:
    import numpy as np


def parse_peer(s):
    ip, _, port = s.rpartition(":")
    return ip, int(port)


class RoundTrips:
    """Checks against an echo server at self.peer through the daemon at
    self.path (set by the subclass)."""

    rpc_timeout = float(os.environ.get("HOMA_RPC_TIMEOUT", "30"))
    async_peer = None  # an echo server answering with reply_async, if any

    def setUp(self):
        self.c = homa_dpdk.Client(self.path)
        self.addCleanup(self.c.close)

    def roundtrip(self, buf):
        want = memoryview(buf).tobytes()
        with self.c.call(self.peer, buf, timeout=self.rpc_timeout) as m:
            self.assertEqual(len(m), len(want))
            self.assertTrue(m.data == want, f"{len(want)} bytes came back different")

    def test_sizes(self):
        for n in (1, 100, 70000, 1_000_000):
            with self.subTest(size=n):
                self.roundtrip(os.urandom(n))

    @unittest.skipUnless(HAVE_NUMPY, "numpy is not installed")
    def test_numpy(self):
        a = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
        with self.c.call(self.peer, a, timeout=self.rpc_timeout) as m:
            b = np.frombuffer(m.data, dtype=np.float32).reshape(256, 256)
            self.assertTrue(np.array_equal(a, b))
            del b

    def test_memoryview_and_bytearray(self):
        raw = bytearray(os.urandom(50_000))
        self.roundtrip(memoryview(raw)[1000:40_000])
        self.roundtrip(raw)

    def test_pipelined(self):
        ids = [self.c.send(self.peer, bytes([i]) * (1000 * i + 1)) for i in range(16)]
        for i, rid in enumerate(ids):
            with self.c.wait(rid, timeout=self.rpc_timeout) as m:
                self.assertEqual(m.tobytes(), bytes([i]) * (1000 * i + 1))

    def test_reply_async_burst(self):
        # A burst of requests to a server that answers with reply_async
        # (echo_server.py's second port) comes back byte-exact. A request
        # whose client aborted first does not stop that server: a refused
        # reply_async comes back through its receive(). (The refusal itself
        # is checked in test_client.py: a daemon keeps a server RPC after its
        # client aborts, as Homa does, and accepts the late reply.)
        if self.async_peer is None:
            self.skipTest("no echo server answering with reply_async here")
        self.c.abort(self.c.send(self.async_peer, b"never mind"))
        bodies = [bytes([i]) * (2500 * i + 1) for i in range(24)]  # 1 B to 56 KB: a pool page each
        ids = [self.c.send(self.async_peer, b) for b in bodies]
        for i, rid in enumerate(ids):
            with self.c.wait(rid, timeout=self.rpc_timeout) as m:
                self.assertEqual(len(m), len(bodies[i]))
                self.assertTrue(m.data == bodies[i], f"response {i} ({len(bodies[i])} bytes) came back different")
        s = self.c.stats()
        self.assertIn(s["responses"], (len(ids), len(ids) + 1))  # +1: the aborted one's, if it came first
        self.assertEqual((s["bad_completions"], s["unexpected_completions"]), (0, 0), self.c.last_bad)

    def test_unbound_port(self):
        port = int(os.environ.get("HOMA_UNBOUND_PORT", "32766"))
        if port == self.peer[1]:
            port -= 1
        with self.assertRaises(homa_dpdk.RPCError) as cm:
            self.c.call((self.peer[0], port), b"anyone?", timeout=self.rpc_timeout)
        self.assertNotEqual(cm.exception.code, homa_dpdk.ErrCode.NONE)

    def test_stats_clean(self):
        self.roundtrip(b"x" * 10)
        s = self.c.stats()
        self.assertEqual((s["bad_completions"], s["unexpected_completions"], s["sq_corrupt"], s["cq_corrupt"]),
                         (0, 0, 0, 0), self.c.last_bad)
        self.assertEqual((s["arena_used"], s["pool_pages_held"]), (0, 0))


@need_x86_64
@unittest.skipUnless(os.environ.get("HOMA_SOCKET") and os.environ.get("HOMA_PEER"),
                     "set HOMA_SOCKET (a daemon's control socket) and HOMA_PEER (ip:port of an echo server "
                     "reachable through it) to run the integration tests")
class TestDaemon(RoundTrips, unittest.TestCase):
    path = os.environ.get("HOMA_SOCKET", "")
    peer = parse_peer(os.environ.get("HOMA_PEER", "0.0.0.0:0"))
    async_peer = os.environ.get("HOMA_ASYNC_PEER", f"{peer[0]}:{peer[1] + 1}")
    async_peer = parse_peer(async_peer) if async_peer else None


@need_x86_64
@unittest.skipUnless(os.environ.get("HOMA_SOCKET") and os.environ.get("HOMA_PEER6"),
                     "set HOMA_SOCKET and HOMA_PEER6 (ipv6:port of the echo server, e.g. fd00::2:99) to run "
                     "the round trips over IPv6")
class TestDaemonIPv6(unittest.TestCase):
    """Round trips to the echo server's IPv6 address: the entries carry
    the 16-byte address, the daemon speaks Homa over IPv6."""

    def test_sizes(self):
        peer = parse_peer(os.environ["HOMA_PEER6"])
        with homa_dpdk.Client(os.environ["HOMA_SOCKET"]) as c:
            for n in (1, 70000, 1_000_000):
                want = os.urandom(n)
                with self.subTest(size=n), c.call(peer, want, timeout=30) as m:
                    self.assertTrue(m.data == want, f"{n} bytes came back different")
                    self.assertEqual(m.peer, peer)


def start_process(args, ready, timeout=60):
    """Start args; wait until a line of its stdout contains ready."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    line = ""
    while ready not in line:
        line = p.stdout.readline()
        if not line and p.poll() is not None:
            raise RuntimeError(f"{args[0]} exited: {p.stderr.read()}")
        if time.monotonic() > deadline:
            p.kill()
            raise RuntimeError(f"{args} not ready in {timeout} s")
    return p


def stop_process(p):
    p.terminate()
    try:
        p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def echo_server(path, port):
    return start_process([sys.executable, os.path.join(support.HERE, "echo_server.py"), "--socket", path,
                          "--port", str(port)], "echo_server: bound")
