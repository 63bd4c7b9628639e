package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// mnHost is an endpoint on memnet with its own neighbour table, which
// starts empty: the test says what each address resolves to.
type mnHost struct {
	e        *Endpoint
	mh       *memnet.Host
	buf      []byte
	neigh    StaticNeighbours
	srv, cli *Port
}

func (h *mnHost) Buffer() []byte { return h.buf }

// newMNHost makes an endpoint on net at ip, with server port 99 and a
// client port, its RPC ids from idSeed. With shared nil it resolves
// through its own table (mnHost.neigh, empty: the test fills it);
// otherwise through shared, where its own address is added.
func newMNHost(t testing.TB, net *memnet.Network, ip [4]byte, shared *StaticNeighbours, idSeed uint64) *mnHost {
	t.Helper()
	h := &mnHost{mh: net.AddHost(ip), buf: make([]byte, 2048)}
	cfg := DefaultConfig()
	cfg.IP, cfg.MAC, cfg.Clock, cfg.IDSeed = ip, h.mh.MAC(), net.Now, idSeed
	cfg.Resolve = h.neigh.Resolve
	if shared != nil {
		shared.Add(netip.AddrFrom4(ip), h.mh.MAC())
		cfg.Resolve = shared.Resolve
	}
	e, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	h.srv, _ = e.Bind(99)
	h.cli, _ = e.OpenClient()
	h.mh.SetReceive(e.Receive)
	return h
}
func (h *mnHost) Send(frame []byte, _ int) { h.mh.Send(frame) }

// newMNShards makes shards endpoints of one address on one memnet host
// (Config.Shard), each with server port 99 and a client port: the host
// steers each frame to its owner (FrameShard; CUTOFFS to all, what is not
// Homa to the first) and hands acks over after it; the shards share a
// grant view and a link clock.
func newMNShards(t testing.TB, net *memnet.Network, ip [4]byte, shared *StaticNeighbours, idSeed uint64, shards int) []*mnHost {
	t.Helper()
	mh := net.AddHost(ip)
	shared.Add(netip.AddrFrom4(ip), mh.MAC())
	var hs []*mnHost
	var acks []shardAck
	grants, link := sched.NewGrantShare(shards), &sched.LinkClock{}
	for k := range shards {
		h := &mnHost{mh: mh, buf: make([]byte, 2048)}
		cfg := DefaultConfig()
		cfg.IP, cfg.MAC, cfg.Clock, cfg.IDSeed, cfg.Resolve = ip, mh.MAC(), net.Now, idSeed, shared.Resolve
		cfg.Shard = Shard{Index: k, Count: shards, Grants: grants, Link: link,
			ForwardAck: func(owner int, peer netip.Addr, client uint64, port uint16) {
				acks = append(acks, shardAck{owner, peer, client, port})
			}}
		e, err := New(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		h.e = e
		h.srv, _ = e.Bind(99)
		h.cli, _ = e.OpenClient()
		hs = append(hs, h)
	}
	es := make([]*Endpoint, len(hs))
	for k, h := range hs {
		es[k] = h.e
	}
	mh.SetReceive(shardSteer(es, &acks, nil))
	return hs
}

// mnPair is a client (10.0.3.1) and a server (10.0.3.2, port 99) on
// memnet, each asking its own table through Resolve.
type mnPair struct {
	net  *memnet.Network
	c, s *mnHost
	sent int // frames the hosts put on the network (memnet's Sent)
}

func newMNPair(t *testing.T) *mnPair {
	t.Helper()
	p := &mnPair{net: memnet.New(memnet.Config{Seed: 1})}
	mk := func(last byte) *mnHost { return newMNHost(t, p.net, [4]byte{10, 0, 3, last}, nil, uint64(last)<<32) }
	p.c, p.s = mk(1), mk(2)
	return p
}

// advance runs the network for ns, running both endpoints every 1 ms and
// answering every request the server received with the request reversed.
func (p *mnPair) advance(ns int64) {
	end := p.net.Now() + ns
	for p.net.Now() < end {
		p.net.RunUntil(min(p.net.Now()+1_000_000, end))
		for {
			m, ok := p.s.srv.Receive()
			if !ok {
				break
			}
			p.s.srv.Reply(m, reversed(m.Data))
		}
		p.c.e.Run()
		p.s.e.Run()
	}
}

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, x := range b {
		r[len(b)-1-i] = x
	}
	return r
}

