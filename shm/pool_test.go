package shm

import "testing"

// TestPagesFor: a message takes whole 64 KiB pages; 64 MiB is 1024.
func TestPagesFor(t *testing.T) {
	for n, want := range map[int]int{1: 1, PageSize: 1, PageSize + 1: 2, DefaultMaxMessage: 16, 8 << 20: 128, 64 << 20: 1024, 64<<20 + 1: 1025} {
		if got := PagesFor(n); got != want {
			t.Errorf("PagesFor(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestPagePool_runsOf1024Pages: a 64 MiB message's run of 1024
// consecutive pages is found, held, returned and found again; what does
// not fit — more pages than the pool has, or free pages in pieces none of
// which is long enough — is refused and changes nothing.
func TestPagePool_runsOf1024Pages(t *testing.T) {
	const run = 1024
	p := NewPagePool(2*run + 10)
	a, ok := p.Alloc(run)
	b, ok2 := p.Alloc(run)
	if !ok || !ok2 || a != 0 || b != run || p.Free() != 10 {
		t.Fatalf("two runs: %d %v, %d %v; free %d", a, ok, b, ok2, p.Free())
	}
	if _, ok := p.Alloc(run); ok {
		t.Fatal("a third run of 1024 in 10 free pages")
	}
	p.Deliver(a, run)
	p.Deliver(b, run)
	if p.Held() != 2*run {
		t.Fatalf("held %d", p.Held())
	}
	// Give back the first run but one page in its middle: 1023 free
	// pages there, 10 at the end; no run of 1024.
	if !p.Return(0, 500) || !p.Return(501, run-501) {
		t.Fatal("Return of held pages refused")
	}
	if p.Free() != run-1+10 {
		t.Fatalf("free %d", p.Free())
	}
	if _, ok := p.Alloc(run); ok {
		t.Fatal("a run of 1024 found in pieces of 500, 523 and 10")
	}
	if got, ok := p.Alloc(run - 501); !ok || got != 501 {
		t.Fatalf("a run of 523 at 501: %d %v", got, ok)
	}
	p.Release(501, run-501) // that message ended undelivered
	if !p.Return(500, 1) {
		t.Fatal("Return of the middle page refused")
	}
	if got, ok := p.Alloc(run); !ok || got != 0 {
		t.Fatalf("the first run again: %d %v; free %d", got, ok, p.Free())
	}
	if p.Return(0, run) {
		t.Fatal("Return of filling pages accepted")
	}
	if _, ok := NewPagePool(run - 1).Alloc(run); ok {
		t.Fatal("a run of 1024 in a pool of 1023")
	}
}

// TestPagePool_allocAllocatesNothing: finding a long run is on the
// receive path.
func TestPagePool_allocAllocatesNothing(t *testing.T) {
	p := NewPagePool(4096)
	p.Alloc(1)
	if n := testing.AllocsPerRun(100, func() {
		page, ok := p.Alloc(1024)
		if !ok {
			t.Fatal("no run")
		}
		p.Release(page, 1024)
	}); n != 0 {
		t.Fatalf("%v allocations per Alloc", n)
	}
}
