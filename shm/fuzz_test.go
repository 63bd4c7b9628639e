package shm

import (
	"encoding/binary"
	"testing"
)

// FuzzRingGarbage: the fuzzer's bytes are a program of garbage writes to
// a ring's indices and slots interleaved with pushes, pops and parses
// (runGarbage). Neither end may panic, read outside the ring, or report
// more than its capacity; the parsers must agree with Validate.
//
//	go test -run '^$' -fuzz FuzzRingGarbage -fuzztime 20s ./shm/
func FuzzRingGarbage(f *testing.F) {
	seed := func(ops ...uint64) []byte {
		var b []byte
		for i := 0; i+1 < len(ops); i += 2 {
			b = append(b, byte(ops[i]))
			b = binary.LittleEndian.AppendUint64(b, ops[i+1])
		}
		return b
	}
	f.Add(seed(6, 0, 6, 0, 4, 0, 5, 3))
	f.Add(seed(0, 1<<63, 4, 0, 5, 7, 1, 3, 6, 0, 7, 11))
	f.Add(seed(2, 13, 4, 0, 3, 0x0102030405060708, 4, 0, 5, 9))
	f.Add(seed(1, ^uint64(0), 7, 8, 6, 0, 0, ^uint64(0)-3, 5, 8))
	f.Fuzz(func(t *testing.T, ops []byte) {
		runGarbage(t, ops)
		// Any slot contents: parsing never panics and accepts only what
		// Validate accepts.
		for len(ops) >= EntrySize {
			slot := (*Slot)(ops[:EntrySize])
			ops = ops[EntrySize:]
			if s, code := ParseSubmission(slot, &testLimits); code == ErrCodeNone && s.Validate(&testLimits) != ErrCodeNone {
				t.Fatalf("ParseSubmission accepted %+v", s)
			}
			if c, code := ParseCompletion(slot, &testLimits); code == ErrCodeNone &&
				(c.Op == CompRequest || c.Op == CompResponse) && uint64(c.Page)+uint64(c.Pages) > testLimits.PoolPages {
				t.Fatalf("ParseCompletion accepted pages outside the pool: %+v", c)
			}
		}
	})
}