// A send to a peer whose address is still resolving succeeds, writes no
// DATA, and goes out when the host reports the entry reachable: request
// and response arrive byte for byte.
func TestNeighbour_sendWaitsUntilReady(t *testing.T) {
	p := newMNPair(t)
	p.s.neigh.Add(netip.AddrFrom4(p.c.mh.IP()), p.c.mh.MAC()) // the server knows the client
	entry := &Neighbour{State: LinkResolving}
	p.c.neigh.entries = map[netip.Addr]*Neighbour{netip.AddrFrom4(p.s.mh.IP()): entry}
	req := msg(100_000, 5) // unscheduled bytes, then grants
	id, err := p.c.cli.Send(Addr{IP: netip.AddrFrom4(p.s.mh.IP()), Port: 99}, req)
	if err != nil {
		t.Fatalf("Send to a resolving peer: %v", err)
	}
	p.advance(3_000_000)
	m := p.c.e.Metrics()
	if st := p.net.Stats(); st.Sent != 0 || m.PacketsSent[0] != 0 {
		t.Fatalf("%d frames sent while resolving", st.Sent)
	}
	if m.RPCsWaitingResolution != 1 || p.c.e.NumWaitingResolution() != 1 {
		t.Fatalf("waits %d, waiting %d", m.RPCsWaitingResolution, p.c.e.NumWaitingResolution())
	}
	entry.MAC, entry.State = p.s.mh.MAC(), LinkReachable
	p.c.e.NeighbourReady(netip.AddrFrom4(p.s.mh.IP()))
	if p.net.Stats().Sent == 0 {
		t.Fatal("NeighbourReady sent nothing")
	}
	p.advance(20_000_000)
	res, ok := p.c.cli.Receive()
	if !ok || res.ID != id || res.Err != nil || !bytes.Equal(res.Data, reversed(req)) {
		t.Fatalf("result %v %+v", ok, res.Err)
	}
	if p.c.e.NumWaitingResolution() != 0 || p.s.e.Metrics().RequestsReceived != 1 {
		t.Fatal("still waiting, or the request arrived twice")
	}
}

// A waiting send whose address never resolves fails with ErrTimeout after
// TimeoutTicks, without a frame sent: waiting never hangs.
// A wait longer than TimeoutTicks is not silence: resolution that takes
// ARP a retry or two (the first request lost) still completes the RPC.
// It once timed out at TimeoutTicks, as the answer came back.
func TestNeighbour_longWaitIsNotSilence(t *testing.T) {
	p := newMNPair(t)
	p.s.neigh.Add(netip.AddrFrom4(p.c.mh.IP()), p.c.mh.MAC())
	entry := &Neighbour{State: LinkResolving}
	p.c.neigh.entries = map[netip.Addr]*Neighbour{netip.AddrFrom4(p.s.mh.IP()): entry}
	req := msg(3000, 7)
	id, _ := p.c.cli.Send(Addr{IP: netip.AddrFrom4(p.s.mh.IP()), Port: 99}, req)
	p.advance(250_000_000) // 2.5 × TimeoutTicks
	if _, ok := p.c.cli.Receive(); ok {
		t.Fatal("the RPC ended while its peer resolved")
	}
	entry.MAC, entry.State = p.s.mh.MAC(), LinkReachable
	p.c.e.NeighbourReady(netip.AddrFrom4(p.s.mh.IP()))
	p.advance(20_000_000)
	res, ok := p.c.cli.Receive()
	if !ok || res.ID != id || res.Err != nil || !bytes.Equal(res.Data, reversed(req)) {
		t.Fatalf("result %v %+v", ok, res.Err)
	}
}

