package engine

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// FuzzEndpointReceive feeds arbitrary frames to an endpoint that has RPCs
// in every phase (client requests waiting for grants and responses, a
// server port answering whatever arrives) and checks after every frame
// that it did not panic and that its state is consistent (see
// checkEndpoint); at the end, closing its ports must leave nothing behind.
//
// The input is a list of records: a control byte, a big-endian u16
// length, then that many frame bytes (the last record takes what is
// left). Control bit 0 fixes the frame's IPv4 total length and header
// checksum before delivery, so mutated frames get past the parser; bits
// 1..7 advance the clock by that many ms afterwards (timers run). Seeds
// are the frames the endpoint receives in a real exchange.
//
// Run it with a short minimization time: inputs are kilobytes and each
// execution builds two endpoints, so minimizing a new input with the
// default 60 s takes the whole run (the fuzzer then reports no execs):
//
//	go test ./engine -run='^$' -fuzz=^FuzzEndpointReceive$ -fuzztime=60s -fuzzminimizetime=2s
func FuzzEndpointReceive(f *testing.F) {
	for _, s := range receiveSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fx := newReceiveFixture(t, false)
		for len(in) > 0 {
			ctrl := in[0]
			n := 0
			if len(in) >= 3 {
				n = int(binary.BigEndian.Uint16(in[1:]))
				in = in[3:]
			} else {
				in = in[1:]
			}
			n = min(n, len(in))
			frame := append([]byte(nil), in[:n]...)
			in = in[n:]
			if ctrl&1 != 0 {
				fixIPv4(frame)
			}
			fx.s.e.Receive(frame)
			fx.serve()
			checkEndpoint(t, fx.s.e)
			if ms := int64(ctrl >> 1); ms != 0 {
				fx.n.now += ms * 1_000_000
				fx.s.e.Run()
				fx.serve()
				checkEndpoint(t, fx.s.e)
			}
		}
		fx.closeAll(t)
	})
}

// receiveFixture is the endpoint under test (s, 10.0.0.2) and its peer
// (c, 10.0.0.1) on a testNet that does not deliver: frames s sends are
// discarded, frames to s come from the fuzzer.
type receiveFixture struct {
	n        *testNet
	c, s     *testHost
	srv, cli *Port
}

// newReceiveFixture: s serves port 99 (answering every request with 3,000
// bytes) and has three requests out to c: 100,000 bytes (needs grants),
// 500 bytes, and 20 bytes private. c serves port 99 too.
func newReceiveFixture(t testing.TB, keep bool) *receiveFixture {
	n := newTestNet(t)
	fx := &receiveFixture{n: n, c: n.addHost("c", 1, nil), s: n.addHost("s", 2, nil)}
	fx.srv, _ = fx.s.e.Bind(99)
	fx.cli, _ = fx.s.e.OpenClient()
	fx.c.e.Bind(99)
	dst := Addr{IP: netip.AddrFrom4(fx.c.ip), Port: 99}
	for _, m := range []struct {
		size    int
		private bool
	}{{100_000, false}, {500, false}, {20, true}} {
		send := fx.cli.Send
		if m.private {
			send = fx.cli.SendPrivate
		}
		if _, err := send(dst, msg(m.size, byte(m.size))); err != nil {
			t.Fatal(err)
		}
	}
	if !keep {
		fx.s.out, n.log = nil, nil
	}
	return fx
}

// serve answers the requests s received, takes its results, and
// discards what s sent.
func (fx *receiveFixture) serve() {
	fx.serve1()
	fx.s.out, fx.n.log = nil, nil
}

// serve1 is serve keeping what s sent.
func (fx *receiveFixture) serve1() {
	for {
		m, ok := fx.srv.Receive()
		if !ok {
			break
		}
		fx.srv.Reply(m, msg(3000, 9))
	}
	for {
		if _, ok := fx.cli.Receive(); !ok {
			break
		}
	}
}

