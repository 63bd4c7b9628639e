package shm

import "testing"

// alignedBytes returns n zero bytes starting on a cache line, as mmapped
// memory would.
func alignedBytes(n int) []byte {
	b := make([]byte, n+CacheLine)
	for i := range CacheLine {
		if isAligned(b[i:], CacheLine) {
			return b[i : i+n : i+n]
		}
	}
	panic("no aligned offset")
}

// newTestRing initialises a ring of entries slots with both indices at
// start and attaches both ends.
func newTestRing(t testing.TB, entries, start uint64) ([]byte, *Producer, *Consumer) {
	t.Helper()
	mem := alignedBytes(int(RingBytes(entries)))
	if err := InitRing(mem, entries, start); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(mem, entries)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(mem, entries)
	if err != nil {
		t.Fatal(err)
	}
	return mem, p, c
}

// seqSlot fills s with a pattern derived from seq: every 8-byte word
// differs, so a torn or misplaced entry shows.
func seqSlot(s *Slot, seq uint64) {
	for w := range EntrySize / 8 {
		v := seq ^ uint64(w)*0x9e3779b97f4a7c15
		for b := range 8 {
			s[w*8+b] = byte(v >> (8 * b))
		}
	}
}

// checkSeq reports whether s holds seqSlot's pattern for seq.
func checkSeq(s *Slot, seq uint64) bool {
	var want Slot
	seqSlot(&want, seq)
	return *s == want
}