func TestNeighbour_waitTimesOut(t *testing.T) {
	p := newMNPair(t)
	p.c.neigh.entries = map[netip.Addr]*Neighbour{netip.AddrFrom4(p.s.mh.IP()): {State: LinkResolving}}
	id, _ := p.c.cli.Send(Addr{IP: netip.AddrFrom4(p.s.mh.IP()), Port: 99}, msg(10, 1))
	// ResolveTimeoutTicks is 10 × TimeoutTicks by default: 1 s of 1 ms
	// ticks. TimeoutTicks (100 ms) of waiting are not silence.
	p.advance(999_000_000)
	if _, ok := p.c.cli.Receive(); ok {
		t.Fatal("failed before ResolveTimeoutTicks")
	}
	p.advance(2_000_000)
	res, ok := p.c.cli.Receive()
	if !ok || res.ID != id || res.Err != ErrTimeout {
		t.Fatalf("result %v %+v", ok, res)
	}
	if p.net.Stats().Sent != 0 || p.c.e.NumRPCs() != 0 || p.c.e.NumWaitingResolution() != 0 ||
		p.c.e.Metrics().RPCTimeouts != 1 {
		t.Fatalf("sent %d, %d RPCs, %d waiting", p.net.Stats().Sent, p.c.e.NumRPCs(), p.c.e.NumWaitingResolution())
	}
}

// NeighbourFailed fails the client RPCs waiting for the entry with
// ErrPeerUnknown, private ones too; the next Send to the peer fails at
// once, after asking Resolve again.
func TestNeighbourFailed_failsWaitingClientRPCs(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	entry := c.neigh.Add(netip.AddrFrom4(s.ip), testMAC(s.ip))
	entry.State = LinkResolving
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	id1, _ := cli.Send(dst, msg(10, 1))
	id2, _ := cli.SendPrivate(dst, msg(100_000, 2))
	n.flush()
	wantLog(t, n, "")
	entry.State = LinkUnreachable
	c.e.NeighbourFailed(netip.AddrFrom4(s.ip))
	if m := receive(t, cli); m.ID != id1 || m.Err != ErrPeerUnknown {
		t.Fatalf("result %+v", m)
	}
	if m, ok, _ := cli.Wait(id2); !ok || m.Err != ErrPeerUnknown {
		t.Fatalf("private result %v %+v", ok, m)
	}
	if m := c.e.Metrics(); m.ClientRPCsUnresolved != 2 || c.e.NumRPCs() != 0 || c.e.NumWaitingResolution() != 0 {
		t.Fatalf("unresolved %d, %d RPCs", m.ClientRPCsUnresolved, c.e.NumRPCs())
	}
	checkEndpoint(t, c.e)
	before := c.resolves
	if _, err := cli.Send(dst, msg(10, 3)); err != ErrPeerUnknown || c.resolves != before+1 {
		t.Fatalf("Send to a failed entry: %v, Resolve asked %d times", err, c.resolves-before)
	}
	wantLog(t, n, "")
	// A table that retries when asked: the next Send waits again.
	entry.State = LinkResolving
	if _, err := cli.Send(dst, msg(10, 4)); err != nil || c.e.NumWaitingResolution() != 1 {
		t.Fatalf("Send after the table retried: %v", err)
	}
}

// A server whose client's entry fails while the response waits drops
// the response (OutDone tells the port's owner); one with no route to the
// client discards its response at Reply.
func TestNeighbourFailed_dropsWaitingResponses(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	var done []uint64
	srv.SetHooks(PortHooks{OutDone: func(id uint64, _ Addr, _ []byte) { done = append(done, id) }})
	cli, _ := c.e.OpenClient()
	entry := s.neigh.Add(netip.AddrFrom4(c.ip), testMAC(c.ip))
	entry.State = LinkResolving
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	req := receive(t, srv)
	if err := srv.Reply(req, msg(20, 2)); err != nil {
		t.Fatal(err)
	}
	n.takeLog()
	entry.State = LinkUnreachable
	s.e.NeighbourFailed(netip.AddrFrom4(c.ip))
	if m := s.e.Metrics(); m.ServerResponsesUnresolved != 1 || s.e.NumRPCs() != 0 || len(done) != 1 {
		t.Fatalf("discarded %d, %d RPCs, OutDone %v", m.ServerResponsesUnresolved, s.e.NumRPCs(), done)
	}
	checkEndpoint(t, s.e)
	// No route at all: the request arrives (Resolve said nil), the
	// response is discarded at Reply.
	n2 := newTestNet(t)
	c2 := n2.addHost("c", 1, nil)
	s2 := n2.addHost("s", 2, func(cfg *Config) { cfg.Resolve = func(netip.Addr) *Neighbour { return nil } })
	srv2, _ := s2.e.Bind(99)
	cli2, _ := c2.e.OpenClient()
	cli2.Send(Addr{IP: netip.AddrFrom4(s2.ip), Port: 99}, msg(10, 1))
	n2.flush()
	if err := srv2.Reply(receive(t, srv2), msg(20, 2)); err != nil {
		t.Fatal(err)
	}
	n2.flush()
	wantLog(t, n2, "c: xmit DATA 10@0 p6")
	if m := s2.e.Metrics(); m.ServerResponsesUnresolved != 1 || s2.e.NumRPCs() != 0 {
		t.Fatalf("discarded %d, %d RPCs", m.ServerResponsesUnresolved, s2.e.NumRPCs())
	}
}