// closeAll closes s's ports and checks that no state is left.
func (fx *receiveFixture) closeAll(t *testing.T) {
	e := fx.s.e
	for _, p := range e.ports {
		p.Close()
	}
	checkEndpoint(t, e)
	if e.NumRPCs() != 0 || e.first != nil || e.grants.Len() != 0 || e.grants.Outstanding() != 0 ||
		e.sendq.Len() != 0 || e.incast.Backlog() != 0 || len(e.ports) != 0 {
		t.Fatalf("after Close: %d rpcs, %d to grant (%d bytes outstanding), %d queued, incast backlog %d, %d ports",
			e.NumRPCs(), e.grants.Len(), e.grants.Outstanding(), e.sendq.Len(), e.incast.Backlog(), len(e.ports))
	}
	fx.n.now += 200_000_000
	e.Run()
	if e.NumRPCs() != 0 {
		t.Fatal("timers brought an RPC back")
	}
}

// fixIPv4 sets the total length and header checksum of frame's IPv4
// header (untagged or tagged), if it has room for one.
func fixIPv4(frame []byte) {
	off := wire.EthernetHeaderLen
	if len(frame) < off+wire.VLANTagLen {
		return
	}
	if wire.Ethernet(frame).Type() == wire.EtherTypeVLAN {
		off += wire.VLANTagLen
	}
	ip := wire.IPv4(frame[off:])
	if len(ip) < wire.IPv4MinHeaderLen || ip.HeaderLen() < wire.IPv4MinHeaderLen || ip.HeaderLen() > len(ip) {
		return
	}
	ip.SetTotalLength(uint16(min(len(ip), 0xffff)))
	ip.UpdateChecksum()
}

// checkEndpoint fails t if e's tables disagree: the list of live RPCs
// and the map, reassembly state, outgoing offsets, the schedulers'
// membership, and the incast backlog against the RPCs' shares.
func checkEndpoint(t *testing.T, e *Endpoint) {
	t.Helper()
	if err := endpointConsistent(e); err != nil {
		t.Fatal(err)
	}
}

func endpointConsistent(e *Endpoint) error {
	listed, incast, granting, queued := 0, 0, 0, 0
	var prev *rpc
	for r := e.first; r != nil; r = r.next {
		listed++
		if r.prev != prev {
			return fmt.Errorf("rpc %d: prev link broken", r.id)
		}
		prev = r
		if r.state == stateDead || e.rpcs.get(r.key()) != r {
			return fmt.Errorf("rpc %d (state %d) listed but not in the table", r.id, r.state)
		}
		if r.client != wire.IsClientID(r.id) {
			return fmt.Errorf("rpc %d: client %v", r.id, r.client)
		}
		if err := inConsistent(r); err != nil {
			return fmt.Errorf("rpc %d in: %w", r.id, err)
		}
		o := &r.out
		if o.length < 0 || o.next < 0 || o.next > o.length || o.granted > o.length || o.unsched > o.length ||
			len(o.data) != o.length {
			return fmt.Errorf("rpc %d out: length %d next %d granted %d unsched %d data %d",
				r.id, o.length, o.next, o.granted, o.unsched, len(o.data))
		}
		if o.sq.Queued() {
			queued++
			if o.next >= o.granted {
				return fmt.Errorf("rpc %d queued with nothing to send (next %d granted %d)", r.id, o.next, o.granted)
			}
		}
		if r.in.g.Length != 0 && r.in.g.Granted < r.in.g.Length && r.state == stateIncoming {
			granting++
		}
		if r.incastBytes < 0 {
			return fmt.Errorf("rpc %d: incastBytes %d", r.id, r.incastBytes)
		}
		incast += r.incastBytes
	}
	if e.last != prev {
		return fmt.Errorf("last is not the list's tail")
	}
	if listed != e.rpcs.len() {
		return fmt.Errorf("%d rpcs listed, %d in the table", listed, e.rpcs.len())
	}
	if e.sendq.Len() != queued {
		return fmt.Errorf("sender queue holds %d, %d rpcs think they are queued", e.sendq.Len(), queued)
	}
	if e.grants.Len() > listed || e.grants.Outstanding() < 0 {
		return fmt.Errorf("grant scheduler: %d messages, %d outstanding", e.grants.Len(), e.grants.Outstanding())
	}
	servers := 0
	for r := e.first; r != nil; r = r.next {
		if !r.client {
			servers++
		}
	}
	perPeer := 0
	for _, p := range allPeers(e) {
		if p.serverRPCs < 0 || p.serverRPCs > e.cfg.MaxServerRPCsPerPeer {
			return fmt.Errorf("peer %v: %d server RPCs", p.ip, p.serverRPCs)
		}
		perPeer += p.serverRPCs
	}
	if servers != e.numServerRPCs || perPeer != servers || servers > e.cfg.MaxServerRPCs {
		return fmt.Errorf("%d server RPCs listed, numServerRPCs %d, peers count %d", servers, e.numServerRPCs, perPeer)
	}
	if err := peersConsistent(e); err != nil {
		return err
	}
	if err := requestsConsistent(e); err != nil {
		return err
	}
	if err := heldConsistent(e); err != nil {
		return err
	}
	if err := turnsConsistent(e); err != nil {
		return err
	}
	if incast != e.incast.Backlog() {
		return fmt.Errorf("incast backlog %d, rpcs account for %d", e.incast.Backlog(), incast)
	}
	return waitingConsistent(e)
}

