"""Client against the fake engine of shm/shmtest (fakeengine.py: the Go shm
package's control socket, rings and entries, a loopback host, in a
process): round trips, buffer kinds, memory ownership, errors, reply_async,
waiting, bad completions."""

import array
import gc
import os
import signal
import struct
import threading
import time
import unittest

import support
from support import HAVE_NUMPY, need_x86_64

import homa_dpdk
from homa_dpdk import ErrCode, HomaError, RPCError, WaitTimeout
from homa_dpdk import PAGE_SIZE, CompOp

from fakeengine import FakeEngine, need_go

if HAVE_NUMPY:
    import numpy as np

IP = "127.0.0.1"
PORT = 99

_ENTRY = struct.Struct("<BBHIQQ4sHHQII16s")  # shm/entry.go's 64 bytes


def completion(op=0, flags=0, port=0, length=0, cookie=0, rpc_id=0, peer_ip=b"\0\0\0\0", peer_port=0, err=0,
               offset=0, page=0, pages=0, peer_ip6=bytes(16)):
    """The bytes of a completion entry, for the fake engine to inject."""
    return _ENTRY.pack(op, flags, port, length, cookie, rpc_id, peer_ip, peer_port, err, offset, page, pages,
                       peer_ip6)


class Echo:
    """A server Client in a thread that answers every request with its bytes."""

    def __init__(self, path, port=PORT, **kw):
        self.c = homa_dpdk.Client(path, **kw)
        self.c.bind(port)
        self.served = 0
        self.error = None
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        try:
            while True:
                msg = self.c.receive()
                with msg:
                    self.c.reply(msg, msg.data)
                self.served += 1
        except HomaError as e:
            if not self.c.closed and not self.c._closing:
                self.error = e

    def close(self):
        self.c.close()
        self.t.join(5)


@need_x86_64
@need_go
class ClientTest(unittest.TestCase):
    daemon_kw = {}

    def setUp(self):
        self.path = support.socket_path("homa.sock")
        self.d = FakeEngine(self.path, **self.daemon_kw).start()
        self.addCleanup(self.d.stop)

    def client(self, **kw):
        c = homa_dpdk.Client(self.path, **kw)
        self.addCleanup(c.close)
        return c

    def echo(self, **kw):
        e = Echo(self.path, **kw)
        self.addCleanup(e.close)
        return e

    def session_of(self, i):
        return self.d.session(i)


MIB64 = 64 << 20


class TestLongMessages(ClientTest):
    """Regions the daemon sized for 64 MiB messages (64 MiB of arena,
    1024 pool pages, MaxMessage 64 MiB in the header)."""

    daemon_kw = dict(arena_size=MIB64, pool_pages=1024, region_max_message=MIB64)

    def test_64mib_round_trip(self):
        self.echo()
        c = self.client()
        self.assertEqual((c.max_message, c.layout.max_message), (MIB64, MIB64))
        data = os.urandom(MIB64)
        with c.call((IP, PORT), data, timeout=60) as m:
            self.assertEqual(len(m), MIB64)
            self.assertTrue(m.data == data)
        self.assertEqual(self.session_of(1).layout.max_message, MIB64)
        with self.assertRaises(ValueError):  # refused before anything is submitted
            c.send((IP, PORT), bytes(MIB64 + 1))
        s = c.stats()
        self.assertEqual((s["arena_used"], s["pool_pages_held"], s["bad_completions"]), (0, 0, 0))

    def test_smaller_limit_of_the_caller(self):
        c = self.client(max_message=1000)
        self.assertEqual(c.max_message, 1000)
        with self.assertRaises(ValueError):
            c.send((IP, PORT), bytes(1001))


