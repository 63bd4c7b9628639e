package enginebench

import (
	"fmt"
	"testing"
)

// Two hosts sharded alike run each case on two shards at once: every
// RPC completes, and no frame or ack crosses shards.
func TestSharded_casesCompleteOnTwoShards(t *testing.T) {
	for _, c := range Cases {
		s, err := NewSharded(c, 2)
		if err != nil {
			t.Fatal(err)
		}
		n := 200
		if c.ReqLen > 100_000 {
			n = 8
		}
		r, err := s.Measure(n)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if r.RPCs != 2*n || r.NsPerPkt <= 0 {
			t.Errorf("%s: %+v", c.Name, r)
		}
	}
}

// BenchmarkSharded runs each case on 1 and 2 shards a host, each shard
// on its own goroutine: b.N RPCs per shard (RPCs/s: the sum of shards).
func BenchmarkSharded(b *testing.B) {
	for _, c := range Cases {
		for _, shards := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%dshards", c.Name, shards), func(b *testing.B) {
				s, err := NewSharded(c, shards)
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				r, err := s.Measure(b.N)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.RPCs)/r.Seconds, "rpcs/s")
				if r.Gbps > 0 {
					b.ReportMetric(r.Gbps, "Gbps")
				}
				b.ReportMetric(r.NsPerPkt, "ns/pkt-core")
			})
		}
	}
}