// waitingConsistent checks the RPCs waiting for their peers' link
// addresses: each is live, on its own peer's list once, out of the sender
// queue, and its peer is listed; the counts agree.
func waitingConsistent(e *Endpoint) error {
	waiting := 0
	for r := e.first; r != nil; r = r.next {
		if !r.waiting {
			continue
		}
		waiting++
		if r.out.sq.Queued() || !r.peer.listed {
			return fmt.Errorf("rpc %d waits but is queued (%v) or its peer unlisted", r.id, r.out.sq.Queued())
		}
	}
	onLists := 0
	for _, p := range allPeers(e) {
		for _, r := range p.waiting {
			onLists++
			if !r.waiting || r.peer != p || r.state == stateDead {
				return fmt.Errorf("rpc %d on a waiting list: waiting %v, state %d", r.id, r.waiting, r.state)
			}
		}
	}
	listed := 0
	for _, p := range e.waitingPeers {
		if !p.listed {
			return fmt.Errorf("peer %v in waitingPeers, not marked listed", p.ip)
		}
		listed++
	}
	for _, p := range allPeers(e) {
		if p.listed {
			listed--
		}
	}
	if waiting != e.numWaiting || onLists != waiting || listed != 0 {
		return fmt.Errorf("%d rpcs waiting, numWaiting %d, %d on peers' lists, listed mismatch %d",
			waiting, e.numWaiting, onLists, listed)
	}
	return nil
}

// inConsistent checks an incoming message being reassembled: the gaps
// are in order, inside [0, recvEnd), and Received counts what is not a
// gap.
func inConsistent(r *rpc) error {
	in := &r.in
	if in.length == 0 || r.state != stateIncoming {
		return nil
	}
	if err := stageConsistent(r.port.e, in); err != nil {
		return err
	}
	if in.recvEnd > in.length || in.g.Length != in.length ||
		in.g.Received > in.length || in.g.Granted > in.length {
		return fmt.Errorf("length %d buf %d recvEnd %d received %d granted %d",
			in.length, len(in.buf), in.recvEnd, in.g.Received, in.g.Granted)
	}
	if len(in.gaps) > r.port.e.cfg.MaxGaps {
		return fmt.Errorf("%d gaps, more than MaxGaps", len(in.gaps))
	}
	missing, end := 0, 0
	for _, g := range in.gaps {
		if g.start < end || g.end <= g.start || g.end > in.recvEnd {
			return fmt.Errorf("gaps %v (recvEnd %d)", in.gaps, in.recvEnd)
		}
		missing += g.end - g.start
		end = g.end
	}
	if in.g.Received != in.recvEnd-missing {
		return fmt.Errorf("received %d, but recvEnd %d minus gaps %d", in.g.Received, in.recvEnd, missing)
	}
	return nil
}

