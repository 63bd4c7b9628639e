"""The region header of shm/layout.go: where each part of a worker's region lives.

The header at offset 0 (little-endian)::

    off size field        meaning
      0  8   Magic        "HOMASHM1"
      8  4   Version      1
     12  4   HeaderSize   4096
     16  8   RegionSize   bytes of the whole region (<= the memfd's size)
     24  8   SQOffset     submission ring: ring_bytes(SQEntries) bytes
     32  8   SQEntries    a power of two
     40  8   CQOffset     completion ring: ring_bytes(CQEntries) bytes
     48  8   CQEntries    a power of two
     56  8   ArenaOffset  transmit arena
     64  8   ArenaSize
     72  8   PoolOffset   receive pool: PoolPages pages of PageSize bytes
     80  8   PoolPages
     88  4   EntrySize    64
     92  4   PageSize     65536
     96  4   MaxMessage   largest message the entries carry, 1..MAX_MESSAGE_LIMIT
    100 ...  reserved     zero up to HeaderSize

MaxMessage was reserved before: 0 there (a daemon from before the field)
reads as DEFAULT_MAX_MESSAGE, 1,000,000 bytes, kernel Homa's limit. A
daemon configured for longer messages (protocol.max_message, up to
2^31 - 1) writes its own, and sizes the arena and the pool for it.

parse_header checks exactly what ParseHeader checks, in the same order, and
raises LayoutError naming the same field.
"""

import struct

from .entry import ENTRY_SIZE, PAGE_SIZE
from .errors import LayoutError

__all__ = [
    "MAGIC",
    "VERSION",
    "HEADER_SIZE",
    "CACHE_LINE",
    "PAGE_SIZE",
    "ENTRY_SIZE",
    "RING_HEADER_SIZE",
    "MAX_RING_ENTRIES",
    "MAX_ARENA_SIZE",
    "MAX_POOL_PAGES",
    "DEFAULT_MAX_MESSAGE",
    "MAX_MESSAGE_LIMIT",
    "ring_bytes",
    "Layout",
    "new_layout",
    "parse_header",
]

MAGIC = 0x314D4853414D4F48  # b"HOMASHM1" read as a little-endian u64
VERSION = 1
HEADER_SIZE = 4096
CACHE_LINE = 64
RING_HEADER_SIZE = 256
MAX_RING_ENTRIES = 1 << 20
MAX_ARENA_SIZE = 1 << 40
MAX_POOL_PAGES = 1 << 24
DEFAULT_MAX_MESSAGE = 1_000_000
MAX_MESSAGE_LIMIT = (1 << 31) - 1
_PART_ALIGN = 4096

# magic version headersize regionsize sqoff sqent cqoff cqent arenaoff arenasize pooloff poolpages entrysize pagesize
# maxmessage
_HDR = struct.Struct("<QIIQQQQQQQQQIII")
assert _HDR.size == 100


def ring_bytes(entries):
    """The size of a ring of entries slots."""
    return RING_HEADER_SIZE + entries * ENTRY_SIZE


def _check_ring_entries(field, n):
    if n == 0 or n & (n - 1) or n > MAX_RING_ENTRIES:
        raise LayoutError(field, n, f"not a power of two in 1..{MAX_RING_ENTRIES}")


def _check_arena_size(n):
    if n == 0 or n > MAX_ARENA_SIZE:
        raise LayoutError("ArenaSize", n, f"not in 1..{MAX_ARENA_SIZE}")


def _check_pool_pages(n):
    if n == 0 or n > MAX_POOL_PAGES:
        raise LayoutError("PoolPages", n, f"not in 1..{MAX_POOL_PAGES}")


def _check_max_message(n):
    if n == 0 or n > MAX_MESSAGE_LIMIT:
        raise LayoutError("MaxMessage", n, f"not in 1..{MAX_MESSAGE_LIMIT}")


def _align_up(v, a):
    return (v + a - 1) & ~(a - 1)


