package sched

import "testing"

// w1Like records lengths shaped as the Homa paper's W1 (Facebook's
// memcached): half the messages under 20 bytes, nearly all under 1 KB,
// spread evenly over each range.
func w1Like() *Histogram {
	var h Histogram
	lo := 2
	for _, x := range []struct{ upTo, per100k int }{
		{8, 33_000}, {15, 16_000}, {25, 3_000}, {45, 5_000}, {80, 7_000}, {140, 10_000}, {250, 11_000},
		{450, 8_000}, {800, 5_000}, {1400, 2_500}, {2500, 800}, {4500, 250}, {8000, 50}, {30_000, 20},
	} {
		for i := range x.per100k {
			h.Record(lo + (x.upTo-lo)*i/x.per100k)
		}
		lo = x.upTo + 1
	}
	return &h
}

var testBalanced = BalancedCutoffs{UnschedBytes: 10_000, Payload: 1424, Overhead: 114, Load: 0.8}

func TestComputeCutoffsBalanced_beatsEqualBytesInItsModel(t *testing.T) {
	h := w1Like()
	eq := ComputeCutoffs(h, 10_000, 7, 100_000)
	bal := ComputeCutoffsBalanced(h, 7, 100_000, testBalanced)
	m := newBalancedModel(h, 100_000, testBalanced)
	pe, pb := m.p99(m.ends(eq)), m.p99(m.ends(bal))
	t.Logf("equal bytes %v: predicted P99 slowdown 1+%.3f; balanced %v: 1+%.3f", eq, pe, bal, pb)
	if !(pb < pe-0.005) {
		t.Fatalf("balanced cutoffs predict %.3f, equal bytes %.3f: want less", pb, pe)
	}
	if bal[1] != 100_000 || bal[0] != 0 {
		t.Fatalf("cutoffs %v: want 7 levels, the last 100,000", bal)
	}
	for p := 2; p < NumPriorities; p++ {
		if bal[p] == 0 || bal[p] >= bal[p-1] {
			t.Fatalf("cutoffs %v not increasing toward lower levels", bal)
		}
	}
	// A local minimum: moving any one cutoff to the next length does not
	// predict better.
	ends := m.ends(bal)
	for k := 0; k < len(ends)-1; k++ {
		for _, d := range []int{-1, 1} {
			e := append([]int(nil), ends...)
			e[k] += d
			if (k > 0 && e[k] <= e[k-1]) || e[k] >= e[k+1] || e[k] < 1 {
				continue
			}
			if v := m.p99(e); v < pb-1e-9 {
				t.Errorf("level %d's end moved by %d predicts %.4f < %.4f", k, d, v, pb)
			}
		}
	}
}

func TestComputeCutoffsBalanced_edges(t *testing.T) {
	var h Histogram
	if ComputeCutoffsBalanced(&h, 4, 1_000_000, testBalanced) != DefaultCutoffs() {
		t.Fatal("empty histogram: want the defaults")
	}
	for range 100 {
		h.Record(1 << 20) // nothing fits in the unscheduled bytes
	}
	if got, want := ComputeCutoffsBalanced(&h, 4, 1<<20, testBalanced), ComputeCutoffs(&h, 10_000, 4, 1<<20); got != want {
		t.Fatalf("only long messages: %v, want the equal-byte split %v", got, want)
	}
	h.Record(100)
	if c := ComputeCutoffsBalanced(&h, 1, 1<<20, testBalanced); c != (Cutoffs{7: 1 << 20}) {
		t.Fatalf("one level: %v", c)
	}
}
