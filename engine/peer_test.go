package engine

import (
	"math/rand/v2"
	"net/netip"
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
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
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
	p := s.e.peerAt(wire.MapIPv4([4]byte{10, 0, 0, 1}))
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
	// It expires: a request's allowance holds for weakAllowanceTicks, as
	// a stranger can make one up (issue 30 finding 5).
	n.advance(2_000_000)
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
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	for _, size := range []int{100, 100, 5000, 5000, 60_000} {
		cli.Send(dst, msg(size, 1))
	}
	n.flush()
	p := c.e.peerAt(wire.MapIPv4(s.ip))
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

// resendFrom builds a RESEND from src for server RPC id sid (a client's
// id ^ 1) to 10.0.0.2 port 99, as a spoofed source would send it.
func resendFrom(src [4]byte, sid uint64) []byte {
	return resendFrame(src, [4]byte{10, 0, 0, 2}, 99, sid, 0, 100)
}

// Spoofed source addresses do not grow the peer table without bound: of
// 100,000 sources (DATA starting requests, and RESENDs for RPCs that do
// not exist) at most MaxPeers stay; idle peers are evicted to make room,
// the oldest first, and each eviction is counted and told to the host
// (Config.Forget). A peer with live RPCs, client or server, is never
// evicted, and its RPCs complete.
func TestPeer_spoofedSourcesBounded(t *testing.T) {
	n := newTestNet(t)
	var forgot int
	s := n.addHost("s", 2, func(c *Config) { c.Forget = func(netip.Addr) { forgot++ } })
	cl := n.addHost("c", 1, nil)
	srv, _ := s.e.Bind(99)
	clSrv, _ := cl.e.Bind(99)
	// Live RPCs with the real peer both ways: the server's request is
	// waiting for its reply, and s's own client RPC to it waits too.
	cli, _ := cl.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(3000, 1))
	scli, _ := s.e.OpenClient()
	sid, _ := scli.Send(Addr{IP: netip.AddrFrom4(cl.ip), Port: 99}, msg(100, 2))
	n.flush()
	req := receive(t, srv)
	clReq := receive(t, clSrv)
	real := s.e.peerAt(wire.MapIPv4(cl.ip))
	maxPeers := DefaultConfig().MaxPeers
	const sources = 100_000
	before := heapInUse()
	for i := range sources {
		src := [4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)}
		if i%2 == 0 {
			s.e.Receive(dataFrameFrom(src, 2, 5000, 5000, 0, make([]byte, 10)))
		} else {
			s.e.Receive(resendFrom(src, 3))
		}
		s.out = nil
	}
	m := s.e.Metrics()
	t.Logf("%d peers, %d evicted, %d refused, %d server RPCs; heap +%d bytes", s.e.NumPeers(), m.PeersEvicted,
		m.Drops[DropPeerTableFull], s.e.NumServerRPCs(), int64(heapInUse())-int64(before))
	if s.e.NumPeers() > maxPeers {
		t.Fatalf("%d peers, want at most %d", s.e.NumPeers(), maxPeers)
	}
	if m.PeersEvicted == 0 || m.PeersEvicted != uint64(forgot) {
		t.Fatalf("%d peers evicted, %d forgotten", m.PeersEvicted, forgot)
	}
	if s.e.peerAt(wire.MapIPv4(cl.ip)) != real {
		t.Fatal("the peer with live RPCs was evicted")
	}
	// The RPCs with the real peer complete.
	srv.Reply(req, msg(500, 3))
	clSrv.Reply(clReq, msg(50, 4))
	n.advance(10_000_000)
	if r := receive(t, cli); r.Err != nil || len(r.Data) != 500 {
		t.Fatalf("client result %+v", r)
	}
	if r := receive(t, scli); r.ID != sid || r.Err != nil {
		t.Fatalf("server's own client result %+v", r)
	}
	// Idle peers age out: PeerIdleTicks after the spoofed requests were
	// discarded (TimeoutTicks), no peer is left.
	n.advance(int64(DefaultConfig().TimeoutTicks+DefaultConfig().PeerIdleTicks+1) * 1_000_000)
	if got := s.e.NumPeers(); got != 0 || s.e.NumServerRPCs() != 0 {
		t.Fatalf("%d peers after aging, %d server RPCs", got, s.e.NumServerRPCs())
	}
}

