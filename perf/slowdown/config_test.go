package slowdown

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Each workload gets the rate at which its highest load offers RPCRate
// RPCs per second, capped by RateBps; the protocol and the queues follow
// the rate.
func TestRateFor_perWorkload(t *testing.T) {
	cfg := DefaultConfig()
	for _, c := range []struct {
		w         string
		lo, hi    float64 // Mb/s
		rpcPerSec float64
		atRateCap bool
	}{{"W1", 4, 4.5, 1500, false}, {"W2", 7.5, 8.5, 1500, false}, {"W3", 39, 40.5, 1500, false}, {"W4", 200, 200, 0, true}, {"W5", 200, 200, 0, true}} {
		w, _ := workload.LoadWorkload(c.w)
		w = w.Clamp(cfg.MaxMessage)
		r := rateFor(cfg, w)
		if r < c.lo*1e6 || r > c.hi*1e6 {
			t.Errorf("%s: rate %.3f Mb/s, want %g..%g", c.w, r/1e6, c.lo, c.hi)
		}
		rps := 0.8 * r / 8 / w.Mean(workload.HomaWireBytes)
		if !c.atRateCap && math.Abs(rps-c.rpcPerSec) > 2 {
			t.Errorf("%s: %.1f RPC/s at 80%%, want %g", c.w, rps, c.rpcPerSec)
		}
		if c.atRateCap && rps >= cfg.RPCRate {
			t.Errorf("%s: %.1f RPC/s at the rate cap", c.w, rps)
		}
	}
	cfg.RPCRate = 0
	w, _ := workload.LoadWorkload("W1")
	if r := rateFor(cfg, w); r != cfg.RateBps {
		t.Errorf("RPCRate 0: rate %g, want --rate", r)
	}
	if l := bandLimit(40e6); l != 250_000 {
		t.Errorf("band limit at 40 Mb/s: %d bytes, want 50 ms = 250000", l)
	}
	if l := bandLimit(1e6); l != 16*1514 {
		t.Errorf("band limit at 1 Mb/s: %d bytes, want 16 frames", l)
	}
	p := Protocol(4.2e6)
	for _, want := range []string{fmt.Sprintf("unsched_bytes: %d\n", 2*workload.HomaPerPacketPayload), fmt.Sprintf("max_incoming: %d\n", 8*workload.HomaPerPacketPayload), "resend_ticks: 100\n", "request_ack_ticks: 100\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("Protocol(4.2 Mb/s) lacks %q:\n%s", want, p)
		}
	}
	if p := Protocol(200e6); !strings.Contains(p, "unsched_bytes: 25000\n") {
		t.Errorf("Protocol(200 Mb/s):\n%s", p)
	}
}
