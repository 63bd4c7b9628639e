package engine

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
)

func TestEndpoint_configDefaultsAndValidation(t *testing.T) {
	clock := func() int64 { return 5000 }
	e, err := New(Config{Clock: clock, Grant: sched.GrantConfig{MaxIncoming: 1000}}, &sink{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.cfg
	if c.MTU != 1500 || c.UnschedBytes != 40_000 || c.TickNs != 1_000_000 || c.TimeoutTicks != 100 ||
		c.Grant.MaxIncoming != 1000 || c.Grant.MaxOvercommit != 8 || c.Grant.MaxSchedPrio != 3 || e.payload != 1424 {
		t.Fatalf("defaults %+v", c)
	}
	if c.MaxGaps != 64 || c.MaxServerRPCs != 8192 || c.MaxPeers != 16384 || c.MaxRestarts != 20 || c.MaxResendBytes != 400_000 {
		t.Fatalf("bounds %+v", c)
	}
	if _, err := New(Config{}, &sink{}); err == nil {
		t.Fatal("no clock accepted")
	}
	if _, err := New(Config{Clock: clock, MTU: 70}, &sink{}); err == nil {
		t.Fatal("MTU without room for data accepted")
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.MaxGaps = -1 },
		func(c *Config) { c.MaxServerRPCs = -1 },
		func(c *Config) { c.MaxStagingBytes = 100 },
		func(c *Config) { c.MaxPeers = -5 },
		func(c *Config) { c.MaxResendBytes = -1 },
	} {
		c := Config{Clock: clock}
		bad(&c)
		if _, err := New(c, &sink{}); err == nil {
			t.Fatalf("bound accepted: %+v", c)
		}
	}
}

func TestEndpoint_noBufferCountedAndRecoveredByTimer(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	buf := c.buf
	c.buf = nil // the transmit side has no buffer to lend
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	if m := c.e.Metrics(); m.TxDeferred == 0 || m.Drops[DropNoBuffer] != 0 || c.e.sendq.Len() != 1 {
		t.Fatalf("not counted as deferred, or not kept for a retry: %+v", m)
	}
	c.buf = buf
	n.advance(1_000_000) // the next Run sends it
	receive(t, srv)
}

// Without Config.IDSeed an endpoint's first client RPC id is drawn at
// random (crypto/rand): two endpoints started at the same time, with the
// same clock, do not share it, so a restarted host does not reuse the
// ids its servers remember, and ids are hard to guess.
func TestEndpoint_idsUnpredictableWithoutSeed(t *testing.T) {
	first := func() uint64 {
		e, err := New(Config{Clock: func() int64 { return 5000 }, Resolve: allReachable()}, &sink{buf: make([]byte, 2048)})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := e.OpenClient()
		id, err := p.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, msg(10, 1))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b := first(), first()
	t.Logf("first ids %#x and %#x", a, b)
	if a == b || a%2 != 0 || b%2 != 0 || a == 0 || b == 0 {
		t.Fatalf("first ids %d and %d: want two different even ids", a, b)
	}
}