class Layout:
    """Where each part of a region lives (bytes from the region's start)."""

    __slots__ = ("region_size", "sq_offset", "sq_entries", "cq_offset", "cq_entries", "arena_offset",
                 "arena_size", "pool_offset", "pool_pages", "max_message")

    def __init__(self, region_size=0, sq_offset=0, sq_entries=0, cq_offset=0, cq_entries=0, arena_offset=0,
                 arena_size=0, pool_offset=0, pool_pages=0, max_message=DEFAULT_MAX_MESSAGE):
        self.region_size = region_size
        self.sq_offset = sq_offset
        self.sq_entries = sq_entries
        self.cq_offset = cq_offset
        self.cq_entries = cq_entries
        self.arena_offset = arena_offset
        self.arena_size = arena_size
        self.pool_offset = pool_offset
        self.pool_pages = pool_pages
        self.max_message = max_message

    def __eq__(self, other):
        return type(other) is Layout and all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __repr__(self):
        return "Layout(" + ", ".join(f"{f}={getattr(self, f)}" for f in self.__slots__) + ")"

    def _spans(self):
        return [
            ("HeaderSize", 0, HEADER_SIZE),
            ("SQOffset", self.sq_offset, ring_bytes(self.sq_entries)),
            ("CQOffset", self.cq_offset, ring_bytes(self.cq_entries)),
            ("ArenaOffset", self.arena_offset, self.arena_size),
            ("PoolOffset", self.pool_offset, self.pool_pages * PAGE_SIZE),
        ]

    def validate(self, region_len):
        """Layout.Validate: raise LayoutError naming the first bad field."""
        if self.region_size < HEADER_SIZE or self.region_size > region_len:
            raise LayoutError("RegionSize", self.region_size,
                              f"not in {HEADER_SIZE}..{region_len} (the mapped length)")
        _check_ring_entries("SQEntries", self.sq_entries)
        _check_ring_entries("CQEntries", self.cq_entries)
        _check_arena_size(self.arena_size)
        _check_pool_pages(self.pool_pages)
        _check_max_message(self.max_message)
        spans = self._spans()
        for field, off, size in spans[1:]:
            if off % CACHE_LINE:
                raise LayoutError(field, off, "not a multiple of 64 (cache line)")
            if off > self.region_size or size > self.region_size - off:
                raise LayoutError(field, off, f"part of {size} bytes ends beyond RegionSize {self.region_size}")
        for i, (af, ao, asz) in enumerate(spans):
            for bf, bo, bsz in spans[i + 1:]:
                if ao < bo + bsz and bo < ao + asz:
                    raise LayoutError(bf, bo, f"overlaps the part at {af} {ao}")

    def write_header(self, region):
        """Validate against len(region) and write the header into
        region[:HEADER_SIZE] (a writable buffer), reserved bytes zero. The
        daemon's job; used by tests and the fake daemon."""
        with memoryview(region) as mv, mv.cast("B") as b:
            self.validate(len(b))
            hdr = bytearray(HEADER_SIZE)
            _HDR.pack_into(hdr, 0, MAGIC, VERSION, HEADER_SIZE, self.region_size, self.sq_offset,
                           self.sq_entries, self.cq_offset, self.cq_entries, self.arena_offset, self.arena_size,
                           self.pool_offset, self.pool_pages, ENTRY_SIZE, PAGE_SIZE, self.max_message)
            b[:HEADER_SIZE] = hdr

    # Part offsets as (start, end) pairs, for slicing a region view.
    def sq_range(self):
        return self.sq_offset, self.sq_offset + ring_bytes(self.sq_entries)

    def cq_range(self):
        return self.cq_offset, self.cq_offset + ring_bytes(self.cq_entries)

    def arena_range(self):
        return self.arena_offset, self.arena_offset + self.arena_size

    def pool_range(self):
        return self.pool_offset, self.pool_offset + self.pool_pages * PAGE_SIZE


def new_layout(sq_entries, cq_entries, arena_size, pool_pages, region_align=0, max_message=0):
    """NewLayout: place the parts on 4 KB boundaries in the order header,
    SQ, CQ, arena, pool, and round RegionSize up to region_align (0: 4096);
    max_message 0 is DEFAULT_MAX_MESSAGE."""
    rnd = region_align or _PART_ALIGN
    if rnd < _PART_ALIGN or rnd & (rnd - 1) or rnd > 1 << 30:
        raise LayoutError("RegionAlign", rnd, "not a power of two in 4096..1<<30")
    _check_ring_entries("SQEntries", sq_entries)
    _check_ring_entries("CQEntries", cq_entries)
    _check_arena_size(arena_size)
    _check_pool_pages(pool_pages)
    lay = Layout(sq_entries=sq_entries, cq_entries=cq_entries, arena_size=arena_size, pool_pages=pool_pages,
                 max_message=max_message or DEFAULT_MAX_MESSAGE)
    off = HEADER_SIZE
    lay.sq_offset, off = off, _align_up(off + ring_bytes(sq_entries), _PART_ALIGN)
    lay.cq_offset, off = off, _align_up(off + ring_bytes(cq_entries), _PART_ALIGN)
    lay.arena_offset, off = off, _align_up(off + arena_size, _PART_ALIGN)
    lay.pool_offset, off = off, off + pool_pages * PAGE_SIZE
    lay.region_size = _align_up(off, rnd)
    lay.validate(lay.region_size)
    return lay


def parse_header(region):
    """ParseHeader: read and validate the header at the start of region (any
    buffer: bytes, bytearray, mmap, memoryview; possibly hostile). The
    result is a copy. Raises LayoutError."""
    mv = memoryview(region)
    try:
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        n = len(mv)
        if n < HEADER_SIZE:
            raise LayoutError("RegionSize", n, "mapped length below the 4096-byte header")
        hdr = mv[:HEADER_SIZE].tobytes()  # copy once: later writes cannot change what is checked
    finally:
        mv.release()
    (magic, version, header_size, region_size, sq_off, sq_ent, cq_off, cq_ent, arena_off, arena_size, pool_off,
     pool_pages, entry_size, page_size, max_message) = _HDR.unpack_from(hdr)
    if magic != MAGIC:
        raise LayoutError("Magic", magic, 'not "HOMASHM1"')
    if version != VERSION:
        raise LayoutError("Version", version, f"this build reads version {VERSION}")
    if header_size != HEADER_SIZE:
        raise LayoutError("HeaderSize", header_size, f"want {HEADER_SIZE}")
    if entry_size != ENTRY_SIZE:
        raise LayoutError("EntrySize", entry_size, f"want {ENTRY_SIZE}")
    if page_size != PAGE_SIZE:
        raise LayoutError("PageSize", page_size, f"want {PAGE_SIZE}")
    lay = Layout(region_size, sq_off, sq_ent, cq_off, cq_ent, arena_off, arena_size, pool_off, pool_pages,
                 max_message or DEFAULT_MAX_MESSAGE)  # 0: a daemon from before the field
    lay.validate(n)
    return lay
