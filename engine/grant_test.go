package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

func TestGrant_shorterMessageGetsHigherLevel(t *testing.T) {
	n := newTestNet(t)
	mod := func(c *Config) { smallPackets(c); c.Grant.MaxIncoming = 20_000 }
	c := n.addHost("c", 1, mod)
	s := n.addHost("s", 2, mod)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	cli.Send(dst, msg(30_000, 1))
	cli.Send(dst, msg(10_000, 2))
	n.flush()
	log := n.takeLog()
	// Alone, the long message gets window 20,000/2 at the lowest level;
	// once the short one arrives, two are active (window 6,666): the
	// short one at level 1, the long one at level 0.
	for _, want := range []string{
		"s: xmit GRANT 11000@0\ns: xmit GRANT 12000@0\ns: xmit GRANT 13000@0\ns: xmit GRANT 7666@1",
		"c: xmit DATA 1000@3000 p1",
		"s: xmit GRANT 10000@1\ns: xmit GRANT 23000@0", // short fully granted: long alone again
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestGrant_keepaliveWhileWaitingForOthers(t *testing.T) {
	n := newTestNet(t)
	mod := func(c *Config) { ownResends(c); c.Grant.MaxOvercommit = 1 } // retransmissions at p0, which the drop below takes
	c := n.addHost("c", 1, mod)
	s := n.addHost("s", 2, mod)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	// The long message gets its first grants, then the shorter one takes
	// the only overcommit slot; the shorter one's scheduled bytes are
	// lost for a long time, so the long one has every granted byte and
	// waits.
	cli.Send(dst, msg(20_000, 1))
	cli.Send(dst, msg(6000, 2))
	scheduled := 0
	n.drop = func(l string) bool {
		if strings.HasPrefix(l, "c: xmit DATA") && strings.HasSuffix(l, "p0") {
			scheduled++
			return scheduled > 3
		}
		return false
	}
	n.flush()
	n.advance(150_000_000) // far past the timeout
	if c.e.Metrics().RPCTimeouts != 0 || s.e.Metrics().GrantKeepalives < 10 {
		t.Fatalf("timeouts %d keepalives %d", c.e.Metrics().RPCTimeouts, s.e.Metrics().GrantKeepalives)
	}
	n.drop = nil
	n.advance(20_000_000)
	a, b := receive(t, srv), receive(t, srv)
	if len(a.Data)+len(b.Data) != 26_000 {
		t.Fatal("lengths")
	}
}

// A GRANT the Transmitter has no buffer for is owed and sent on the next
// Run, not left for the receiver's RESEND five ticks later: the grant
// scheduler counted it as given and would not grant those bytes again.
func TestGrant_owedWhileTransmitterBusySentOnNextRun(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(7500, 1)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	s.busy = true // the server's TX queues are backed up
	n.flush()
	wantLog(t, n, `
		c: xmit DATA 1000@0 p6
		c: xmit DATA 1000@1000 p6
		c: xmit DATA 1000@2000 p6
		s: busy
		s: busy
		s: busy
		s: busy
		s: busy
		s: busy`) // CUTOFFS and GRANT, for each packet
	if d := s.e.NextDeadline(); d != n.now+1 {
		t.Fatalf("next deadline %d ns from now; want the next pass", d-n.now)
	}
	s.busy = false
	n.now++
	s.e.Run()
	n.flush()
	// One GRANT with the latest offset; the rest flows as usual.
	wantLog(t, n, `
		s: xmit GRANT 5500@0
		c: xmit DATA 1000@3000 p0
		c: xmit DATA 1000@4000 p0
		c: xmit DATA 1000@5000 p0
		s: xmit CUTOFFS v1
		s: xmit GRANT 6500@0
		s: xmit GRANT 7500@0
		c: xmit DATA 1000@6000 p0
		c: xmit DATA 500@7000 p0`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("bytes differ")
	}
	if len(s.e.owedGrants) != 0 || s.e.NextDeadline() != s.e.nextTick {
		t.Fatalf("%d grants still owed", len(s.e.owedGrants))
	}
}

// With the default grant increment (10,000 bytes), a receiver taking a
// 1 MB message one packet at a time sends a GRANT every 8 DATA packets
// of 1,424 bytes (7 raise it by only 9,968), not one per packet: after
// the first GRANT opens the window (200,000 bytes), about 800,000 / 11,392
// more. The message arrives whole.
func TestGrant_incrementSpacesGrants(t *testing.T) {
	n := newTestNet(t)
	dflt := func(c *Config) { c.Grant.Increment = 0 } // 0 takes the default
	c := n.addHost("c", 1, dflt)
	s := n.addHost("s", 2, dflt)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	want := msg(1_000_000, 3)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, want)
	n.flush()
	m := receive(t, srv)
	if !bytes.Equal(m.Data, want) {
		t.Fatalf("request of %d bytes arrived as %d", len(want), len(m.Data))
	}
	sm, cm := s.e.Metrics(), c.e.Metrics()
	grants, data := sm.PacketsSent[wire.TypeGrant-wire.TypeData], cm.PacketsSent[0]
	if data != 703 || grants < 68 || grants > 76 {
		t.Fatalf("%d GRANTs for %d DATA packets; want 703 DATA, 68..76 GRANTs", grants, data)
	}
}

// A message waiting for room under MaxIncoming gets it when the messages
// ahead of it end without completing (here their client's link address
// became unreachable for a while, so they failed and the server dropped
// them on its timers), not only when one completes: the timer schedules
// grants again. Before, the waiting message was never granted and neither
// side timed out — grant keepalives kept its sender alive — so the RPC
// lasted for ever (FuzzEndpointNeighbour's input 598fe81e09233126).
func TestGrant_roomFreedByEndedRPCsIsGranted(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, cl := serverAndClient(t, c, s, 99)
	entry := s.neigh.Add(netip.AddrFrom4(c.ip), testMAC(c.ip))
	results := 0
	serve := func() {
		for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
			srv.Reply(m, msg(len(m.Data)/2+1, 4))
		}
		for _, ok := cl.Receive(); ok; _, ok = cl.Receive() {
			results++
		}
	}
	for range 7 { // 7 x 120 KB: their unscheduled bytes fill MaxIncoming
		if _, err := cl.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 99}, msg(120_000, 7)); err != nil {
			t.Fatal(err)
		}
		serve()
	}
	entry.State = LinkUnreachable
	n.advance(7_000_000)
	serve()
	entry.State = LinkReachable
	s.e.NeighbourReady(netip.AddrFrom4(c.ip))
	for range 300 {
		n.advance(1_000_000)
		serve()
	}
	if results != 7 || s.e.NumRPCs() != 0 || c.e.NumRPCs() != 0 {
		t.Fatalf("after 300 ms: %d of 7 RPCs ended; %d client RPCs and %d server RPCs left", results, s.e.NumRPCs(), c.e.NumRPCs())
	}
}
