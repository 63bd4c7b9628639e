"""The region header: placement as shm.NewLayout does it, the bytes
shm's WriteHeader writes, and every validation error of ParseHeader."""

import struct
import unittest

import support  # noqa: F401

from homa_dpdk.errors import LayoutError
from homa_dpdk.layout import (DEFAULT_MAX_MESSAGE, HEADER_SIZE, MAGIC, MAX_MESSAGE_LIMIT, Layout, new_layout,
                               parse_header, ring_bytes)

# shm.NewLayout(Params{SQEntries: 64, CQEntries: 256, ArenaSize: 1 << 20, PoolPages: 16}) and the first 96
# bytes WriteHeader wrote for it (Go), then its MaxMessage (the default 1,000,000) at 96.
GO_LAYOUT = Layout(region_size=2129920, sq_offset=4096, sq_entries=64, cq_offset=12288, cq_entries=256,
                   arena_offset=32768, arena_size=1048576, pool_offset=1081344, pool_pages=16)
GO_HDR = bytes.fromhex(
    "484f4d4153484d3101000000001000000080200000000000001000000000000040000000000000000030000000000000"
    "000100000000000000800000000000000000100000000000008010000000000010000000000000004000000000000100")

# field offsets from shm/layout.go
OFF = dict(Magic=(0, 8), Version=(8, 4), HeaderSize=(12, 4), RegionSize=(16, 8), SQOffset=(24, 8),
           SQEntries=(32, 8), CQOffset=(40, 8), CQEntries=(48, 8), ArenaOffset=(56, 8), ArenaSize=(64, 8),
           PoolOffset=(72, 8), PoolPages=(80, 8), EntrySize=(88, 4), PageSize=(92, 4), MaxMessage=(96, 4))


def region_with_header(lay=GO_LAYOUT, extra=0):
    buf = bytearray(lay.region_size + extra)
    lay.write_header(buf)
    return buf


def setf(buf, field, value):
    off, size = OFF[field]
    buf[off:off + size] = value.to_bytes(size, "little")