class TestRoundTrips(ClientTest):
    def test_sizes(self):
        self.echo()
        c = self.client()
        for n in (1, 100, 70000, 1_000_000):
            data = os.urandom(n)
            with c.call((IP, PORT), data, timeout=10) as m:
                self.assertEqual(len(m), n)
                self.assertEqual(m.data, data)
                self.assertFalse(m.is_request)
                self.assertEqual(m.peer, (IP, PORT))
                self.assertTrue(m.data.readonly)
        s = c.stats()
        self.assertEqual((s["sends"], s["responses"], s["bad_completions"], s["unexpected_completions"]),
                         (4, 4, 0, 0))
        self.assertEqual((s["arena_used"], s["pool_pages_held"], s["rpcs_outstanding"]), (0, 0, 0))

    def test_layout_from_header(self):
        c = self.client()
        self.assertEqual(c.layout, self.session_of(-1).layout)

    def test_buffer_kinds(self):
        self.echo()
        c = self.client()
        raw = bytes(range(256)) * 40
        kinds = [bytearray(raw), memoryview(raw), memoryview(bytearray(raw))[10:5000],
                 array.array("d", [1.5, -2.25, 1e300]), memoryview(raw)[::3]]  # the last is strided
        for buf in kinds:
            with self.subTest(kind=type(buf).__name__):
                want = memoryview(buf).tobytes()
                with c.call((IP, PORT), buf, timeout=5) as m:
                    self.assertEqual(m.data.tobytes(), want)
        ba = bytearray(b"abc")
        c.call((IP, PORT), ba, timeout=5).release()
        ba.extend(b"def")  # the client released its view of ba

    @unittest.skipUnless(HAVE_NUMPY, "numpy not installed")
    def test_numpy(self):
        self.echo()
        c = self.client()
        a = np.arange(256 * 256, dtype=np.float32).reshape(256, 256) / 7
        s = self.session_of(-1)
        with c.call((IP, PORT), a, timeout=5) as m:
            b = np.frombuffer(m.data, dtype=np.float32).reshape(256, 256)
            self.assertTrue(np.array_equal(a, b))
        self.assertTrue(m.released)
        self.assertEqual(c.stats()["pool_pages_held"], 4)  # b still views the pool pages
        time.sleep(0.02)
        self.assertEqual(s.pages_held, 4)
        self.assertTrue(np.array_equal(a, b))  # and they are still the message
        del b
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0)  # any call returns what is queued
        self.assertEqual(c.stats()["pool_pages_held"], 0)
        # non-contiguous arrays are copied once
        t = a[:, ::2]
        with c.call((IP, PORT), t, timeout=5) as m:
            self.assertTrue(np.array_equal(np.frombuffer(m.data, np.float32).reshape(256, 128), t))

    def test_tensor_like(self):
        class Tensor:  # what a CPU torch tensor offers: no buffer protocol, .detach().numpy()
            def __init__(self, b):
                self.b = b

            def detach(self):
                return self

            def numpy(self):
                return self.b

        self.echo()
        c = self.client()
        with c.call((IP, PORT), Tensor(bytearray(b"tensor")), timeout=5) as m:
            self.assertEqual(m.tobytes(), b"tensor")
        with self.assertRaises(TypeError):
            c.send((IP, PORT), 12)

    def test_wait_and_receive(self):
        self.echo()
        c = self.client()
        ids = [c.send((IP, PORT), bytes([i]) * (i + 1)) for i in range(4)]
        self.assertEqual(len(set(ids)), 4)
        self.assertTrue(all(i % 2 == 0 and i > 0 for i in ids))
        with c.wait(ids[2], timeout=5) as m:
            self.assertEqual((m.id, m.tobytes()), (ids[2], b"\2\2\2"))
        got = []
        for _ in range(3):
            with c.receive(timeout=5) as m:
                got.append((m.id, m.tobytes()))
        self.assertEqual(sorted(got), [(ids[i], bytes([i]) * (i + 1)) for i in (0, 1, 3)])
        with self.assertRaises(RPCError) as cm:
            c.wait(ids[2])  # already claimed
        self.assertEqual(cm.exception.code, ErrCode.NO_RPC)
        t0 = time.monotonic()
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0.05)
        self.assertLess(time.monotonic() - t0, 2)
        with self.assertRaises(TimeoutError):  # WaitTimeout is a TimeoutError
            c.receive(timeout=0)

    def test_requests_and_reply(self):
        srv = self.client()
        srv.bind(1234)
        c = self.client()
        rid = c.send((IP, 1234), b"question")
        req = srv.receive(timeout=5)
        self.assertTrue(req.is_request)
        self.assertEqual((req.port, req.tobytes()), (1234, b"question"))
        self.assertEqual(req.id % 2, 1)
        self.assertEqual(req.peer[0], IP)
        req.release()
        srv.reply(req, b"answer")  # after release: id and peer stay
        with self.assertRaises(HomaError):
            srv.reply(req, b"again")
        with c.wait(rid, timeout=5) as m:
            self.assertEqual(m.tobytes(), b"answer")
        with self.assertRaises(ValueError):
            c.reply(m, b"x")  # a response is no request
        self.assertEqual(srv.stats()["replies"], 1)

    def test_sleep_path(self):
        self.echo()
        c = self.client(spin_us=0)
        for _ in range(20):
            c.call((IP, PORT), b"zz", timeout=5).release()
        s = c.stats()
        self.assertGreater(s["sleeps"], 0)
        self.assertGreater(s["wakeups"], 0)
        self.assertGreater(self.session_of(-1).wakeups, 0)

    def test_many_pipelined(self):
        self.echo()
        c = self.client()
        ids = [c.send((IP, PORT), struct.pack("<I", i) * 100) for i in range(120)]  # a page each, of 128
        for i, rid in enumerate(ids):
            with c.wait(rid, timeout=10) as m:
                self.assertEqual(m.tobytes(), struct.pack("<I", i) * 100)
        self.assertEqual(c.stats()["pool_pages_held"], 0)