// When every peer has live RPCs, a new source is refused rather than
// let the table grow: its packet is dropped and counted.
func TestPeer_fullTableOfBusyPeersRefusesNewSources(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, func(c *Config) { c.MaxPeers = 10 })
	for i := range 20 {
		e.Receive(dataFrameFrom([4]byte{172, 16, 0, byte(i + 1)}, 2, 5000, 5000, 0, make([]byte, 10)))
	}
	if e.NumPeers() != 10 || e.NumServerRPCs() != 10 || e.Metrics().Drops[DropPeerTableFull] != 10 {
		t.Fatalf("%d peers, %d server RPCs, drops_peer_table_full %d", e.NumPeers(), e.NumServerRPCs(),
			e.Metrics().Drops[DropPeerTableFull])
	}
	// The application's own sends are not refused.
	p, _ := e.OpenClient()
	if _, err := p.Send(Addr{IP: netip.AddrFrom4([4]byte{172, 16, 1, 1}), Port: 99}, msg(10, 1)); err != nil {
		t.Fatal(err)
	}
}

// A new peer takes Config.PeerCutoffs until its CUTOFFS come, and
// sched.PeerDefaultCutoffs without them.
func TestPeer_configuredCutoffsBeforeCUTOFFS(t *testing.T) {
	var now int64 = 1_000_000_000
	cut := sched.Cutoffs{7: 100, 6: 1_000_000}
	e, _ := newCountingEndpoint(t, &now, func(c *Config) { c.PeerCutoffs = cut })
	p := e.peerFor(wire.MapIPv4([4]byte{10, 0, 0, 9}))
	if p == nil || p.cutoffs != cut {
		t.Fatalf("peer cutoffs %v, want %v", p.cutoffs, cut)
	}
	e, _ = newCountingEndpoint(t, &now, nil)
	if p := e.peerFor(wire.MapIPv4([4]byte{10, 0, 0, 9})); p == nil || p.cutoffs != sched.PeerDefaultCutoffs() {
		t.Fatalf("without PeerCutoffs: %v", p)
	}
}

// The index of remembered acks answers as a scan of the ring would,
// through ids that repeat, collide and wrap the ring many times over.
func TestPeer_recentlyAckedAgreesWithTheRing(t *testing.T) {
	var p peer
	rng := rand.New(rand.NewPCG(3, 4))
	scan := func(id uint64) bool {
		for _, a := range p.acked {
			if a == id && a != 0 {
				return true
			}
		}
		return false
	}
	for i := 0; i < 100_000; i++ {
		id := uint64(rng.IntN(400)) * 2
		if rng.IntN(2) == 0 {
			p.rememberAcked(id)
		}
		for _, q := range []uint64{id, id + 2, uint64(rng.IntN(400)) * 2} {
			if got, want := p.recentlyAcked(q), scan(q); got != want {
				t.Fatalf("step %d: recentlyAcked(%d) = %v, the ring says %v", i, q, got, want)
			}
		}
	}
}

// A peer evicted after it fell idle is made again by its next packet: the
// peer the previous packets found is not used past its eviction.
func TestPeer_evictedPeerIsMadeAgain(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	addr := wire.MapIPv4(c.ip)
	if _, err := cli.Send(dst, msg(100, 1)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	if err := srv.Reply(receive(t, srv), msg(100, 2)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	receive(t, cli)
	old := s.e.peerAt(addr)
	n.advance(int64(DefaultConfig().TimeoutTicks+DefaultConfig().PeerIdleTicks+1) * 1_000_000)
	if s.e.peerAt(addr) != nil || s.e.Metrics().PeersEvicted == 0 {
		t.Fatal("the idle peer was not evicted")
	}
	if _, err := cli.Send(dst, msg(100, 3)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	receive(t, srv)
	p := s.e.peerAt(addr)
	if p == nil || p == old {
		t.Fatalf("peer after eviction %p, the evicted one %p: want a new one", p, old)
	}
	if p.serverRPCs != 1 {
		t.Fatalf("the new peer holds %d server RPCs, want the request's", p.serverRPCs)
	}
}
