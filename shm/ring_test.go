package shm

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// tailWord and headWord poke the shared indices as a hostile peer would.
func tailWord(mem []byte) uint64   { return binary.LittleEndian.Uint64(mem[ringTail:]) }
func headWord(mem []byte) uint64   { return binary.LittleEndian.Uint64(mem[ringHead:]) }
func setTail(mem []byte, v uint64) { binary.LittleEndian.PutUint64(mem[ringTail:], v) }
func setHead(mem []byte, v uint64) { binary.LittleEndian.PutUint64(mem[ringHead:], v) }

func TestRing_pushPopOrder(t *testing.T) {
	_, p, c := newTestRing(t, 8, 0)
	var s Slot
	for i := range uint64(5) {
		seqSlot(&s, i)
		if !p.Push(&s) {
			t.Fatalf("push %d failed", i)
		}
	}
	if p.Len() != 5 || c.Len() != 5 || p.Free() != 3 || c.Free() != 3 || p.Cap() != 8 || c.Cap() != 8 {
		t.Fatalf("Len %d/%d Free %d/%d Cap %d/%d", p.Len(), c.Len(), p.Free(), c.Free(), p.Cap(), c.Cap())
	}
	for i := range uint64(5) {
		if !c.Pop(&s) || !checkSeq(&s, i) {
			t.Fatalf("pop %d: wrong entry", i)
		}
	}
	if c.Pop(&s) {
		t.Fatal("pop from empty ring succeeded")
	}
}

func TestRing_empty(t *testing.T) {
	_, p, c := newTestRing(t, 4, 0)
	var s Slot
	dst := make([]Slot, 3)
	if c.Pop(&s) || c.PopBurst(dst) != 0 || c.Len() != 0 || p.Len() != 0 || c.Free() != 4 {
		t.Fatal("empty ring gave entries")
	}
	if c.Corrupt() != 0 || p.Corrupt() != 0 {
		t.Fatal("empty ring counted corruption")
	}
}

func TestRing_full(t *testing.T) {
	_, p, c := newTestRing(t, 4, 0)
	var s Slot
	for i := range uint64(4) {
		seqSlot(&s, i)
		if !p.Push(&s) {
			t.Fatalf("push %d into non-full ring failed", i)
		}
	}
	if p.Push(&s) || p.PushBurst(make([]Slot, 2)) != 0 || p.Free() != 0 || c.Len() != 4 {
		t.Fatal("full ring took more")
	}
	if !c.Pop(&s) || !checkSeq(&s, 0) {
		t.Fatal("pop from full ring")
	}
	seqSlot(&s, 4)
	if !p.Push(&s) || p.Push(&s) {
		t.Fatal("after one pop, exactly one push should fit")
	}
	for i := range uint64(4) {
		if !c.Pop(&s) || !checkSeq(&s, i+1) {
			t.Fatalf("pop %d: wrong entry", i+1)
		}
	}
}

func TestRing_burstPartial(t *testing.T) {
	_, p, c := newTestRing(t, 8, 0)
	src := make([]Slot, 11)
	for i := range src {
		seqSlot(&src[i], uint64(i))
	}
	if n := p.PushBurst(src[:5]); n != 5 {
		t.Fatalf("PushBurst 5 = %d", n)
	}
	if n := p.PushBurst(src[5:]); n != 3 {
		t.Fatalf("PushBurst into 3 free = %d, want 3", n)
	}
	dst := make([]Slot, 6)
	if n := c.PopBurst(dst); n != 6 {
		t.Fatalf("PopBurst 6 = %d", n)
	}
	if n := p.PushBurst(src[8:]); n != 3 {
		t.Fatalf("PushBurst after pop = %d, want 3", n)
	}
	if n := c.PopBurst(dst[:0]); n != 0 {
		t.Fatalf("PopBurst into nothing = %d", n)
	}
	rest := make([]Slot, 16)
	n := c.PopBurst(rest)
	if n != 5 {
		t.Fatalf("PopBurst rest = %d, want 5", n)
	}
	got := append(dst, rest[:n]...)
	for i := range got {
		if !checkSeq(&got[i], uint64(i)) {
			t.Fatalf("entry %d wrong", i)
		}
	}
}

