package slowdown

import (
	"math"
	"testing"
	"time"
)

func TestUnloaded_interpolatesAndBuckets(t *testing.T) {
	u := &Unloaded{Sizes: []int{100, 10_000}, RTTUs: []float64{10, 1000}}
	for _, c := range []struct {
		size int
		want float64
	}{{50, 10}, {100, 10}, {1000, 100}, {10_000, 1000}, {20_000, 1000}} {
		if got := u.At(c.size); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("At(%d) = %g, want %g", c.size, got, c.want)
		}
	}
	var s []Sample
	for i := 1; i <= 100; i++ {
		s = append(s, Sample{Size: 100, RTT: time.Duration(i*10) * time.Microsecond})
	}
	s = append(s, Sample{Size: 9000, RTT: 2 * time.Millisecond})
	b := Buckets(s, u)
	if len(b) != 2 || b[0].Count != 100 || b[0].P50 != 50 || b[0].P99 != 99 || b[1].Count != 1 {
		t.Errorf("buckets: %+v", b)
	}
	if sh := Short(s, u); sh == nil || sh.Count != 100 {
		t.Errorf("short: %+v", sh)
	}
	if r, err := ParseTCRate("500mbit"); err != nil || r != 500e6 {
		t.Errorf("ParseTCRate: %v %v", r, err)
	}
}
