package cluster

import (
	"math"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// A message alone in the cluster takes the link math's time (within 1%,
// and never less), within a rack and across it, from one packet to a
// thousand: the slowdowns' reference is what the engine does on an idle
// network, not a bound it cannot reach.
func TestIdle_matchesSimulation(t *testing.T) {
	cfg := SmokeConfig()
	s, err := newSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 100, 1000, 1500, 5000, 10_000, 30_000, 100_000, 1_000_000} {
		for _, dst := range []int{1, cfg.HostsPerRack + 1} { // same rack as host 0; the next rack
			before := len(s.samples)
			s.send(workload.Message{Src: 0, Dst: dst, Size: size}, true)
			s.net.RunUntil(s.net.Now() + 200_000_000)
			if len(s.samples) != before+1 {
				t.Fatalf("%d bytes to host %d: not delivered (%v)", size, dst, s.errs)
			}
			got := s.samples[len(s.samples)-1]
			if r := float64(got.Ns) / float64(got.IdleNs); r < 1 || r > 1.01 || math.IsNaN(r) {
				t.Errorf("%d bytes to host %d: %d ns simulated, link math %d ns (%.4f)", size, dst, got.Ns, got.IdleNs, r)
			}
		}
	}
	if s.nerrs != 0 {
		t.Fatalf("errors: %v", s.errs)
	}
}
