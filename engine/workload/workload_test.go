package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestWorkload_loadAndDraw(t *testing.T) {
	for _, name := range []string{"W1", "W2", "W3", "W4", "W5"} {
		w, err := LoadWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.CDF[len(w.CDF)-1] != 1 || w.Sizes[0] < 1 {
			t.Errorf("%s: bad CDF or sizes", name)
		}
		c := w.Clamp(1_000_000)
		if c.Max() > 1_000_000 || c.CDF[len(c.CDF)-1] != 1 {
			t.Errorf("%s clamped: max %d", name, c.Max())
		}
	}
	if _, err := LoadWorkload("W9"); err == nil {
		t.Error("W9 loaded")
	}
	w, err := ParseWorkload("T", strings.NewReader("length_bytes,relative_frequency\n10,1\n100,3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Quantile(0.2) != 10 || w.Quantile(0.3) != 100 || w.Mean(func(s int) float64 { return float64(s) }) != 77.5 {
		t.Errorf("quantiles/mean wrong: %v %v", w.Sizes, w.CDF)
	}
}

// The arrivals offer the asked load: their wire bytes over the period.
func TestPoissonArrivals_offerTheLoad(t *testing.T) {
	w, _ := LoadWorkload("W2")
	period := 20 * time.Second
	arr := PoissonArrivals(w, 3, period, 1e9, 0.8, 1)
	bytes := 0.0
	for _, c := range arr {
		for i, a := range c {
			if i > 0 && a.At < c[i-1].At {
				t.Fatal("arrivals out of order")
			}
			bytes += HomaWireBytes(a.Size)
		}
	}
	got := bytes * 8 / period.Seconds() / 1e9
	if math.Abs(got-0.8) > 0.04 {
		t.Errorf("offered load %.3f, want 0.8", got)
	}
}

// Messages go between two distinct hosts, in time order, at the asked
// rate into each host, and the same seed draws the same messages.
func TestMessages_betweenDistinctHostsAtTheRate(t *testing.T) {
	w, _ := LoadWorkload("W3")
	draw := func() []Message { return w.Messages(rand.New(rand.NewPCG(1, 2)), 4, 20_000, 1000) }
	ms := draw()
	for i, m := range ms {
		if m.Src == m.Dst || m.Src < 0 || m.Dst < 0 || m.Src >= 4 || m.Dst >= 4 {
			t.Fatalf("message %d: %d -> %d", i, m.Src, m.Dst)
		}
		if i > 0 && m.At < ms[i-1].At {
			t.Fatal("messages out of order")
		}
	}
	// 4,000 messages a second in all: 20,000 take about 5 s.
	if got := float64(ms[len(ms)-1].At) / 1e9; math.Abs(got-5) > 0.25 {
		t.Errorf("20,000 messages at 4,000/s took %.2f s", got)
	}
	if again := draw(); again[len(again)-1] != ms[len(ms)-1] {
		t.Error("the same seed drew other messages")
	}
}
