package wire

import (
	"bytes"
	"testing"
	"testing/quick"
)

func TestCutoffs_offsets(t *testing.T) {
	c := Cutoffs(make([]byte, CutoffsHeaderLen))
	for i := 0; i < NumPriorities; i++ {
		c.SetCutoff(i, uint32(i+1)<<24|uint32(i+1))
	}
	c.SetVersion(0xabcd)
	want := mustHex(t, `01 00 00 01 02 00 00 02 03 00 00 03 04 00 00 04
	                    05 00 00 05 06 00 00 06 07 00 00 07 08 00 00 08 ab cd`)
	if got := c[CommonHeaderLen:]; !bytes.Equal(got, want) {
		t.Errorf("bytes 28..61 =\n% x\nwant\n% x", []byte(got), want)
	}
	if !c.IsValid() || Cutoffs(c[:CutoffsHeaderLen-1]).IsValid() {
		t.Errorf("IsValid wrong at 62/61 bytes")
	}
}

func TestCutoffsFields_kernelDefaults(t *testing.T) {
	// The kernel's default cutoffs: [7]=200, [6]=2800, [5]=15000,
	// [4]=1,000,000; entry 0 is ignored but still sent.
	f := CutoffsFields{Cutoffs: [NumPriorities]uint32{0x7fffffff, 0, 0, 0, MaxMessageLength, 15000, 2800, 200}, Version: 1}
	b := make([]byte, CutoffsHeaderLen)
	if n := f.Encode(b); n != CutoffsHeaderLen {
		t.Fatalf("Encode = %d", n)
	}
	c := Cutoffs(b)
	if c.Cutoff(7) != 200 || c.Cutoff(4) != 1_000_000 || c.Version() != 1 || c.Common().Type() != TypeCutoffs {
		t.Errorf("decoded %+v", c.Fields())
	}
}

func TestCutoffsFields_roundTrip(t *testing.T) {
	check := func(f CutoffsFields) bool {
		b := make([]byte, CutoffsHeaderLen)
		if f.Encode(b) != CutoffsHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeCutoffs)
		return Common(b).Type() == TypeCutoffs && Cutoffs(b).Fields() == want
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestCutoffsFields_shortBuffer(t *testing.T) {
	f := CutoffsFields{Version: 1}
	b := make([]byte, CutoffsHeaderLen-1)
	if n := f.Encode(b); n != 0 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Errorf("Encode into 61 bytes = %d and wrote % x", n, b)
	}
}

func TestCutoffs_indexOutOfRangePanics(t *testing.T) {
	c := Cutoffs(make([]byte, CutoffsHeaderLen+8)) // room after the array must not be reachable
	for _, i := range []int{-1, NumPriorities} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Cutoff(%d) did not panic", i)
				}
			}()
			c.Cutoff(i)
		}()
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetCutoff(%d) did not panic", i)
				}
			}()
			c.SetCutoff(i, 1)
		}()
	}
}
