package engine

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// TestPeer_incastAllowanceLimitsResponders: a client that fans out to
// many servers at once advertises a shrinking unscheduled allowance in its
// requests; servers beyond the budget send their responses mostly
// scheduled, so the unscheduled burst toward the client stays near the
// budget.
func TestPeer_incastAllowanceLimitsResponders(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	cli, _ := c.e.OpenClient()
	var servers []*testHost
	for i := range 15 {
		s := n.addHost("s", byte(10+i), nil)
		s.e.Bind(99)
		servers = append(servers, s)
	}
	for _, s := range servers {
		cli.Send(Addr{IP: s.ip, Port: 99}, msg(100, 1))
	}
	n.flush()
	var ports []*Port
	for _, s := range servers {
		ports = append(ports, s.e.ports[99])
	}
	burst := 0
	for i, s := range servers {
		req := receive(t, ports[i])
		ports[i].Reply(req, msg(200_000, 2))
		r := s.e.first
		burst += r.out.unsched
		want := 40_000 + 1424 - 40_000%1424 // 29 packets: the normal allowance
		if i >= 10 {
			want = 1424 // the floor (1408), rounded up to a packet
		}
		if r.out.unsched != want {
			t.Fatalf("server %d: %d unscheduled bytes, want %d", i, r.out.unsched, want)
		}
	}
	if limit := 400_000 + 15*1424 + 10*1424; burst > limit {
		t.Fatalf("burst %d > %d", burst, limit)
	}
	n.flush()
	for range 15 {
		if m := receive(t, cli); m.Err != nil || len(m.Data) != 200_000 {
			t.Fatalf("%+v", m.Err)
		}
	}
	if c.e.incast.Backlog() != 0 {
		t.Fatalf("backlog %d left", c.e.incast.Backlog())
	}
}

// TestPeer_kernelPeerWithoutAllowance: DATA whose pad bytes are zero (a
// kernel sender) leaves the normal unscheduled bytes in force.
func TestPeer_kernelPeerWithoutAllowance(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	f := dataFrame(100, 100, 0, msg(100, 0)) // pad bytes zero
	s.e.Receive(f)
	p := s.e.peers[[4]byte{10, 0, 0, 1}]
	if p.allowance != 0 || s.e.unschedBytes(p) != 40_000 {
		t.Fatal("zeros read as an allowance")
	}
	f2 := dataFrame(100, 100, 0, msg(100, 0))
	wire.Data(f2[frameHomaOffset:]).SetPad(sched.EncodeAllowance(2048))
	wire.Data(f2[frameHomaOffset:]).Common().SetSenderID(4)
	s.e.Receive(f2)
	if s.e.unschedBytes(p) != 2048 {
		t.Fatalf("allowance %d", s.e.unschedBytes(p))
	}
	// It expires after AllowanceTicks.
	n.advance(11_000_000)
	if s.e.unschedBytes(p) != 40_000 {
		t.Fatal("allowance did not expire")
	}
	_ = srv
}

func TestPeer_cutoffsLearnedAndRecomputed(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: s.ip, Port: 99}
	for _, size := range []int{100, 100, 5000, 5000, 60_000} {
		cli.Send(dst, msg(size, 1))
	}
	n.flush()
	p := c.e.peers[s.ip]
	if p.cutoffVersion != 1 || p.cutoffs != sched.DefaultCutoffs() {
		t.Fatalf("peer cutoffs %v v%d", p.cutoffs, p.cutoffVersion)
	}
	for range 5 {
		receive(t, srv)
	}
	cut := s.e.RecomputeCutoffs(2)
	if _, v := s.e.Cutoffs(); v != 2 || cut[7] == 0 || cut[6] != 1_000_000 || cut[5] != 0 {
		t.Fatalf("cutoffs %v", cut)
	}
	n.takeLog()
	cli.Send(dst, msg(100, 1))
	n.flush()
	// The DATA carried version 1: the server sends version 2, which the
	// client uses from then on.
	wantLog(t, n, `
		c: xmit DATA 100@0 p7
		s: xmit CUTOFFS v2`)
	if p.cutoffVersion != 2 || p.cutoffs[6] != 1_000_000 {
		t.Fatalf("peer cutoffs %v", p.cutoffs)
	}
}
