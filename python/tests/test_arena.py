"""The transmit-arena allocator: first fit, 64-byte rounding, coalescing,
fragmentation and a full arena."""

import random
import unittest

import support  # noqa: F401

from homa_dpdk.arena import Arena


class TestArena(unittest.TestCase):
    def test_first_fit_and_rounding(self):
        a = Arena(1024)
        self.assertEqual(a.alloc(1), 0)
        self.assertEqual(a.alloc(64), 64)
        self.assertEqual(a.alloc(65), 128)
        self.assertEqual(a.alloc(100), 256)
        self.assertEqual(a.used_bytes, 64 + 64 + 128 + 128)
        self.assertEqual(a.free_blocks(), [(384, 640)])

    def test_full(self):
        a = Arena(256)
        self.assertEqual(a.alloc(256), 0)
        self.assertIsNone(a.alloc(1))
        a.free(0)
        self.assertEqual(a.alloc(1), 0)
        self.assertIsNone(a.alloc(256))

    def test_odd_size_tail(self):
        a = Arena(100)
        self.assertEqual(a.alloc(100), 0)  # rounds to 128 but only 100 exist
        self.assertEqual(a.allocated(0), 100)
        a.free(0)
        self.assertEqual(a.free_blocks(), [(0, 100)])
        self.assertEqual(a.alloc(70), 0)  # the whole block: 128 wanted, 100 there
        self.assertEqual(a.free_blocks(), [])
        b = Arena(200)
        self.assertEqual(b.alloc(100), 0)
        self.assertEqual(b.alloc(72), 128)  # the 72-byte tail
        self.assertEqual((b.free_blocks(), b.used_bytes), ([], 200))
        b.free(0)
        b.free(128)
        self.assertEqual(b.free_blocks(), [(0, 200)])

    def test_coalescing(self):
        a = Arena(64 * 10)
        offs = [a.alloc(64) for _ in range(10)]
        self.assertEqual(offs, [64 * i for i in range(10)])
        for i in (1, 3, 5):
            a.free(offs[i])
        self.assertEqual(a.free_blocks(), [(64, 64), (192, 64), (320, 64)])
        a.free(offs[2])  # merges with both neighbours
        self.assertEqual(a.free_blocks(), [(64, 192), (320, 64)])
        a.free(offs[4])  # merges into one block
        self.assertEqual(a.free_blocks(), [(64, 320)])
        a.free(offs[0])  # with the next
        self.assertEqual(a.free_blocks(), [(0, 384)])
        a.free(offs[9])  # alone
        a.free(offs[8])  # with the previous... and the next
        self.assertEqual(a.free_blocks(), [(0, 384), (512, 128)])
        for i in (6, 7):
            a.free(offs[i])
        self.assertEqual(a.free_blocks(), [(0, 640)])
        self.assertEqual(a.used_bytes, 0)
        self.assertEqual(len(a), 0)

    def test_fragmentation(self):
        a = Arena(64 * 8)
        offs = [a.alloc(64) for _ in range(8)]
        for o in offs[::2]:
            a.free(o)
        self.assertEqual(a.free_bytes(), 256)
        self.assertEqual(a.largest_free(), 64)
        self.assertIsNone(a.alloc(128))  # enough bytes, no block
        a.free(offs[1])  # [0, 192) is free now
        self.assertEqual(a.alloc(128), 0)
        self.assertEqual(a.alloc(64), 128)  # first fit: the lowest block

    def test_double_free(self):
        a = Arena(1024)
        o = a.alloc(10)
        a.free(o)
        with self.assertRaises(KeyError):
            a.free(o)
        with self.assertRaises(KeyError):
            a.free(64)
        with self.assertRaises(ValueError):
            a.alloc(0)

    def test_random_against_model(self):
        rng = random.Random(7)
        a = Arena(1 << 16)
        live = {}
        for _ in range(5000):
            if live and (rng.random() < 0.5 or len(live) > 100):
                off = rng.choice(list(live))
                a.free(off)
                del live[off]
            else:
                n = rng.randint(1, 5000)
                off = a.alloc(n)
                if off is None:
                    self.assertLess(a.largest_free(), n)
                    continue
                self.assertEqual(off % 64, 0)
                self.assertLessEqual(off + n, a.size)
                for o, m in live.items():  # no overlap
                    self.assertTrue(off + n <= o or o + m <= off)
                live[off] = n
            blocks = a.free_blocks()
            for (o1, s1), (o2, _) in zip(blocks, blocks[1:]):
                self.assertLess(o1 + s1, o2)  # sorted, never adjacent (coalesced)
            self.assertEqual(sum(s for _, s in blocks), a.free_bytes())
        for off in list(live):
            a.free(off)
        self.assertEqual(a.free_blocks(), [(0, 1 << 16)])


if __name__ == "__main__":
    unittest.main()
