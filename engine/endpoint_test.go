package engine

import (
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
	if e.nextID != 5002 {
		t.Fatalf("first id %d, want the clock's", e.nextID)
	}
	if _, err := New(Config{}, &sink{}); err == nil {
		t.Fatal("no clock accepted")
	}
	if _, err := New(Config{Clock: clock, MTU: 70}, &sink{}); err == nil {
		t.Fatal("MTU without room for data accepted")
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
	cli.Send(Addr{IP: s.ip, Port: 99}, msg(10, 1))
	if m := c.e.Metrics(); m.TxDeferred == 0 || m.Drops[DropNoBuffer] != 0 || c.e.sendq.Len() != 1 {
		t.Fatalf("not counted as deferred, or not kept for a retry: %+v", m)
	}
	c.buf = buf
	n.advance(1_000_000) // the next Run sends it
	receive(t, srv)
}
