"""The rings on an anonymous shared mapping laid out as shm/ring.go says:
indices, slots, wrap-around across 2^64, full and empty, corrupt indices."""

import struct
import unittest

import support
from support import need_x86_64

from homa_dpdk.errors import RingGeometryError
from homa_dpdk.layout import ring_bytes
from homa_dpdk.ring import MASK64, Consumer, Producer, fence, init_ring

# shm.InitRing(mem, 8, 1<<64-3) wrote this control block (Go).
GO_INIT = bytes.fromhex("fdffffffffffffff" + "00" * 120 + "fdffffffffffffff" + "00" * 120)


def entry(i):
    return struct.pack("<Q", i) + bytes(range(8, 64))


def u64(mm, off):
    return struct.unpack_from("<Q", mm, off)[0]


@need_x86_64
class TestRing(unittest.TestCase):
    def ring(self, entries=8, start=0):
        mm = support.anon(ring_bytes(entries) + 4096)  # room after, which the ring must not touch
        mem = memoryview(mm)[:ring_bytes(entries)]
        init_ring(mem, entries, start)
        p, c = Producer(mem, entries), Consumer(mem, entries)

        def cleanup():
            p.release()
            c.release()
            mem.release()
            mm.close()  # fails if a view leaked

        self.addCleanup(cleanup)
        return mm, p, c

    def test_init_matches_go(self):
        mm, p, c = self.ring(8, (1 << 64) - 3)
        self.assertEqual(mm[:256], GO_INIT)

    def test_push_pop_offsets(self):
        mm, p, c = self.ring(8)
        self.assertIsNone(c.pop())
        self.assertTrue(p.push(entry(100)))
        self.assertEqual(u64(mm, 0), 1)  # tail at 0
        self.assertEqual(u64(mm, 128), 0)  # head at 128
        self.assertEqual(mm[256:320], entry(100))  # slot 0 at 256
        self.assertTrue(p.push(entry(101)))
        self.assertEqual(mm[320:384], entry(101))
        self.assertEqual((len(p), len(c)), (2, 2))
        self.assertEqual(c.pop(), entry(100))
        self.assertEqual(u64(mm, 128), 1)
        self.assertEqual(c.pop(), entry(101))
        self.assertIsNone(c.pop())
        self.assertEqual(u64(mm, 128), 2)

    def test_full(self):
        mm, p, c = self.ring(4)
        for i in range(4):
            self.assertTrue(p.push(entry(i)))
        self.assertFalse(p.push(entry(9)))
        self.assertEqual(p.free(), 0)
        self.assertEqual(c.pop(), entry(0))
        self.assertTrue(p.push(entry(4)))
        self.assertEqual([c.pop() for _ in range(4)], [entry(i) for i in range(1, 5)])
        self.assertIsNone(c.pop())

    def test_wrap_across_2_64(self):
        start = (1 << 64) - 5
        mm, p, c = self.ring(8, start)
        n = 0
        for rnd in range(7):  # 3..8 entries at a time, through index 2^64
            k = 3 + rnd % 6
            for i in range(k):
                self.assertTrue(p.push(entry(n + i)))
            for i in range(k):
                self.assertEqual(c.pop(), entry(n + i))
            n += k
            self.assertEqual(u64(mm, 0), (start + n) & MASK64)
            self.assertEqual(u64(mm, 128), (start + n) & MASK64)
        self.assertGreater(start + n, 1 << 64)
        self.assertEqual((p.corrupt, c.corrupt), (0, 0))
        # the slot of index i is i mod 8: index 2^64 is slot 0
        self.assertTrue(p.push(entry(77)))
        self.assertEqual(mm[256 + ((start + n) % 8) * 64:][:64], entry(77))

    def test_full_across_wrap(self):
        mm, p, c = self.ring(4, (1 << 64) - 2)
        for i in range(4):
            self.assertTrue(p.push(entry(i)))
        self.assertFalse(p.push(entry(5)))
        self.assertEqual(u64(mm, 0), 2)  # wrapped
        self.assertEqual(len(c), 4)
        self.assertEqual([c.pop() for _ in range(4)], [entry(i) for i in range(4)])

    def test_corrupt_tail_ignored(self):
        mm, p, c = self.ring(8)
        p.push(entry(1))
        self.assertEqual(c.pop(), entry(1))
        struct.pack_into("<Q", mm, 0, 1000)  # a producer claiming 999 entries
        self.assertIsNone(c.pop())
        self.assertEqual(c.corrupt, 1)
        struct.pack_into("<Q", mm, 0, 0)  # behind the consumer
        self.assertEqual(len(c), 0)
        self.assertEqual(c.corrupt, 2)
        struct.pack_into("<Q", mm, 0, 2)  # good again
        self.assertEqual(len(c), 1)

    def test_corrupt_head_ignored(self):
        mm, p, c = self.ring(4)
        for i in range(4):
            p.push(entry(i))
        struct.pack_into("<Q", mm, 128, 7)  # ahead of the tail
        self.assertFalse(p.push(entry(9)))
        self.assertEqual(p.corrupt, 1)

    def test_slot_masked(self):
        mm, p, c = self.ring(4, 0)
        for i in range(50):
            self.assertTrue(p.push(entry(i)))
            self.assertEqual(c.pop(), entry(i))
        self.assertEqual(mm[ring_bytes(4):ring_bytes(4) + 4096], bytes(4096))

    def test_wait_flag(self):
        mm, p, c = self.ring(8)
        self.assertFalse(p.consumer_waiting())
        self.assertTrue(c.prepare_sleep())  # empty: may sleep, flag set
        self.assertEqual(struct.unpack_from("<I", mm, 136)[0], 1)
        self.assertTrue(p.consumer_waiting())
        self.assertTrue(p.take_waiter())
        self.assertEqual(struct.unpack_from("<I", mm, 136)[0], 0)
        self.assertFalse(p.take_waiter())
        p.push(entry(1))
        self.assertFalse(c.prepare_sleep())  # not empty: flag cleared again
        self.assertEqual(struct.unpack_from("<I", mm, 136)[0], 0)
        c.set_waiting(True)
        self.assertEqual(mm[136:140], b"\x01\x00\x00\x00")
        c.set_waiting(False)
        self.assertEqual(mm[128:256], struct.pack("<Q", 0) + bytes(120))  # head untouched by the flag
        fence()

    def test_geometry(self):
        mm = support.anon(ring_bytes(8))
        self.addCleanup(mm.close)
        with self.assertRaises(RingGeometryError):
            Producer(memoryview(mm)[:ring_bytes(8) - 64], 8)
        with self.assertRaises(RingGeometryError):
            Consumer(mm, 6)
        with self.assertRaises(RingGeometryError):
            Consumer(mm, 0)
        with self.assertRaises(RingGeometryError):
            Consumer(bytes(ring_bytes(8)), 8)  # read-only
        struct.pack_into("<QQ", mm, 0, 9, 0)
        struct.pack_into("<Q", mm, 128, 0)
        with self.assertRaises(RingGeometryError):  # 9 outstanding in 8 slots
            Consumer(mm, 8)

    def test_ring_in_bytearray(self):
        buf = bytearray(ring_bytes(2))
        init_ring(buf, 2, 5)
        p, c = Producer(buf, 2), Consumer(buf, 2)
        p.push(entry(3))
        self.assertEqual(c.pop(), entry(3))
        self.assertEqual(u64(buf, 0), 6)
        p.release()
        c.release()
        buf.append(0)  # no export left


if __name__ == "__main__":
    unittest.main()