// The indices are free-running u64s: a ring started just below 2^64 must
// cross the wrap without noticing, for many laps of the slots.
func TestRing_wrapNear2to64(t *testing.T) {
	start := uint64(math.MaxUint64 - 20)
	mem, p, c := newTestRing(t, 8, start)
	var s Slot
	seq := uint64(0)
	next := uint64(0)
	for round := range 20 {
		k := 1 + round%8
		for range k {
			seqSlot(&s, seq)
			if !p.Push(&s) {
				t.Fatalf("round %d: push failed", round)
			}
			seq++
		}
		if c.Len() != k {
			t.Fatalf("round %d: Len %d, want %d", round, c.Len(), k)
		}
		for range k {
			if !c.Pop(&s) || !checkSeq(&s, next) {
				t.Fatalf("round %d: pop %d wrong", round, next)
			}
			next++
		}
	}
	if tailWord(mem) != start+seq || headWord(mem) != start+seq || tailWord(mem) > start {
		t.Fatalf("indices tail %d head %d after %d entries from %d: no wrap", tailWord(mem), headWord(mem), seq, start)
	}
	if p.Corrupt()+c.Corrupt() != 0 {
		t.Fatal("wrap counted as corruption")
	}
}

// A producer and a consumer goroutine pass millions of entries in seeded
// random bursts; every entry arrives once, in order, intact.
func TestRing_twoGoroutines(t *testing.T) {
	for _, tc := range []struct{ entries, total uint64 }{
		{1, 50_000}, // every entry is a hand-off: slow, few
		{64, 1 << 20},
		{1024, 4 << 20},
	} {
		entries, total := tc.entries, tc.total
		if raceEnabled || testing.Short() {
			total = min(total, 100_000)
		}
		start := time.Now()
		_, p, c := newTestRing(t, entries, math.MaxUint64-1000)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(1, entries))
			buf := make([]Slot, 64)
			for seq := uint64(0); seq < total; {
				k := min(uint64(1+rng.IntN(len(buf))), total-seq)
				for i := range k {
					seqSlot(&buf[i], seq+i)
				}
				var n int
				if rng.IntN(4) == 0 {
					if p.Push(&buf[0]) {
						n = 1
					}
				} else {
					n = p.PushBurst(buf[:k])
				}
				if n == 0 {
					runtime.Gosched()
				}
				seq += uint64(n)
			}
		}()
		rng := rand.New(rand.NewPCG(2, entries))
		buf := make([]Slot, 64)
		var bad error
		for seq := uint64(0); seq < total; {
			var n int
			if rng.IntN(4) == 0 {
				if c.Pop(&buf[0]) {
					n = 1
				}
			} else {
				n = c.PopBurst(buf[:1+rng.IntN(len(buf))])
			}
			if n == 0 {
				runtime.Gosched()
			}
			for i := range n {
				if bad == nil && !checkSeq(&buf[i], seq+uint64(i)) {
					bad = errors.New("entry out of order or torn")
					t.Errorf("entries %d: entry %d wrong", entries, seq+uint64(i))
				}
			}
			seq += uint64(n)
		}
		wg.Wait()
		if c.Len() != 0 || p.Corrupt()+c.Corrupt() != 0 {
			t.Errorf("entries %d: Len %d corrupt %d/%d at the end", entries, c.Len(), p.Corrupt(), c.Corrupt())
		}
		t.Logf("%d-entry ring: %d entries in %v", entries, total, time.Since(start).Round(time.Millisecond))
	}
}