// Reply to a client whose entry failed asks Resolve again: a table that
// retries when asked makes the response wait instead of dropping it.
func TestNeighbour_replyAsksAgainAfterFailure(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	entry := s.neigh.Add(netip.AddrFrom4(c.ip), testMAC(c.ip))
	entry.State = LinkUnreachable
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	req := receive(t, srv)
	n.takeLog()
	retry := s.e.cfg.Resolve
	s.e.cfg.Resolve = func(a netip.Addr) *Neighbour {
		nb := retry(a)
		nb.State = LinkResolving // the table starts a new request
		return nb
	}
	if err := srv.Reply(req, msg(20, 2)); err != nil || s.e.NumWaitingResolution() != 1 || s.resolves != 2 {
		t.Fatalf("Reply: %v, %d waiting, Resolve asked %d times", err, s.e.NumWaitingResolution(), s.resolves)
	}
	entry.State = LinkReachable
	s.e.NeighbourReady(netip.AddrFrom4(c.ip))
	n.flush()
	if m := receive(t, cli); m.Err != nil || len(m.Data) != 20 {
		t.Fatalf("result %+v", m)
	}
	checkEndpoint(t, s.e)
}

// dstMACs records the destination MAC of every frame the net carries.
func dstMACs(n *testNet) *[]wire.MAC {
	var macs []wire.MAC
	n.inspect = func(frame []byte, _ string) { macs = append(macs, wire.Ethernet(frame).Dst()) }
	return &macs
}

// A MAC the table changes in place is used by the very next frame.
func TestNeighbour_macChangedInPlaceUsedByNextFrame(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	var macs []wire.MAC // of the frames c sends
	n.inspect = func(frame []byte, line string) {
		if strings.HasPrefix(line, "c:") {
			macs = append(macs, wire.Ethernet(frame).Dst())
		}
	}
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	cli.Send(dst, msg(10, 1))
	n.flush()
	moved := wire.MAC{2, 9, 9, 9, 9, 9}
	c.neigh.Resolve(netip.AddrFrom4(s.ip)).MAC = moved
	cli.Send(dst, msg(10, 2))
	n.flush()
	if len(macs) != 2 || macs[0] != testMAC(s.ip) || macs[1] != moved {
		t.Fatalf("destination MACs %v", macs)
	}
	receive(t, srv)
	receive(t, srv)
	if c.resolves != 1 {
		t.Fatalf("Resolve asked %d times for one peer", c.resolves)
	}
}

// Frames from the peer's address with another source MAC, first contact
// or later, do not change where the engine sends: only the table does.
func TestNeighbour_spoofedSourceMACDoesNotRedirect(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil) // 10.0.0.1
	s := n.addHost("s", 2, nil) // 10.0.0.2
	srv, _ := s.e.Bind(99)
	macs := dstMACs(n)
	spoof := wire.MAC{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}
	spoofed := func(f []byte) []byte { wire.Ethernet(f).SetSrc(spoof); return f }
	// First contact: a request from 10.0.0.1 with the attacker's MAC.
	s.e.Receive(spoofed(dataFrame(10, 10, 0, msg(10, 1))))
	srv.Reply(receive(t, srv), msg(10, 2))
	// Later: another frame from 10.0.0.1, spoofed again.
	f := dataFrame(10, 10, 0, msg(10, 3))
	wire.Data(f[frameHomaOffset:]).Common().SetSenderID(4)
	s.e.Receive(spoofed(f))
	srv.Reply(receive(t, srv), msg(10, 4))
	n.flush()
	if len(*macs) < 2 {
		t.Fatalf("%d frames", len(*macs))
	}
	for i, m := range *macs {
		if m != testMAC(c.ip) {
			t.Fatalf("frame %d to %v, not the table's %v", i, m, testMAC(c.ip))
		}
	}
}

