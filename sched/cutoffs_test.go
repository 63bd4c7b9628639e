package sched

import (
	"math/rand/v2"
	"testing"
)

func TestCutoffs_defaultPriorities(t *testing.T) {
	c := DefaultCutoffs()
	for _, tc := range []struct{ length, prio int }{
		{1, 7}, {200, 7}, {201, 6}, {2800, 6}, {2801, 5}, {15000, 5}, {15001, 4}, {1_000_000, 4}, {1_000_001, 0},
	} {
		if got := c.Priority(tc.length); got != tc.prio {
			t.Errorf("Priority(%d) = %d, want %d", tc.length, got, tc.prio)
		}
	}
	if c.MaxSchedPrio() != 3 {
		t.Errorf("MaxSchedPrio = %d", c.MaxSchedPrio())
	}
	p := PeerDefaultCutoffs()
	if p.Priority(1) != 6 || p.Priority(1_000_000) != 6 {
		t.Error("before CUTOFFS every message goes at 6")
	}
}

func TestHistogram_bucketsCoverLengths(t *testing.T) {
	for n := uint64(1); n < 1<<31; n = n*5/4 + 1 {
		b := histBucket(n)
		if histUpper(b) < n || b > 0 && histUpper(b-1) >= n {
			t.Fatalf("length %d in bucket %d [%d, %d]", n, b, histUpper(b-1)+1, histUpper(b))
		}
		if float64(histUpper(b)) > float64(n)*1.14+1 {
			t.Fatalf("bucket of %d too wide: upper %d", n, histUpper(b))
		}
	}
}

func TestComputeCutoffs_equalUnscheduledBytesPerLevel(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	lengths := make([]int, 100_000)
	for i := range lengths {
		lengths[i] = 1 + int(r.ExpFloat64()*3000)
		h.Record(lengths[i])
	}
	c := ComputeCutoffs(&h, 40_000, 4, 1_000_000)
	if c[4] != 1_000_000 || c[3] != 0 {
		t.Fatalf("cutoffs %v: want 4 levels 7..4, last 1,000,000", c)
	}
	if !(c[7] < c[6] && c[6] < c[5] && c[5] < c[4]) {
		t.Fatalf("cutoffs not increasing: %v", c)
	}
	var per [NumPriorities]int
	total := 0
	for _, n := range lengths {
		u := min(n, 40_000)
		per[c.Priority(n)] += u
		total += u
	}
	for p := 4; p <= 7; p++ {
		share := float64(per[p]) / float64(total)
		if share < 0.18 || share > 0.32 {
			t.Errorf("priority %d carries %.2f of unscheduled bytes (cutoffs %v)", p, share, c)
		}
	}
	if c.MaxSchedPrio() != 3 {
		t.Errorf("MaxSchedPrio %d", c.MaxSchedPrio())
	}
}

func TestComputeCutoffs_emptyGivesDefaults(t *testing.T) {
	var h Histogram
	if ComputeCutoffs(&h, 40_000, 4, 1_000_000) != DefaultCutoffs() {
		t.Fatal("empty histogram")
	}
}

func TestHistogram_recordAllocatesNothing(t *testing.T) {
	var h Histogram
	if a := testing.AllocsPerRun(100, func() { h.Record(12345) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}