func TestRing_corruptTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(head uint64) uint64
	}{
		{"beyond capacity", func(h uint64) uint64 { return h + 9 }},
		{"behind head", func(h uint64) uint64 { return h - 1 }},
		{"max", func(uint64) uint64 { return math.MaxUint64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, p, c := newTestRing(t, 8, 100)
			var s Slot
			seqSlot(&s, 7)
			p.Push(&s)
			if !c.Pop(&s) {
				t.Fatal("pop")
			}
			setTail(mem, tc.tail(101))
			dst := make([]Slot, 4)
			if c.Pop(&s) || c.PopBurst(dst) != 0 || c.Len() != 0 || c.Free() != 8 {
				t.Fatal("consumer used a corrupt tail")
			}
			if c.Corrupt() != 4 {
				t.Fatalf("Corrupt = %d, want 4", c.Corrupt())
			}
			// The producer repairs its index on its next push.
			seqSlot(&s, 8)
			if !p.Push(&s) || !c.Pop(&s) || !checkSeq(&s, 8) {
				t.Fatal("ring did not recover once the tail was sane")
			}
		})
	}
}

func TestRing_corruptHead(t *testing.T) {
	mem, p, c := newTestRing(t, 4, 0)
	var s Slot
	for i := range uint64(4) {
		seqSlot(&s, i)
		p.Push(&s)
	}
	setHead(mem, 5) // ahead of the tail: the consumer "popped" unpushed entries
	if p.Push(&s) || p.Free() != 0 || p.Len() != 4 {
		t.Fatalf("producer trusted a head ahead of its tail: Free %d", p.Free())
	}
	if p.Corrupt() != 3 {
		t.Fatalf("Corrupt = %d, want 3", p.Corrupt())
	}
	// A head moved backwards but in range only makes the ring look fuller.
	if !c.Pop(&s) || !checkSeq(&s, 0) {
		t.Fatal("pop")
	}
	setHead(mem, 0)
	if p.Push(&s) || p.Corrupt() != 3 {
		t.Fatalf("backwards head: Push should see a full ring, corrupt %d", p.Corrupt())
	}
}

// The consumer's own index lives in shared memory too, but the consumer
// never reads it back: scribbling on it changes what the producer sees,
// not which entry the consumer pops next.
func TestRing_privateIndex(t *testing.T) {
	mem, p, c := newTestRing(t, 8, 0)
	var s Slot
	for i := range uint64(3) {
		seqSlot(&s, i)
		p.Push(&s)
	}
	if c.Len() != 3 {
		t.Fatal("Len")
	}
	setHead(mem, 2)
	setTail(mem, 1000)
	if !c.Pop(&s) || !checkSeq(&s, 0) {
		t.Fatal("consumer followed the scribbled head")
	}
	if headWord(mem) != 1 {
		t.Fatalf("head republished as %d, want 1", headWord(mem))
	}
	seqSlot(&s, 3)
	if !p.Push(&s) || tailWord(mem) != 4 {
		t.Fatalf("producer followed the scribbled tail: %d", tailWord(mem))
	}
}

func TestRing_geometry(t *testing.T) {
	good := alignedBytes(int(RingBytes(8)))
	for _, tc := range []struct {
		name    string
		mem     []byte
		entries uint64
	}{
		{"zero entries", good, 0},
		{"not a power of two", alignedBytes(int(RingBytes(6))), 6},
		{"too many entries", good, MaxRingEntries * 2},
		{"short memory", good[:len(good)-1], 8},
		{"long memory", alignedBytes(len(good) + 64), 8},
		{"misaligned", alignedBytes(len(good) + 8)[8:], 8},
		{"empty", nil, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errP := NewProducer(tc.mem, tc.entries)
			_, errC := NewConsumer(tc.mem, tc.entries)
			errI := InitRing(tc.mem, tc.entries, 0)
			for _, err := range []error{errP, errC, errI} {
				if !errors.Is(err, ErrRingGeometry) {
					t.Errorf("err = %v, want ErrRingGeometry", err)
				}
			}
		})
	}
	if err := InitRing(good, 8, 0); err != nil {
		t.Fatal(err)
	}
	setTail(good, 9)
	if _, err := NewConsumer(good, 8); !errors.Is(err, ErrRingCorrupt) {
		t.Errorf("attach to corrupt ring: %v", err)
	}
	if _, err := NewProducer(good, 8); !errors.Is(err, ErrRingCorrupt) {
		t.Errorf("attach to corrupt ring: %v", err)
	}
}

