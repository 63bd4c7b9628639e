package engine

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// passNet runs test endpoints the way a polling loop does: each pass, at
// a clock 1 µs later, every host takes what was sent to it as one batch
// (BeginBatch, Receive each, EndBatch), then runs its timers if due.
type passNet struct{ *testNet }

func (n passNet) pass() {
	n.now += 1000
	for _, h := range n.hosts {
		var in [][]byte
		for _, o := range n.hosts {
			keep := o.out[:0]
			for _, sf := range o.out {
				if wire.IPv4(sf.frame[ipOffsetOf(sf.frame):]).Dst() == h.ip {
					in = append(in, sf.frame)
				} else {
					keep = append(keep, sf)
				}
			}
			o.out = keep
		}
		if len(in) > 0 {
			h.e.BeginBatch(n.now)
			for _, f := range in {
				h.e.Receive(f)
			}
			h.e.EndBatch()
		}
		if n.now >= h.e.NextDeadline() {
			h.e.Run()
		}
	}
}

// A 100 KB request, paced at 100 Gb/s with a 5 µs NIC queue, received
// in batches: its GRANT comes after the whole unscheduled burst, and the
// rest goes out and arrives within passes, not at the next timer tick.
func TestBatch_grantedMessageCompletesWithoutTick(t *testing.T) {
	n := passNet{newTestNet(t)}
	paced := func(c *Config) { c.LinkBps, c.MaxNICQueueNs = 100e9, 5000 }
	a := n.addHost("a", 1, paced)
	b := n.addHost("b", 2, paced)
	srv, err := b.e.Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := a.e.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Send(Addr{IP: netip.AddrFrom4(b.ip), Port: 99}, msg(100_000, 1)); err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // 200 µs, a fifth of a tick
		n.pass()
		if m, ok := srv.Receive(); ok {
			if len(m.Data) != 100_000 {
				t.Fatalf("request of %d bytes", len(m.Data))
			}
			t.Logf("request complete after %d passes", i+1)
			// One GRANT for the batch of 29 unscheduled packets, not 29.
			if g := strings.Count(n.takeLog(), "GRANT"); g != 1 {
				t.Errorf("%d GRANTs, want 1", g)
			}
			return
		}
	}
	t.Fatalf("request incomplete after 200 passes:\n%s", n.takeLog())
}