// Control packets to a peer whose entry is not reachable are counted,
// not sent; when it resolves, the dropped GRANT is repeated at once.
func TestNeighbour_controlToUnresolvedPeerCountedNotSent(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	s.e.Bind(99)
	entry := s.neigh.Add(netip.AddrFrom4([4]byte{10, 0, 0, 1}), testMAC([4]byte{10, 0, 0, 1}))
	entry.State = LinkResolving
	// The first DATA of a 100,000-byte request with 10,000 bytes
	// unscheduled: the server grants at once.
	s.e.Receive(dataFrame(100_000, 10_000, 0, msg(1424, 1)))
	// A RESEND for an RPC the server does not have: RPC_UNKNOWN.
	s.e.Receive(resendFrame([4]byte{10, 0, 0, 1}, s.ip, 99, 40, 0, 100))
	n.flush()
	wantLog(t, n, "")
	if d := s.e.Metrics().Drops[DropTxUnresolved]; d != 2 {
		t.Fatalf("drops_tx_unresolved %d, want 2 (GRANT, RPC_UNKNOWN)", d)
	}
	entry.State = LinkReachable
	s.e.NeighbourReady(netip.AddrFrom4([4]byte{10, 0, 0, 1}))
	wantLog(t, n, "s: xmit GRANT 100000@0")
	if m := s.e.Metrics(); m.PacketsSent[wire.TypeGrant-wire.TypeData] != 1 {
		t.Fatalf("%d GRANTs sent", m.PacketsSent[wire.TypeGrant-wire.TypeData])
	}
}

// A server answers a peer it first heard from after the peer's entry
// resolves: the frame creates the peer and asks Resolve, the response
// waits; NeighbourReady inside a batch sends it at EndBatch.
func TestNeighbour_responseToNewPeerWaitsAndBatchDefers(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	entry := s.neigh.Add(netip.AddrFrom4(c.ip), testMAC(c.ip))
	entry.State = LinkResolving
	s.e.Receive(dataFrame(10, 10, 0, msg(10, 1)))
	if s.resolves != 1 {
		t.Fatalf("Resolve asked %d times", s.resolves)
	}
	srv.Reply(receive(t, srv), msg(10, 2))
	wantLog(t, n, "")
	entry.State = LinkReachable
	s.e.BeginBatch(n.now)
	s.e.NeighbourReady(netip.AddrFrom4(c.ip))
	wantLog(t, n, "")
	s.e.EndBatch()
	wantLog(t, n, "s: xmit DATA 10@0 p6")
}

// An entry that ages out while a message is queued by the pacer holds
// its packets (the pump moves on); Run notices the entry reachable again
// even without NeighbourReady, and the message completes.
func TestNeighbour_agedOutMidMessageResumesOnRun(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, func(cfg *Config) { cfg.LinkBps = 25e9 })
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(200_000, 7)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	if c.e.sendq.Len() != 1 {
		t.Fatal("the pacer queued nothing")
	}
	entry := c.neigh.Resolve(netip.AddrFrom4(s.ip))
	entry.State = LinkResolving // aged out, re-verifying
	n.advance(2_000_000)
	if c.e.NumWaitingResolution() != 1 || c.e.sendq.Len() != 0 {
		t.Fatalf("waiting %d, queued %d", c.e.NumWaitingResolution(), c.e.sendq.Len())
	}
	entry.State = LinkReachable
	n.advance(30_000_000)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("request differs")
	}
	if c.e.NumWaitingResolution() != 0 || c.e.Metrics().RPCsWaitingResolution != 1 {
		t.Fatal("wait not ended or not counted")
	}
}

