package perf

import (
	"testing"
	"time"
)

// measure checks its time limits after every round trip: slow round
// trips stop at the least warm-up and count, not at the next multiple
// of 64.
func TestMeasure_slowRoundTrips(t *testing.T) {
	calls := 0
	rt := func() error {
		calls++
		time.Sleep(20 * time.Millisecond)
		return nil
	}
	t0 := time.Now()
	h, err := Measure(rt, 1000, 20000, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != MinRecorded || calls != MinWarmup+MinRecorded {
		t.Errorf("%d recorded of %d round trips, want %d after %d warm-up", h.TotalCount(), calls, MinRecorded, MinWarmup)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("took %v", el)
	}

	// Fast ones go to the count.
	calls = 0
	h, err = Measure(func() error { calls++; return nil }, 50, 200, time.Minute, nil)
	if err != nil || h.TotalCount() != 200 || calls != 250 {
		t.Errorf("fast: %d recorded of %d calls (%v)", h.TotalCount(), calls, err)
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{3, 1, 2}
	if Median(xs) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 || xs[0] != 3 {
		t.Errorf("median: %v %v %v, xs %v", Median(xs), Median([]float64{4, 1, 3, 2}), Median(nil), xs)
	}
}

// Sizes of 10^3 and 10^6 bytes are KB and MB; powers of two (NCCL's and
// torch's tensors) KiB and MiB, as the jobs' reports write them.
func TestSizeName_decimalAndBinary(t *testing.T) {
	for n, want := range map[int]string{4: "4 B", 100: "100 B", 100_000: "100 KB", 1_000_000: "1 MB", 64_000_000: "64 MB",
		1 << 10: "1 KiB", 256 << 10: "256 KiB", 64 << 20: "64 MiB"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}