class TestReplyAsync(ClientTest):
    daemon_kw = dict(abort_ends_server=True)  # a reply after its client's abort is refused

    def test_burst_and_refusal(self):
        # reply_async answers a burst of requests without waiting for the
        # daemon (it runs while the engine is paused); the responses arrive
        # byte-exact, the acceptances are counted, and a reply the daemon
        # refuses (its client aborted) comes back through receive() as an
        # RPCError with the request's id and peer.
        srv = self.client()
        srv.bind(11)
        c = self.client()
        n = 40
        bodies = [struct.pack("<I", i) * (25 + 250 * i) for i in range(n)]  # 100 B to 39 KB
        ids = [c.send((IP, 11), b) for b in bodies]
        self.assertTrue(c.abort(ids[-1]))  # the last request's client gives up before the reply
        reqs = [srv.receive(timeout=5) for _ in range(n)]
        self.assertEqual(sorted(r.tobytes() for r in reqs), sorted(bodies))
        gone = next(r for r in reqs if r.tobytes() == bodies[-1])
        self.d.pause()  # the daemon answers nothing: a reply that waited would time out
        for req in reqs:
            srv.reply_async(req, req.data[:len(req) // 3 + 1])
            req.release()
        self.assertEqual(srv.stats()["submissions_pending"], n)
        with self.assertRaises(HomaError):
            srv.reply_async(reqs[0], b"again")  # answered already
        self.d.resume()
        for i, rid in enumerate(ids[:-1]):
            with c.wait(rid, timeout=5) as m:
                self.assertEqual(m.tobytes(), bodies[i][:len(bodies[i]) // 3 + 1], f"RPC {i}")
                with self.assertRaises(ValueError):
                    srv.reply_async(m, b"x")  # a response is no request
        with self.assertRaises(RPCError) as cm:
            srv.receive(timeout=5)
        e = cm.exception
        self.assertEqual((e.rpc_id, e.peer, e.code), (gone.id, gone.peer, ErrCode.NO_RPC))
        self.assertEqual(e.rpc_id % 2, 1)
        with self.assertRaises(WaitTimeout):
            srv.receive(timeout=0.05)  # delivered once
        s = srv.stats()
        self.assertEqual((s["replies"], s["reply_refused"], s["rpc_errors"]), (n - 1, 1, 1))
        self.assertEqual((s["submissions_pending"], s["ready"], s["arena_used"], s["pool_pages_held"]),
                         (0, 0, 0, 0))
        self.assertEqual((s["bad_completions"], s["unexpected_completions"]), (0, 0), srv.last_bad)
        s = c.stats()
        self.assertEqual((s["responses"], s["rpc_errors"], s["reply_refused"]), (n - 1, 1, 0))  # 1: the abort

    def test_refusal_among_results(self):
        # A refused reply_async and a failed client RPC of the same Client
        # each come back with their own id and peer; wait() for the RPC
        # reads the refusal too and leaves it queued for receive().
        srv = self.client()
        srv.bind(11)
        c = self.client()
        rid = c.send((IP, 11), b"late")
        req = srv.receive(timeout=5)
        c.abort(rid)
        with self.assertRaises(ValueError):
            srv.reply_async(req, b"")  # a local error: the request stays to answer
        srv.reply_async(req, b"too late")
        bad = srv.send((IP, 4321), b"x")  # nobody bound 4321
        with self.assertRaises(RPCError) as cm:
            srv.wait(bad, timeout=5)  # reads the refusal too, and leaves it queued
        self.assertEqual((cm.exception.rpc_id, cm.exception.peer), (bad, (IP, 4321)))
        self.assertEqual(srv.stats()["ready"], 1)
        with self.assertRaises(RPCError) as cm:
            srv.receive(timeout=5)
        self.assertEqual((cm.exception.rpc_id, cm.exception.peer, cm.exception.code),
                         (req.id, req.peer, ErrCode.NO_RPC))
        self.assertIn("reply_async", str(cm.exception))
        s = srv.stats()
        self.assertEqual((s["replies"], s["reply_refused"], s["rpc_errors"], s["ready"]), (0, 1, 2, 0))


class TestSendAsync(ClientTest):
    def test_gathered_parts_and_outcomes_through_receive(self):
        # send_async returns before the daemon's answer; the parts arrive
        # as one message, in order; responses and failures come back
        # through receive(), none lost.
        srv = self.client()
        srv.bind(12)
        c = self.client()
        hdr, body = b"head:", bytearray(b"body" * 1000)
        c.send_async((IP, 12), hdr, memoryview(body)[:8], b"", body)
        body[:4] = b"XXXX"  # copied before send_async returned
        with srv.receive(timeout=5) as req:
            self.assertEqual(req.tobytes(), b"head:bodybody" + b"body" * 1000)
            srv.reply(req, b"ok")
        with c.receive(timeout=5) as m:
            self.assertFalse(m.is_request)
            self.assertEqual(m.tobytes(), b"ok")
        c.send_async((IP, 4321), b"x")  # nobody bound 4321
        with self.assertRaises(RPCError) as cm:
            c.receive(timeout=5)
        self.assertEqual((cm.exception.code, cm.exception.peer), (ErrCode.PORT_UNREACHABLE, (IP, 4321)))
        self.assertGreater(cm.exception.rpc_id, 0)
        with self.assertRaises(ValueError):
            c.send_async((IP, 12), b"", b"")  # empty: a local error
        s = c.stats()
        self.assertEqual((s["sends"], s["responses"], s["rpc_errors"], s["send_refused"]), (2, 1, 1, 0))
        self.assertEqual((s["bad_completions"], s["unexpected_completions"], s["submissions_pending"]), (0, 0, 0))
        self.assertEqual(s["arena_used"], 0)


class TestSendAsyncRefused(ClientTest):
    daemon_kw = dict(max_message=1000, region_max_message=4096)  # the engine takes less than the region says

    def test_refused_send_comes_back(self):
        # The daemon refusing a send_async (here: longer than its engine
        # takes) is raised from receive() (BadEntry BAD_LENGTH) with rpc_id
        # 0 and the peer, counted in send_refused; its arena range is freed.
        c = self.client()
        c.send_async((IP, 12), bytes(2000))
        with self.assertRaises(homa_dpdk.BadEntry) as cm:
            c.receive(timeout=5)
        self.assertEqual((cm.exception.code, cm.exception.rpc_id, cm.exception.peer), (ErrCode.BAD_LENGTH, 0, (IP, 12)))
        self.assertIn("send_async", str(cm.exception))
        s = c.stats()
        self.assertEqual((s["send_refused"], s["rpc_errors"], s["arena_used"], s["submissions_pending"]), (1, 1, 0, 0))


class TestWake(ClientTest):
    def test_wake_ends_a_wait_of_another_thread(self):
        c = self.client(spin_us=0)
        out = []

        def waiter():
            t0 = time.monotonic()
            try:
                c.receive(timeout=30)
            except WaitTimeout:
                out.append(time.monotonic() - t0)

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.1)
        c.wake()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(out), 1)
        self.assertLess(out[0], 5)
        c.wake()  # no wait in progress: the next one returns, once
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=30)
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0.05)


