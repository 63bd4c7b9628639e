package client

import "slices"

// arena allocates ranges of the transmit arena, which is the worker's to
// manage (see "Memory ownership" in shm/doc.go). It is first fit over a
// sorted list of free ranges, merged with their neighbours when freed, so
// messages of 1 byte and of 1 MB share it without a size-class scheme.
// Ranges start on a cache line (arenaAlign) and take whole lines, except
// the last range of an arena whose size is not a multiple of a line,
// which ends at the arena's end.
type arena struct {
	size  uint64
	avail uint64      // free bytes
	free  []arenaSpan // sorted by off; no empty range, no two touching
}

// arenaSpan is a range [off, off+n) of the arena.
type arenaSpan struct{ off, n uint64 }

const arenaAlign = 64

func newArena(size uint64) arena {
	a := arena{size: size, avail: size, free: make([]arenaSpan, 1, 64)}
	a.free[0] = arenaSpan{0, size}
	return a
}

// alloc takes room for n bytes (n ≥ 1) and returns the range taken, which
// holds at least n bytes; ok is false if no free range is long enough.
func (a *arena) alloc(n uint64) (s arenaSpan, ok bool) {
	need := (n + arenaAlign - 1) &^ (arenaAlign - 1)
	for i := range a.free {
		f := &a.free[i]
		if f.n < n {
			continue
		}
		// A range that holds n bytes holds need, unless it is the arena's
		// last and the arena's size is not a multiple of a line: then it
		// is taken to its end.
		take := min(need, f.n)
		s = arenaSpan{f.off, take}
		f.off += take
		f.n -= take
		if f.n == 0 {
			a.free = slices.Delete(a.free, i, i+1)
		}
		a.avail -= take
		return s, true
	}
	return arenaSpan{}, false
}

// release gives back a range alloc returned. It returns false, changing
// nothing, if the range is outside the arena or overlaps a free range (a
// double release).
func (a *arena) release(s arenaSpan) bool {
	if s.n == 0 || s.off > a.size || s.n > a.size-s.off {
		return false
	}
	end := s.off + s.n
	i, _ := slices.BinarySearchFunc(a.free, s.off, func(f arenaSpan, off uint64) int {
		switch {
		case f.off < off:
			return -1
		case f.off > off:
			return 1
		}
		return 0
	})
	// a.free[i-1] starts before s, a.free[i] at or after it.
	if i > 0 && a.free[i-1].off+a.free[i-1].n > s.off {
		return false
	}
	if i < len(a.free) && a.free[i].off < end {
		return false
	}
	joinPrev := i > 0 && a.free[i-1].off+a.free[i-1].n == s.off
	joinNext := i < len(a.free) && a.free[i].off == end
	switch {
	case joinPrev && joinNext:
		a.free[i-1].n += s.n + a.free[i].n
		a.free = slices.Delete(a.free, i, i+1)
	case joinPrev:
		a.free[i-1].n += s.n
	case joinNext:
		a.free[i].off = s.off
		a.free[i].n += s.n
	default:
		a.free = slices.Insert(a.free, i, s)
	}
	a.avail += s.n
	return true
}
