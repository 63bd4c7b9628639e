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
	var msgs []workload.Msg
	for _, size := range []int{1, 100, 1000, 1500, 5000, 10_000, 30_000, 100_000, 1_000_000} {
		for _, dst := range []int{1, cfg.HostsPerRack + 1} { // same rack as host 0; the next rack
			msgs = append(msgs, workload.Msg{Message: workload.Message{Src: 0, Dst: dst, Size: size}, Op: -1, After: -1})
		}
	}
	wl, _ := workload.LoadWorkload(cfg.Workload)
	s, err := newSim(cfg, wl, msgs)
	if err != nil {
		t.Fatal(err)
	}
	idle := newIdle(cfg)
	for i, m := range msgs {
		s.send(int32(i))
		s.net.RunUntil(s.net.Now() + 200_000_000)
		if s.doneAt[i] < 0 {
			t.Fatalf("%d bytes to host %d: not delivered (%v)", m.Size, m.Dst, s.errs)
		}
		got, want := s.doneAt[i]-s.startAt[i], idle.ns(m.Size, m.Dst >= cfg.HostsPerRack)
		if r := float64(got) / float64(want); r < 1 || r > 1.01 || math.IsNaN(r) {
			t.Errorf("%d bytes to host %d: %d ns simulated, link math %d ns (%.4f)", m.Size, m.Dst, got, want, r)
		}
	}
	if s.nerrs != 0 {
		t.Fatalf("errors: %v", s.errs)
	}
}