class TestWrap(ClientTest):
    daemon_kw = dict(ring_start=(1 << 64) - 300, sq_entries=16, cq_entries=16)

    def test_across_2_64(self):
        self.echo()
        c = self.client()
        for i in range(250):  # about 4 completions and 2 submissions per call
            with c.call((IP, PORT), struct.pack("<Q", i), timeout=5) as m:
                self.assertEqual(m.tobytes(), struct.pack("<Q", i))
        s = c.stats()
        self.assertEqual((s["sq_corrupt"], s["cq_corrupt"], s["bad_completions"]), (0, 0, 0))
        mm = c._region()  # the client's own mapping of the region
        lay = c.layout
        self.assertLess(struct.unpack_from("<Q", mm, lay.cq_offset)[0], 1 << 20)  # the CQ tail wrapped


class TestReleaseFlag(ClientTest):
    daemon_kw = dict(release_mode="flag")

    def test_flag(self):
        self.echo()
        c = self.client()
        for n in (10, 100000):
            c.call((IP, PORT), b"f" * n, timeout=5).release()
        self.assertEqual(c.stats()["arena_used"], 0)


class TestArenaPressure(ClientTest):
    daemon_kw = dict(arena_size=256 << 10)

    def test_reuse(self):
        self.echo()
        c = self.client()
        ids = [c.send((IP, PORT), bytes([i]) * 100_000) for i in range(20)]  # 2 MB through 256 KB
        for i, rid in enumerate(ids):
            with c.wait(rid, timeout=10) as m:
                self.assertEqual(m.tobytes(), bytes([i]) * 100_000)
        s = c.stats()
        self.assertEqual(s["arena_used"], 0)
        with self.assertRaises(ValueError):
            c.send((IP, PORT), bytes((256 << 10) + 1))  # never fits

    def test_full(self):
        c = self.client(op_timeout=0.2)
        self.d.pause()  # the engine reads nothing
        with self.assertRaises(WaitTimeout):  # no Accepted
            c.send((IP, PORT), bytes(200_000))
        with self.assertRaises(homa_dpdk.ArenaFull):
            c.send((IP, PORT), bytes(100_000))
        self.assertEqual(c.stats()["arena_waits"], 1)
        self.d.resume()
        srv = self.echo()
        deadline = time.monotonic() + 5
        while c.stats()["arena_used"] and time.monotonic() < deadline:  # the late Released frees it
            try:
                c.receive(timeout=0.05).release()
            except (WaitTimeout, RPCError):
                pass
        self.assertEqual(c.stats()["arena_used"], 0)
        c.call((IP, PORT), bytes(100_000), timeout=5).release()


