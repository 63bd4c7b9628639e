package engine

import (
	"bytes"
	"strings"
	"testing"
)

// smallPackets: 1000-byte payloads, 3000 unscheduled bytes, 5000
// max_incoming, so grant logs stay short.
func smallPackets(c *Config) {
	c.MTU = 1000 + 20 + 56
	c.UnschedBytes = 3000
	c.Grant.MaxIncoming = 5000
	c.Incast.Budget = 0
}

func TestOutgoing_segmentationUnscheduledAndGrants(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(7500, 5)
	cli.Send(Addr{IP: s.ip, Port: 99}, req)
	n.flush()
	// Three unscheduled packets; then one GRANT per packet received,
	// window 5000/2 past the bytes received, at the lowest level (one
	// message active); the last packet is short.
	wantLog(t, n, `
		c: xmit DATA 1000@0 p6
		c: xmit DATA 1000@1000 p6
		c: xmit DATA 1000@2000 p6
		s: xmit CUTOFFS v1
		s: xmit GRANT 3500@0
		s: xmit GRANT 4500@0
		s: xmit GRANT 5500@0
		c: xmit DATA 1000@3000 p0
		c: xmit DATA 1000@4000 p0
		c: xmit DATA 1000@5000 p0
		s: xmit GRANT 6500@0
		s: xmit GRANT 7500@0
		c: xmit DATA 1000@6000 p0
		c: xmit DATA 500@7000 p0`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("request bytes differ")
	}
}

func TestOutgoing_pacerDefersLongMessagesShortestFirst(t *testing.T) {
	n := newTestNet(t)
	paced := func(c *Config) {
		smallPackets(c)
		c.UnschedBytes = 100_000
		c.LinkBps = 8_000_000_000 // 1 byte/ns: a 1100-byte frame is 1124 ns
		c.MaxNICQueueNs = 2000
		c.PacerFIFOFraction = -1 // pure SRPT here; the FIFO share is sched's test
	}
	c := n.addHost("c", 1, paced)
	s := n.addHost("s", 2, paced)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: s.ip, Port: 99}
	cli.Send(dst, msg(6000, 1))
	cli.Send(dst, msg(3000, 2))
	cli.Send(dst, msg(500, 3)) // under 1000 bytes: never deferred
	// The pacer let 2 packets of the first message go (backlog ≤ 2 µs),
	// then queued; the short ones jumped ahead as the link drained.
	got := n.takeLog()
	if want := "c: xmit DATA 1000@0 p6\nc: xmit DATA 1000@1000 p6\nc: xmit DATA 500@0 p6"; got != want {
		t.Fatalf("before the link drains:\n%s\nwant:\n%s", got, want)
	}
	if c.e.Metrics().ThrottleListAdds != 2 {
		t.Fatalf("throttle_list_adds %d", c.e.Metrics().ThrottleListAdds)
	}
	for c.e.sendq.Len() > 0 {
		n.now = c.e.NextDeadline()
		c.e.Run()
	}
	var order []string
	for _, l := range strings.Split(n.takeLog(), "\n") {
		order = append(order, strings.TrimPrefix(l, "c: xmit "))
	}
	// The 3000-byte message (0, 1000, 2000) goes before the rest of the
	// 6000-byte one, which has 4000 left.
	want := "DATA 1000@0 p6,DATA 1000@1000 p6,DATA 1000@2000 p6,DATA 1000@2000 p6,DATA 1000@3000 p6,DATA 1000@4000 p6,DATA 1000@5000 p6"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("paced order:\n%s\nwant:\n%s", got, want)
	}
}
