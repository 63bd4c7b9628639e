"""The worker's allocator for its transmit arena.

The arena is the worker's to manage (doc.go, "Memory ownership"): it
writes a payload into a free range, submits it, and may reuse the range
after the engine reports it released. This is a first-fit free list,
sorted by offset, that coalesces a freed range with its free neighbours.
Ranges are rounded up to 64 bytes (a cache line) so that payloads start
aligned; the last range may be shorter when the arena's size is not a
multiple of 64. Nothing here touches shared memory: it is private
bookkeeping of offsets.
"""

import bisect

__all__ = ["Arena", "ARENA_ALIGN"]

ARENA_ALIGN = 64


class Arena:
    """First-fit allocator of [0, size) with coalescing."""

    def __init__(self, size, align=ARENA_ALIGN):
        if size <= 0:
            raise ValueError(f"arena size {size}")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment {align} not a power of two")
        self.size = size
        self._align = align
        self._starts = [0]  # free blocks, sorted by offset, never adjacent
        self._sizes = [size]
        self._used = {}  # offset -> allocated bytes
        self.used_bytes = 0

    def alloc(self, n):
        """Offset of a free range of at least n bytes, or None if no free
        block is large enough (first fit: the lowest such block)."""
        if n <= 0:
            raise ValueError(f"allocation of {n} bytes")
        want = (n + self._align - 1) & ~(self._align - 1)
        for i, bsize in enumerate(self._sizes):
            if bsize >= n:
                off = self._starts[i]
                take = min(want, bsize)
                if take == bsize:
                    del self._starts[i]
                    del self._sizes[i]
                else:
                    self._starts[i] = off + take
                    self._sizes[i] = bsize - take
                self._used[off] = take
                self.used_bytes += take
                return off
        return None

    def free(self, off):
        """Give back the range allocated at off. KeyError if off is not the
        start of an allocated range (double free, or never allocated)."""
        take = self._used.pop(off)
        self.used_bytes -= take
        i = bisect.bisect_left(self._starts, off)
        merge_prev = i > 0 and self._starts[i - 1] + self._sizes[i - 1] == off
        merge_next = i < len(self._starts) and off + take == self._starts[i]
        if merge_prev and merge_next:
            self._sizes[i - 1] += take + self._sizes[i]
            del self._starts[i]
            del self._sizes[i]
        elif merge_prev:
            self._sizes[i - 1] += take
        elif merge_next:
            self._starts[i] = off
            self._sizes[i] += take
        else:
            self._starts.insert(i, off)
            self._sizes.insert(i, take)

    def allocated(self, off):
        """Bytes allocated at off, or None."""
        return self._used.get(off)

    def free_bytes(self):
        return self.size - self.used_bytes

    def largest_free(self):
        return max(self._sizes, default=0)

    def free_blocks(self):
        """The free list as (offset, size) pairs, lowest offset first."""
        return list(zip(self._starts, self._sizes))

    def __len__(self):
        """Number of allocated ranges."""
        return len(self._used)