class TestErrors(ClientTest):
    def test_port_unreachable(self):
        c = self.client()
        with self.assertRaises(RPCError) as cm:
            c.call((IP, 4321), b"x", timeout=5)
        self.assertEqual(cm.exception.code, ErrCode.PORT_UNREACHABLE)
        self.assertGreater(cm.exception.rpc_id, 0)
        with self.assertRaises(RPCError) as cm:
            c.call(("192.0.2.1", 4321), b"x", timeout=5)  # not the fake host's address
        self.assertEqual(cm.exception.code, ErrCode.UNREACHABLE)
        self.assertEqual(c.stats()["rpc_errors"], 2)

    def test_error_through_receive(self):
        c = self.client()
        rid = c.send((IP, 4321), b"x")
        with self.assertRaises(RPCError) as cm:
            c.receive(timeout=5)
        self.assertEqual((cm.exception.rpc_id, cm.exception.code), (rid, ErrCode.PORT_UNREACHABLE))

    def test_bind(self):
        c = self.client()
        c.bind(5)
        with self.assertRaises(RPCError) as cm:
            self.client().bind(5)
        self.assertEqual(cm.exception.code, ErrCode.PORT_IN_USE)
        for bad in (0, 0x8000, -1, "5"):
            with self.assertRaises(ValueError):
                c.bind(bad)

    def test_bad_arguments(self):
        c = self.client()
        for addr in [("10.0.0.2", 0), ("10.0.0.2", 0x8000), ("0.0.0.0", 5), ("::", 5), ("fe80::1%eth0", 5), ("host", 5),
                     "10.0.0.2"]:
            with self.subTest(addr=addr), self.assertRaises(ValueError):
                c.send(addr, b"x")
        with self.assertRaises(ValueError):
            c.send((IP, PORT), b"")
        with self.assertRaises(ValueError):
            c.abort(3)
        self.assertFalse(c.abort(1000))

    def test_bad_entry(self):
        d2 = FakeEngine(support.socket_path("small.sock"), max_message=1000).start()
        self.addCleanup(d2.stop)
        c = homa_dpdk.Client(d2.path)
        self.addCleanup(c.close)
        with self.assertRaises(homa_dpdk.BadEntry) as cm:
            c.send((IP, PORT), bytes(2000))
        self.assertEqual(cm.exception.code, ErrCode.BAD_LENGTH)
        self.assertEqual(c.stats()["arena_used"], 0)  # freed by the Released flag of the Error

    def test_abort(self):
        srv = self.client()
        srv.bind(7)  # never answers
        c = self.client()
        rid = c.send((IP, 7), b"hang")
        self.assertTrue(c.abort(rid))
        with self.assertRaises(RPCError) as cm:
            c.wait(rid, timeout=1)
        self.assertIn(cm.exception.code, (ErrCode.ABORTED, ErrCode.NO_RPC))
        self.assertFalse(c.abort(rid))
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0.05)  # the aborted RPC's end is not delivered
        self.assertEqual(c.stats()["rpcs_outstanding"], 0)
        srv.receive(timeout=5).release()

    def test_abort_all(self):
        srv = self.client()
        srv.bind(7)
        c = self.client()
        for _ in range(3):
            c.send((IP, 7), b"hang")
        c.abort_all()
        s = c.stats()
        self.assertEqual((s["rpcs_outstanding"], s["unexpected_completions"]), (0, 0))
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0.05)

    def test_call_timeout_aborts(self):
        srv = self.client()
        srv.bind(7)
        c = self.client()
        with self.assertRaises(WaitTimeout):
            c.call((IP, 7), b"hang", timeout=0.05)
        self.assertEqual(c.stats()["aborts"], 1)
        self.assertEqual(c.stats()["rpcs_outstanding"], 0)

    def test_attach_errors(self):
        with self.assertRaises(homa_dpdk.AttachError) as cm:
            homa_dpdk.Client(support.socket_path("nobody.sock"))
        self.assertIsInstance(cm.exception, OSError)
        self.d.refuse(True)
        with self.assertRaises(homa_dpdk.RefusedError):
            homa_dpdk.Client(self.path)