// receiveSeeds runs the fixture's exchange for real (c answers s's
// requests with 2,000 bytes and sends s requests of 5,000 and 300
// bytes), and returns the frames s received: all of them as one input
// (with a tick after each, and once with every third frame held back),
// and a few single frames of each type.
func receiveSeeds(tb testing.TB) [][]byte {
	fx := newReceiveFixture(tb, true)
	ccli, _ := fx.c.e.OpenClient()
	csrv := fx.c.e.ports[99]
	dst := Addr{IP: netip.AddrFrom4(fx.s.ip), Port: 99}
	ccli.Send(dst, msg(5_000, 1))
	ccli.Send(dst, msg(300, 2))
	var got [][]byte
	for range 20 { // ms
		for progress := true; progress; {
			progress = len(fx.s.out)+len(fx.c.out) > 0
			for _, sf := range fx.s.out {
				fx.c.e.Receive(sf.frame)
			}
			fx.s.out = nil
			for {
				m, ok := csrv.Receive()
				if !ok {
					break
				}
				csrv.Reply(m, msg(2000, 3))
			}
			for _, sf := range fx.c.out {
				got = append(got, sf.frame)
			}
			out := fx.c.out
			fx.c.out = nil
			for _, sf := range out {
				fx.s.e.Receive(sf.frame)
				fx.serve1()
			}
		}
		fx.n.now += 1_000_000
		fx.s.e.Run()
		fx.c.e.Run()
		fx.serve1()
	}
	record := func(dst []byte, ctrl byte, frame []byte) []byte {
		dst = append(dst, ctrl, byte(len(frame)>>8), byte(len(frame)))
		return append(dst, frame...)
	}
	var all, lossy []byte
	seen := map[wire.PacketType]int{}
	var seeds [][]byte
	for i, fr := range got {
		all = record(all, 2, fr) // a tick after each
		if i%3 != 0 {
			lossy = record(lossy, 0, fr)
		}
		var pf wire.Frame
		if wire.ParseFrame(fr, &pf) == wire.DropNone && seen[pf.Type] < 2 {
			seen[pf.Type]++
			seeds = append(seeds, record(nil, 1, fr))
		}
	}
	return append(seeds, all, lossy)
}

// stageConsistent checks where in's bytes are: a committed buffer of
// its length and no staging, or staging chunks (within the span, none
// past the highest byte received) and no buffer; committed once it has
// its commitAt bytes.
func stageConsistent(e *Endpoint, in *inMsg) error {
	if in.buf != nil {
		if len(in.buf) != in.length || in.stage != nil {
			return fmt.Errorf("committed: buf %d of %d, staged %v", len(in.buf), in.length, in.stage != nil)
		}
		return nil
	}
	if in.g.Received >= e.commitAt(in.length) {
		return fmt.Errorf("%d bytes received, not committed (commit at %d)", in.g.Received, e.commitAt(in.length))
	}
	for i, c := range in.stage {
		if c != nil && (i*stageChunkSize >= in.recvEnd || i*stageChunkSize >= max(e.stageSlots*stageChunkSize, in.g.Granted)) {
			return fmt.Errorf("chunk %d staged past recvEnd %d", i, in.recvEnd)
		}
	}
	return nil
}

