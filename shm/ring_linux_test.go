package shm

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// The ring over real shared memory: one memfd mapped twice, at two
// addresses, as the daemon and a worker would map it. The producer uses
// one mapping and the consumer the other.
func TestRing_memfdTwoMappings(t *testing.T) {
	l, err := NewLayout(Params{SQEntries: 256, CQEntries: 256, ArenaSize: 4096, PoolPages: 1})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.MemfdCreate("homa-shm-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(l.RegionSize)); err != nil {
		t.Fatal(err)
	}
	mapRegion := func() []byte {
		b, err := unix.Mmap(fd, 0, int(l.RegionSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(b) })
		return b
	}
	engine, worker := mapRegion(), mapRegion()
	if &engine[0] == &worker[0] {
		t.Fatal("one mapping, not two")
	}
	if err := l.WriteHeader(engine); err != nil {
		t.Fatal(err)
	}
	if err := InitRing(l.SQ(engine), l.SQEntries, 0); err != nil {
		t.Fatal(err)
	}
	wl, err := ParseHeader(worker)
	if err != nil || wl != l {
		t.Fatalf("worker parsed %+v, %v", wl, err)
	}
	cons, err := NewConsumer(l.SQ(engine), l.SQEntries)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := NewProducer(wl.SQ(worker), wl.SQEntries)
	if err != nil {
		t.Fatal(err)
	}
	const total = 1 << 18
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s Slot
		for seq := uint64(0); seq < total; {
			seqSlot(&s, seq)
			if prod.Push(&s) {
				seq++
			} else {
				runtime.Gosched()
			}
		}
	}()
	// Keep draining after a bad entry: the producer must finish before
	// the cleanup unmaps its memory.
	buf := make([]Slot, 32)
	bad := 0
	for seq := uint64(0); seq < total; {
		n := cons.PopBurst(buf)
		if n == 0 {
			runtime.Gosched()
		}
		for i := range n {
			if !checkSeq(&buf[i], seq) && bad == 0 {
				bad++
				t.Errorf("entry %d wrong", seq)
			}
			seq++
		}
	}
	wg.Wait()
}