class TestMemory(ClientTest):
    def test_message_lifetime(self):
        self.echo()
        c = self.client()
        m = c.call((IP, PORT), b"hello", timeout=5)
        self.assertEqual(c.stats()["pool_pages_held"], 1)
        s = self.session_of(-1)
        self.assertEqual(s.pages_held, 1)
        m.release()
        m.release()  # twice is fine
        with self.assertRaises(ValueError):
            m.data
        c.call((IP, PORT), b"x", timeout=5).release()  # m's page rode on its send; its own waits to ride
        self.assertEqual(c.stats()["pool_pages_held"], 0)  # stats() gives back what waits (homa_poll)
        time.sleep(0.05)
        self.assertEqual(s.pages_held, 0)

    def test_dropped_message_returned(self):
        self.echo()
        c = self.client()
        m = c.call((IP, PORT), b"forgotten", timeout=5)
        view = m.data[2:5]
        del m
        gc.collect()
        self.assertEqual(view, b"rgo")  # a slice keeps the pages
        self.assertEqual(c.stats()["messages_alive"], 1)
        del view
        c.call((IP, PORT), b"x", timeout=5).release()
        s = c.stats()
        self.assertEqual((s["messages_alive"], s["pool_pages_held"]), (0, 0))

    def test_release_from_another_thread(self):
        srv = self.client()
        srv.bind(13)
        c = self.client()
        c.send((IP, 13), b"r")
        req = srv.receive(timeout=5)
        held = []

        def wait():  # holds srv's lock while it waits
            try:
                srv.receive(timeout=3)
            except WaitTimeout:
                held.append(srv.stats()["pool_pages_held"])

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        req.release()  # does not block on the waiting thread; wakes it to return the page
        self.assertLess(time.monotonic() - t0, 0.5)
        t.join(5)
        self.assertEqual(held, [0])

    def test_close_keeps_held_messages(self):
        self.echo()
        c = homa_dpdk.Client(self.path)
        m = c.call((IP, PORT), b"keep me", timeout=5)
        c.close()
        self.assertEqual(m.tobytes(), b"keep me")  # still mapped
        m.release()
        c.close()
        with self.assertRaises(HomaError):
            c.send((IP, PORT), b"x")

    def test_context_manager(self):
        with homa_dpdk.Client(self.path) as c:
            self.assertFalse(c.closed)
        self.assertTrue(c.closed)

    def test_close_interrupts_wait(self):
        c = homa_dpdk.Client(self.path)
        c.bind(11)
        out = []

        def recv():
            try:
                c.receive()
            except HomaError as e:
                out.append(e)

        t = threading.Thread(target=recv)
        t.start()
        time.sleep(0.1)
        c.close()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(out), 1)

    def test_daemon_gone(self):
        c = self.client(max_sleep=0.05)
        c.bind(12)
        self.d.kill(self.session_of(-1))
        with self.assertRaises(HomaError) as cm:
            c.receive(timeout=5)
        self.assertNotIsInstance(cm.exception, WaitTimeout)
        self.assertIn("ended", str(cm.exception))
        with self.assertRaises(HomaError):
            c.send((IP, PORT), b"x")