// The static table: added entries are reachable, others have no route,
// and Add on a known address updates the entry endpoints hold.
func TestStaticNeighbours_addAndResolve(t *testing.T) {
	var tb StaticNeighbours
	if tb.Resolve(netip.AddrFrom4([4]byte{1, 2, 3, 4})) != nil {
		t.Fatal("empty table resolved")
	}
	a := tb.Add(netip.AddrFrom4([4]byte{1, 2, 3, 4}), wire.MAC{1})
	a.State = LinkUnreachable
	// The mapped form is the same address.
	if b := tb.Add(netip.AddrFrom16(wire.MapIPv4([4]byte{1, 2, 3, 4})), wire.MAC{2}); b != a || a.MAC != (wire.MAC{2}) || a.State != LinkReachable {
		t.Fatalf("Add replaced or did not update the entry: %+v", *a)
	}
	if LinkResolving.String() != "resolving" || LinkState(9).String() != "unknown" {
		t.Fatal("names")
	}
}

// FuzzEndpointNeighbour runs RPCs from s to c while s's neighbour entry
// for c changes state under them, with and without NeighbourReady and
// NeighbourFailed, and checks after every step that s's tables are
// consistent; at the end, with the entry reachable, every RPC must have
// ended with exactly one result and nothing may still wait. Each input
// byte is one step: its low 3 bits choose it, the rest parameterise it.
//
//	go test ./engine -run='^$' -fuzz=^FuzzEndpointNeighbour$ -fuzztime=60s
func FuzzEndpointNeighbour(f *testing.F) {
	f.Add([]byte{1, 0, 6, 2, 4, 6, 7 | 5<<3})
	f.Add([]byte{0, 8, 1, 6, 3, 5, 0, 2, 6, 7 | 30<<3})
	f.Add([]byte{0, 6, 1, 0x78, 2, 0x78, 6, 3, 0x80, 6, 2, 4, 6})
	f.Fuzz(func(t *testing.T, in []byte) {
		n := newTestNet(t)
		c := n.addHost("c", 1, nil)
		s := n.addHost("s", 2, nil)
		csrv, _ := c.e.Bind(99)
		cli, _ := s.e.OpenClient()
		entry := s.neigh.Add(netip.AddrFrom4(c.ip), testMAC(c.ip))
		sent, results := 0, 0
		serve := func() {
			for m, ok := csrv.Receive(); ok; m, ok = csrv.Receive() {
				csrv.Reply(m, msg(len(m.Data)/2+1, 4))
			}
			for _, ok := cli.Receive(); ok; _, ok = cli.Receive() {
				results++
			}
		}
		sizes := [...]int{10, 1500, 30_000, 120_000}
		for _, b := range in {
			switch arg := int(b >> 3); b & 7 {
			case 0:
				if _, err := cli.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 99}, msg(sizes[arg%4], b)); err == nil {
					sent++
				} else if err != ErrPeerUnknown || entry.State != LinkUnreachable {
					t.Fatalf("Send: %v with the entry %v", err, entry.State)
				}
			case 1:
				entry.State = LinkResolving
			case 2:
				entry.State = LinkReachable
			case 3:
				entry.State = LinkUnreachable
			case 4:
				s.e.NeighbourReady(netip.AddrFrom4(c.ip))
			case 5:
				s.e.NeighbourFailed(netip.AddrFrom4(c.ip))
			case 6:
				n.flush()
			case 7:
				n.advance(int64(arg+1) * 1_000_000)
			}
			serve()
			checkEndpoint(t, s.e)
		}
		entry.State = LinkReachable
		s.e.NeighbourReady(netip.AddrFrom4(c.ip))
		for range 300 {
			n.advance(1_000_000)
			serve()
			checkEndpoint(t, s.e)
		}
		if results != sent || s.e.NumRPCs() != 0 || s.e.NumWaitingResolution() != 0 || len(s.e.waitingPeers) != 0 {
			t.Fatalf("%d sent, %d results; %d RPCs left, %d waiting, %d peers listed",
				sent, results, s.e.NumRPCs(), s.e.NumWaitingResolution(), len(s.e.waitingPeers))
		}
	})
}
