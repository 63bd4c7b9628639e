"""The region header of shm/layout.go: where each part of a worker's region
lives. libhoma reads and checks it (homa_layout_parse, the checks of
shm.ParseHeader in the same order); this module gives its answer as a
Layout.
"""

from . import _native

__all__ = ["Layout", "parse_header", "DEFAULT_MAX_MESSAGE", "HEADER_SIZE"]

HEADER_SIZE = 4096
DEFAULT_MAX_MESSAGE = 1_000_000  # a header's MaxMessage of 0 (a daemon from before the field) reads as this


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


def parse_header(region):
    """ParseHeader: read and validate the header at the start of region (any
    buffer: bytes, bytearray, mmap, memoryview; possibly hostile). The
    result is a copy. Raises LayoutError (.field as shm/layout.go names it,
    .value, .reason)."""
    return Layout(*_native.layout_parse(region))
