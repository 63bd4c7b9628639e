"""parse_header (libhoma's homa_layout_parse): the header bytes shm's
WriteHeader writes read back as their Layout, and a bad header refused
with a LayoutError naming the field as shm/layout.go does, the value found
and the reason. (The full table of header checks is native/'s C tests'.)"""

import struct
import unittest

import support  # noqa: F401

from homa_dpdk import Layout, LayoutError, parse_header

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


def region(extra=0):
    """A region of GO_LAYOUT's size with Go's header bytes."""
    buf = bytearray(GO_LAYOUT.region_size + extra)
    buf[:96] = GO_HDR
    struct.pack_into("<I", buf, 96, 1_000_000)
    return buf


def setf(buf, field, value):
    off, size = OFF[field]
    buf[off:off + size] = value.to_bytes(size, "little")


class TestParseHeader(unittest.TestCase):
    def test_go_header(self):
        buf = region(extra=4096)  # a mapping longer than RegionSize is fine
        self.assertEqual(parse_header(buf), GO_LAYOUT)
        self.assertEqual(parse_header(memoryview(buf)), GO_LAYOUT)
        self.assertEqual(parse_header(bytes(buf)), GO_LAYOUT)

    def test_from_mmap(self):
        mm = support.anon(GO_LAYOUT.region_size)
        try:
            mm[:len(region())] = region()
            self.assertEqual(parse_header(mm), GO_LAYOUT)
        finally:
            mm.close()  # parse_header left no export behind

    def test_max_message(self):
        buf = region()
        setf(buf, "MaxMessage", 64 << 20)
        self.assertEqual(parse_header(buf).max_message, 64 << 20)
        setf(buf, "MaxMessage", 0)  # a daemon from before the field
        self.assertEqual(parse_header(buf).max_message, 1_000_000)

    def test_refused(self):
        L = GO_LAYOUT
        cases = [
            ("Magic", 0x314D4853414D4F49, "Magic"),
            ("Version", 2, "Version"),
            ("RegionSize", L.region_size + 1, "RegionSize"),  # beyond the mapping
            ("SQEntries", 63, "SQEntries"),
            ("ArenaOffset", L.arena_offset + 8, "ArenaOffset"),  # not a multiple of 64
            ("PoolOffset", (1 << 64) - 64, "PoolOffset"),  # no overflow
            ("ArenaOffset", L.pool_offset - 64, "PoolOffset"),  # the pool overlaps the arena
            ("MaxMessage", 1 << 31, "MaxMessage"),  # above the limit
        ]
        for field, value, want in cases:
            with self.subTest(field=field, value=value):
                buf = region()
                setf(buf, field, value)
                with self.assertRaises(LayoutError) as cm:
                    parse_header(buf)
                e = cm.exception
                self.assertEqual(e.field, want)
                if want == field:
                    self.assertEqual(e.value, value)
                self.assertTrue(e.reason)
                self.assertIsInstance(e, ValueError)
                self.assertEqual(str(e), f"homa_dpdk: layout {e.field} = {e.value}: {e.reason}")

    def test_short_mapping(self):
        with self.assertRaises(LayoutError) as cm:
            parse_header(bytes(100))
        self.assertEqual((cm.exception.field, cm.exception.value), ("RegionSize", 100))


if __name__ == "__main__":
    unittest.main()