class TestLayout(unittest.TestCase):
    def test_ring_bytes(self):
        self.assertEqual(ring_bytes(1), 256 + 64)
        self.assertEqual(ring_bytes(1024), 256 + 65536)

    def test_new_layout_matches_go(self):
        self.assertEqual(new_layout(64, 256, 1 << 20, 16), GO_LAYOUT)
        lay = new_layout(8, 8, 100, 1, region_align=2 << 20)
        self.assertEqual(lay, Layout(2097152, 4096, 8, 8192, 8, 12288, 100, 16384, 1))

    def test_header_bytes_match_go(self):
        buf = region_with_header()
        self.assertEqual(bytes(buf[:96]), GO_HDR)
        self.assertEqual(bytes(buf[96:100]), (1_000_000).to_bytes(4, "little"))
        self.assertEqual(bytes(buf[100:HEADER_SIZE]), bytes(HEADER_SIZE - 100))
        self.assertEqual(buf[:8], b"HOMASHM1")
        self.assertEqual(struct.unpack_from("<Q", buf)[0], MAGIC)

    def test_parse_round_trip(self):
        buf = region_with_header(extra=4096)  # a mapping longer than RegionSize is fine
        self.assertEqual(parse_header(buf), GO_LAYOUT)
        self.assertEqual(parse_header(memoryview(buf)), GO_LAYOUT)
        self.assertEqual(parse_header(bytes(buf)), GO_LAYOUT)

    def test_parse_from_mmap(self):
        mm = support.anon(GO_LAYOUT.region_size)
        try:
            GO_LAYOUT.write_header(mm)
            self.assertEqual(parse_header(mm), GO_LAYOUT)
        finally:
            mm.close()  # parse_header left no export behind

    def test_errors(self):
        L = GO_LAYOUT
        cases = [
            ("Magic", 0x314D4853414D4F49, "Magic"),
            ("Version", 2, "Version"),
            ("HeaderSize", 8192, "HeaderSize"),
            ("EntrySize", 128, "EntrySize"),
            ("PageSize", 4096, "PageSize"),
            ("RegionSize", L.region_size + 1, "RegionSize"),  # beyond the mapping
            ("RegionSize", 4095, "RegionSize"),
            ("SQEntries", 63, "SQEntries"),
            ("SQEntries", 0, "SQEntries"),
            ("CQEntries", 1 << 21, "CQEntries"),
            ("ArenaSize", 0, "ArenaSize"),
            ("ArenaSize", (1 << 40) + 1, "ArenaSize"),
            ("PoolPages", 0, "PoolPages"),
            ("PoolPages", (1 << 24) + 1, "PoolPages"),
            ("ArenaOffset", L.arena_offset + 8, "ArenaOffset"),  # not a multiple of 64
            ("PoolOffset", L.region_size, "PoolOffset"),  # ends beyond RegionSize
            ("PoolOffset", (1 << 64) - 64, "PoolOffset"),  # no overflow
            ("SQOffset", 0, "SQOffset"),  # overlaps the header
            ("CQOffset", L.sq_offset + 64, "CQOffset"),  # overlaps the SQ
            ("ArenaOffset", L.pool_offset - 64, "PoolOffset"),  # the pool overlaps the arena
            ("MaxMessage", 1 << 31, "MaxMessage"),  # above MAX_MESSAGE_LIMIT
        ]
        for field, value, want in cases:
            with self.subTest(field=field, value=value):
                buf = region_with_header()
                setf(buf, field, value)
                with self.assertRaises(LayoutError) as cm:
                    parse_header(buf)
                self.assertEqual(cm.exception.field, want)
                self.assertIsInstance(cm.exception, ValueError)

    def test_max_message(self):
        lay = new_layout(16, 16, 64 << 20, 1024, max_message=64 << 20)
        self.assertEqual(lay.max_message, 64 << 20)
        buf = bytearray(lay.region_size)
        lay.write_header(buf)
        self.assertEqual(parse_header(buf), lay)
        self.assertEqual(struct.unpack_from("<I", buf, 96)[0], 64 << 20)
        self.assertEqual(new_layout(16, 16, 1 << 16, 1).max_message, DEFAULT_MAX_MESSAGE)
        self.assertEqual(new_layout(16, 16, 1 << 16, 1, max_message=MAX_MESSAGE_LIMIT).max_message,
                         MAX_MESSAGE_LIMIT)
        with self.assertRaises(LayoutError) as cm:
            new_layout(16, 16, 1 << 16, 1, max_message=MAX_MESSAGE_LIMIT + 1)
        self.assertEqual(cm.exception.field, "MaxMessage")

    def test_max_message_zero_from_older_daemon(self):
        buf = region_with_header()
        setf(buf, "MaxMessage", 0)
        self.assertEqual(parse_header(buf).max_message, DEFAULT_MAX_MESSAGE)

    def test_short_mapping(self):
        with self.assertRaises(LayoutError) as cm:
            parse_header(bytes(100))
        self.assertEqual((cm.exception.field, cm.exception.value), ("RegionSize", 100))

    def test_new_layout_errors(self):
        for args, kw, field in [((3, 8, 1, 1), {}, "SQEntries"), ((8, 8, 0, 1), {}, "ArenaSize"),
                                ((8, 8, 1, 0), {}, "PoolPages"), ((8, 8, 1, 1), dict(region_align=1000), "RegionAlign")]:
            with self.subTest(field=field):
                with self.assertRaises(LayoutError) as cm:
                    new_layout(*args, **kw)
                self.assertEqual(cm.exception.field, field)

    def test_write_header_validates(self):
        with self.assertRaises(LayoutError):
            GO_LAYOUT.write_header(bytearray(GO_LAYOUT.region_size - 1))


if __name__ == "__main__":
    unittest.main()