class TestBinding(ClientTest):
    """What the binding over libhoma adds: the GIL let go while a call
    blocks, buffers over the pool that outlive their Client, read-only
    data."""

    def test_gil_released_while_waiting(self):
        c = self.client()
        t = threading.Thread(target=lambda: self.assertRaises(WaitTimeout, c.receive, timeout=1.0))
        t.start()
        time.sleep(0.05)
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < 0.2:  # runs only while the waiting thread lets go of the GIL
            n += 1
        self.assertTrue(t.is_alive())
        self.assertGreater(n, 1000)
        t.join(5)

    def test_signal_ends_a_wait(self):
        c = self.client()
        self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, signal.default_int_handler))
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        with self.assertRaises(KeyboardInterrupt):
            c.receive(timeout=10)  # waits in slices, and sees the signal after one
        self.assertLess(time.monotonic() - t0, 2)
        with self.assertRaises(WaitTimeout):
            c.receive(timeout=0)  # the client is still fine

    def test_data_outlives_the_client(self):
        self.echo()
        c = homa_dpdk.Client(self.path)
        m = c.call((IP, PORT), b"still here", timeout=5)
        d = m.data[6:]
        self.assertTrue(repr(m).startswith(f"<homa_dpdk.Message response id={m.id} peer=('{IP}', {PORT})"), repr(m))
        c.close()
        del c, m
        gc.collect()
        self.assertEqual(d.tobytes(), b"here")  # the mapping goes with the last buffer over it

    def test_data_read_only(self):
        self.echo()
        c = self.client()
        with c.call((IP, PORT), b"ro", timeout=5) as m:
            with self.assertRaises(TypeError):
                m.data[0] = 1
            self.assertEqual((len(m), m.length, bytes(m.data)), (2, 2, b"ro"))
        with self.assertRaises(ValueError):
            m.tobytes()