func TestRing_waiting(t *testing.T) {
	_, p, c := newTestRing(t, 4, 0)
	if p.ConsumerWaiting() {
		t.Fatal("fresh ring has a waiter")
	}
	c.SetWaiting(true)
	if !p.ConsumerWaiting() {
		t.Fatal("flag not seen")
	}
	c.SetWaiting(false)
	if p.ConsumerWaiting() {
		t.Fatal("flag not cleared")
	}
}

func TestRing_allocs(t *testing.T) {
	_, p, c := newTestRing(t, 64, 0)
	var s Slot
	burst := make([]Slot, 16)
	if n := testing.AllocsPerRun(1000, func() {
		p.Push(&s)
		c.Pop(&s)
		p.PushBurst(burst)
		c.PopBurst(burst)
		_ = p.Len() + c.Len() + p.Free() + c.Free()
	}); n != 0 {
		t.Fatalf("%v allocations per Push/Pop round", n)
	}
}

// A hostile producer writes random indices and slot bytes between the
// consumer's calls (and a hostile consumer scribbles on the head between
// the producer's). Neither end may panic, claim more than Entries
// entries, or stop working once the indices are sane again.
func TestRing_garbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		ops := make([]byte, 256)
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		runGarbage(t, ops)
	}
}

// runGarbage drives a ring of 8 entries with the operations encoded in
// ops and checks the invariants; it is shared with FuzzRingGarbage.
func runGarbage(t *testing.T, ops []byte) {
	mem, p, c := newTestRing(t, 8, math.MaxUint64-4)
	var s Slot
	burst := make([]Slot, 12)
	lim := Limits{ArenaSize: 1 << 16, PoolPages: 4, MaxMessage: 1 << 20}
	for len(ops) >= 9 {
		op, arg := ops[0], binary.LittleEndian.Uint64(ops[1:9])
		ops = ops[9:]
		switch op % 8 {
		case 0:
			setTail(mem, arg)
		case 1:
			setHead(mem, arg)
		case 2: // a small move of the tail, more likely to look sane
			setTail(mem, tailWord(mem)+arg%20-10)
		case 3:
			off := RingHeaderSize + int(arg%uint64(len(mem)-RingHeaderSize-8))
			binary.LittleEndian.PutUint64(mem[off:], arg)
		case 4:
			if c.Pop(&s) {
				sub, code := ParseSubmission(&s, &lim)
				if code == ErrCodeNone && sub.Validate(&lim) != ErrCodeNone {
					t.Fatal("ParseSubmission accepted what Validate refuses")
				}
			}
		case 5:
			if n := c.PopBurst(burst[:arg%uint64(len(burst))]); n > 8 {
				t.Fatalf("PopBurst returned %d from an 8-entry ring", n)
			}
		case 6:
			p.Push(&s)
		case 7:
			if n := p.PushBurst(burst[:arg%uint64(len(burst))]); n > 8 {
				t.Fatalf("PushBurst took %d into an 8-entry ring", n)
			}
		}
		if l := c.Len(); l < 0 || l > 8 {
			t.Fatalf("consumer Len %d", l)
		}
		if l := p.Len(); l < 0 || l > 8 {
			t.Fatalf("producer Len %d", l)
		}
	}
	// Sane again: write back the ends' private indices and forget the
	// cached (possibly forged) views of the other end. If the private
	// indices are consistent (the consumer did not follow a forged tail
	// past what was really pushed), the ring must work end to end.
	if p.tail-c.head > 8 {
		return
	}
	c.tail, p.head = c.head, c.head
	setHead(mem, c.head)
	setTail(mem, p.tail)
	want := int(p.tail - c.head)
	for c.Pop(&s) {
		want--
	}
	pushed := 0
	for p.Push(&s) {
		pushed++
	}
	if want != 0 || pushed != 8 || c.Len() != 8 {
		t.Fatalf("after recovery: %d left unpopped, %d pushed, Len %d", want, pushed, c.Len())
	}
}
