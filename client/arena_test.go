package client

import (
	"math/rand/v2"
	"testing"
)

func TestArena_firstFitCoalesce(t *testing.T) {
	a := newArena(1000) // not a multiple of a line: the last range ends at 1000
	x, _ := a.alloc(1)
	y, _ := a.alloc(65)
	z, ok := a.alloc(700)
	if !ok || x != (arenaSpan{0, 64}) || y != (arenaSpan{64, 128}) || z != (arenaSpan{192, 704}) {
		t.Fatalf("x %v y %v z %v", x, y, z)
	}
	if w, ok := a.alloc(104); !ok || w != (arenaSpan{896, 104}) {
		t.Fatalf("tail: %v %v", w, ok)
	}
	if _, ok := a.alloc(1); ok || a.avail != 0 {
		t.Fatalf("full arena allocated; avail %d", a.avail)
	}
	if !a.release(y) || a.release(y) {
		t.Fatal("double release not refused")
	}
	if s, ok := a.alloc(100); !ok || s != (arenaSpan{64, 128}) { // first fit reuses the hole
		t.Fatalf("hole: %v %v", s, ok)
	}
	for _, s := range []arenaSpan{x, {64, 128}, z, {896, 104}} {
		if !a.release(s) {
			t.Fatalf("release %v refused", s)
		}
	}
	if len(a.free) != 1 || a.free[0] != (arenaSpan{0, 1000}) || a.avail != 1000 {
		t.Fatalf("not coalesced: %v avail %d", a.free, a.avail)
	}
	if a.release(arenaSpan{990, 64}) || a.release(arenaSpan{0, 0}) {
		t.Fatal("a range outside the arena was accepted")
	}
}

// A random mix of sizes, released in random order, keeps the free list
// sorted, disjoint and accounted, and coalesces back to one range.
func TestArena_randomInvariants(t *testing.T) {
	const size = 1 << 20
	a := newArena(size)
	rng := rand.New(rand.NewPCG(1, 2))
	var held []arenaSpan
	for range 20000 {
		if len(held) > 0 && (rng.IntN(2) == 0 || a.avail < 1<<16) {
			i := rng.IntN(len(held))
			if !a.release(held[i]) {
				t.Fatalf("release %v refused", held[i])
			}
			held[i] = held[len(held)-1]
			held = held[:len(held)-1]
		} else {
			n := uint64(1 + rng.IntN(1<<uint(rng.IntN(17))))
			if s, ok := a.alloc(n); ok {
				if s.n < n || s.off%arenaAlign != 0 {
					t.Fatalf("alloc(%d) = %v", n, s)
				}
				held = append(held, s)
			}
		}
		var free uint64
		for i, f := range a.free {
			if f.n == 0 || (i > 0 && a.free[i-1].off+a.free[i-1].n >= f.off) {
				t.Fatalf("free list broken at %d: %v", i, a.free)
			}
			free += f.n
		}
		if free != a.avail {
			t.Fatalf("avail %d, free list holds %d", a.avail, free)
		}
	}
	for _, s := range held {
		a.release(s)
	}
	if len(a.free) != 1 || a.avail != size {
		t.Fatalf("after releasing all: %v", a.free)
	}
}