class TestBadCompletions(ClientTest):
    def test_counted_and_skipped(self):
        self.echo()
        c = self.client()
        c.bind(300)
        s = self.session_of(-1)
        ip = bytes([127, 0, 0, 1])
        p1, p2 = self.d.hold(s, 1), self.d.hold(s, 1)  # as if the engine had handed them over
        bad = [
            b"\xff" * 64,  # unknown op
            completion(op=CompOp.ACCEPTED, flags=4, cookie=1),  # unknown flag
            completion(op=CompOp.ERROR, cookie=1),  # error without a code
            completion(op=CompOp.REQUEST, port=300, rpc_id=1, peer_ip=ip, peer_port=5, length=10, page=10_000,
                       pages=1),  # pages outside the pool
            completion(op=CompOp.REQUEST, port=300, rpc_id=1, peer_ip=ip, peer_port=5, length=PAGE_SIZE + 1, page=0,
                       pages=1),  # too few pages for the length
            completion(op=CompOp.RELEASED, cookie=1, offset=1 << 40, length=1),  # outside the arena
            completion(op=CompOp.REQUEST, port=300, rpc_id=1, peer_ip=ip, peer_port=5, length=1, page=0,
                       pages=1)[:48] + b"\1" * 16,  # a peer of both families
        ]
        unexpected = [
            completion(op=CompOp.ACCEPTED, cookie=999_999),  # nobody's cookie
            completion(op=CompOp.RESPONSE, cookie=5, rpc_id=424242, peer_ip=ip, peer_port=1, length=3, page=p1,
                       pages=1),  # no such RPC: its page is given back
            completion(op=CompOp.REQUEST, port=301, rpc_id=7, peer_ip=ip, peer_port=5, length=3, page=p2,
                       pages=1),  # a port this worker did not bind: its page is given back
            completion(op=CompOp.RELEASED, cookie=12345, offset=0, length=64),
            completion(op=CompOp.ERROR, cookie=777, rpc_id=778, err=ErrCode.TIMEOUT),
        ]
        for raw in bad + unexpected:
            self.d.inject(s, raw)
        for n in (5, 70000):
            with c.call((IP, PORT), b"q" * n, timeout=5) as m:
                self.assertEqual(m.tobytes(), b"q" * n)
        st = c.stats()
        self.assertEqual(st["bad_completions"], len(bad))
        self.assertEqual(st["unexpected_completions"], len(unexpected))
        self.assertIn("unexpected completion", c.last_bad)
        time.sleep(0.05)
        self.assertEqual(s.pages_held, 0)  # the refused messages' pages went back
        self.assertEqual(st["page_return_errors"], 0)

    def test_mismatched_ids(self):
        c = self.client()
        s = self.session_of(-1)
        # an Accepted for a bind of another port, then the real one
        self.d.pause()
        out = []
        t = threading.Thread(target=lambda: out.append(c.bind(42)))
        t.start()
        time.sleep(0.05)
        self.d.inject(s, completion(op=CompOp.ACCEPTED, cookie=1, port=43))
        self.d.resume()
        t.join(5)
        self.assertEqual(out, [None])
        self.assertEqual(c.stats()["bad_completions"], 1)


if __name__ == "__main__":
    unittest.main()