// peersConsistent checks the peer table: every live RPC's peer is in it,
// each peer counts its live RPCs, and the idle list holds exactly the
// peers with none, oldest first.
func peersConsistent(e *Endpoint) error {
	rpcs, clients := make(map[*peer]int), make(map[*peer][]*rpc)
	for r := e.first; r != nil; r = r.next {
		if e.peerAt(r.peer.addr) != r.peer {
			return fmt.Errorf("rpc %d: its peer %v is not in the table", r.id, r.peer.ip)
		}
		rpcs[r.peer]++
		if r.client {
			clients[r.peer] = append(clients[r.peer], r)
		}
	}
	idle := 0
	for _, p := range allPeers(e) {
		if p.rpcs != rpcs[p] || p.idle != (p.rpcs == 0) {
			return fmt.Errorf("peer %v: rpcs %d (live %d), idle %v", p.ip, p.rpcs, rpcs[p], p.idle)
		}
		var prev *rpc
		i := 0
		for r := p.clients; r != nil; r = r.peerNext {
			if r.peerPrev != prev || i >= len(clients[p]) || clients[p][i] != r {
				return fmt.Errorf("peer %v: its client RPC list is broken at its entry %d", p.ip, i)
			}
			prev = r
			i++
		}
		if prev != p.clientsLast || i != len(clients[p]) {
			return fmt.Errorf("peer %v: %d client RPCs listed of %d, tail right %v", p.ip, i, len(clients[p]), prev == p.clientsLast)
		}
		if p.idle {
			idle++
		}
	}
	var prev *peer
	for p := e.idleHead; p != nil; p = p.idleNext {
		if p.idlePrev != prev || !p.idle || e.peerAt(p.addr) != p || (prev != nil && prev.idleSince > p.idleSince) {
			return fmt.Errorf("idle list broken at %v", p.ip)
		}
		prev = p
		idle--
	}
	if prev != e.idleTail || idle != 0 {
		return fmt.Errorf("idle list: tail %v, %d idle peers not on it", e.idleTail != prev, idle)
	}
	return nil
}

// requestsConsistent checks the list of incoming requests: exactly the
// server RPCs receiving their request, oldest DATA first.
func requestsConsistent(e *Endpoint) error {
	want := 0
	for r := e.first; r != nil; r = r.next {
		if !r.client && r.state == stateIncoming {
			want++
			if !r.reqListed {
				return fmt.Errorf("request %d not listed", r.id)
			}
		}
	}
	var prev *rpc
	for r := e.reqHead; r != nil; r = r.reqNext {
		if r.reqPrev != prev || r.client || r.state != stateIncoming || (prev != nil && prev.lastData > r.lastData) {
			return fmt.Errorf("request list broken at %d", r.id)
		}
		prev = r
		want--
	}
	if prev != e.reqTail || want != 0 {
		return fmt.Errorf("request list: tail ok %v, %d requests off it", prev == e.reqTail, want)
	}
	return nil
}

// heldConsistent checks the list of held requests (recvpool.go):
// exactly the incoming requests with a buffer and bytes still to come,
// oldest DATA first, each peer's heldIn the sum of its requests' held.
func heldConsistent(e *Endpoint) error {
	want, sums := 0, map[*peer]int{}
	for r := e.first; r != nil; r = r.next {
		if !r.client && r.state == stateIncoming && r.in.buf != nil && r.in.g.Received < r.in.length {
			want++
			if r.held != heldSize(r.port, r.in.length) {
				return fmt.Errorf("request %d: held %d, want %d", r.id, r.held, heldSize(r.port, r.in.length))
			}
			sums[r.peer] += r.held
		}
	}
	var prev *rpc
	for r := e.heldHead; r != nil; r = r.heldNext {
		if r.heldPrev != prev || r.held == 0 || (prev != nil && prev.lastData > r.lastData) {
			return fmt.Errorf("held list broken at %d", r.id)
		}
		prev = r
		want--
	}
	if prev != e.heldTail || want != 0 {
		return fmt.Errorf("held list: tail ok %v, %d held requests off it", prev == e.heldTail, want)
	}
	for _, p := range allPeers(e) {
		if p.heldIn != sums[p] {
			return fmt.Errorf("peer %v: heldIn %d, its requests hold %d", p.ip, p.heldIn, sums[p])
		}
	}
	return nil
}
