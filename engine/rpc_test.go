package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

func TestRPC_smallRequestResponseAndAck(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(100, 1)
	id, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	if err != nil || id%2 != 0 {
		t.Fatalf("Send: id %d err %v", id, err)
	}
	n.flush()
	m := receive(t, srv)
	if !m.Request || m.ID != id^1 || !bytes.Equal(m.Data, req) || m.Peer != (Addr{netip.AddrFrom4(c.ip), cli.Num()}) {
		t.Fatalf("request %+v", m)
	}
	resp := msg(2000, 2)
	if err := srv.Reply(m, resp); err != nil {
		t.Fatal(err)
	}
	n.flush()
	r := receive(t, cli)
	if r.Request || r.ID != id || !bytes.Equal(r.Data, resp) || r.Err != nil {
		t.Fatalf("response %+v", r)
	}
	// The client is done; the server keeps its RPC until acked: NEED_ACK
	// after two ticks, answered by an ACK.
	wantLog(t, n, `
		c: xmit DATA 100@0 p6
		s: xmit CUTOFFS v1
		s: xmit DATA 1424@0 p6
		s: xmit DATA 576@1424 p6
		c: xmit CUTOFFS v1`)
	if c.e.NumRPCs() != 0 || s.e.NumRPCs() != 1 {
		t.Fatalf("rpcs: client %d server %d", c.e.NumRPCs(), s.e.NumRPCs())
	}
	n.advance(2_000_000)
	wantLog(t, n, `
		s: xmit NEED_ACK
		c: xmit ACK 1`)
	if s.e.NumRPCs() != 0 {
		t.Fatal("server RPC not freed by the ACK")
	}
	// The second request picks up the peer's cutoffs: 100 bytes go at 7.
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.flush()
	wantLog(t, n, `c: xmit DATA 100@0 p7`)
}

func TestRPC_unknownRestartsRequestWhoseDataWasLost(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	n.drop = dropOnce("c: xmit DATA 10@0 p6")
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	n.advance(5_000_000)
	wantLog(t, n, `
		c: xmit DATA 10@0 p6
		c: xmit RESEND 0+all@7
		s: xmit RPC_UNKNOWN
		c: xmit DATA 10@0 p6
		s: xmit CUTOFFS v1`)
	receive(t, srv)
	if c.e.Metrics().RPCRestarts != 1 || s.e.Metrics().UnknownRPCs != 1 {
		t.Fatal("metrics")
	}
}

func TestRPC_serverForgetsRPCOfRestartedClient(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	n.drop = dropOnce("c: xmit DATA 1000@1000 p6")
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(2500, 1))
	n.flush()
	// The client host restarts: a new endpoint at the same address, with
	// no RPCs. The server's RESEND is answered with RPC_UNKNOWN.
	n.hosts = n.hosts[1:]
	c2 := n.addHost("c", 1, func(cfg *Config) { smallPackets(cfg); cfg.IDSeed = 5000 })
	n.takeLog()
	n.advance(5_000_000)
	wantLog(t, n, `
		s: xmit RESEND 1000+1000@7
		c: xmit RPC_UNKNOWN`)
	if s.e.NumRPCs() != 0 || s.e.Metrics().ServerRPCDiscards != 1 || c2.e.NumRPCs() != 0 {
		t.Fatal("server kept the RPC")
	}
}

func TestRPC_unknownDuringResponseIsPeerRestarted(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	n.drop = func(l string) bool { return l == "s: xmit DATA 1000@1000 p6" }
	srv.Reply(receive(t, srv), msg(2500, 1))
	n.flush()
	// The server restarts mid-response, and its application binds the
	// port again (a port nobody binds answers ICMP port unreachable:
	// TestHandleResend_closedPortAnsweredPortUnreachable).
	n.hosts = n.hosts[:1]
	n.addHost("s", 2, smallPackets).e.Bind(99)
	n.advance(5_000_000)
	m := receive(t, cli)
	if m.Err != ErrPeerRestarted || c.e.NumRPCs() != 0 {
		t.Fatalf("result %+v", m)
	}
}

// An RPC_UNKNOWN that reaches a client while its response flows answered
// an older packet (under load a RESEND can overtake the request on a
// higher priority, and the server's RPC_UNKNOWN then arrives late): it is
// ignored and counted, and the RPC completes byte-exact. It used to fail
// the RPC with ErrPeerRestarted (3 of 200 memif daemon runs beside a CPU
// hog).
func TestRPC_staleUnknownDuringResponseIsIgnored(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	var req []byte
	n.inspect = func(frame []byte, line string) {
		if req == nil && strings.HasPrefix(line, "c: xmit DATA") {
			req = slices.Clone(frame)
		}
	}
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	n.drop = func(l string) bool { return l == "s: xmit DATA 1000@1000 p6" }
	want := msg(2500, 7)
	srv.Reply(receive(t, srv), want)
	n.flush()
	n.drop = nil

	// The server's RPC_UNKNOWN for the request, delivered now.
	var f wire.Frame
	if wire.ParseFrame(req, &f) != wire.DropNone {
		t.Fatal("no request frame seen")
	}
	b := make([]byte, frameHomaOffset+wire.CommonHeaderLen)
	eth := wire.EthernetFields{Dst: testMAC(c.ip), Src: testMAC(s.ip), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(s.ip, c.ip, 7, wire.CommonHeaderLen)
	ip.Encode(b[frameIPOffset:])
	uf := wire.ControlFields{Type: wire.TypeRPCUnknown, Common: replyCommon(f.Homa)}
	uf.Encode(b[frameHomaOffset:])
	c.e.Receive(b)
	if c.e.NumRPCs() != 1 || c.e.Metrics().StaleUnknowns != 1 {
		t.Fatalf("stale RPC_UNKNOWN: %d RPCs left, %d counted stale", c.e.NumRPCs(), c.e.Metrics().StaleUnknowns)
	}

	n.advance(5_000_000)
	m := receive(t, cli)
	if m.Err != nil || !bytes.Equal(m.Data, want) {
		t.Fatalf("result err %v, %d bytes", m.Err, len(m.Data))
	}
}

func TestRPC_acksPiggybackedThenSentWhenSixAreBuffered(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	for range 6 {
		cli.Send(dst, msg(10, 1))
	}
	n.flush()
	for range 6 {
		srv.Reply(receive(t, srv), msg(10, 2))
	}
	n.takeLog()
	n.flush()
	// Five acks are buffered; the sixth completion sends them all in one
	// ACK packet, whose own sender_id acknowledges the sixth RPC.
	wantLog(t, n, `
		c: xmit CUTOFFS v1
		c: xmit ACK 5`)
	if s.e.NumRPCs() != 0 {
		t.Fatalf("server rpcs %d", s.e.NumRPCs())
	}
	// One ack completed later rides on the next DATA to the peer.
	id, _ := cli.Send(dst, msg(10, 1))
	n.flush()
	srv.Reply(receive(t, srv), msg(10, 2))
	n.flush()
	n.takeLog()
	cli.Send(dst, msg(10, 1))
	n.flush()
	wantLog(t, n, fmt.Sprintf("c: xmit DATA 10@0 ack%d p7", id))
	if s.e.NumRPCs() != 1 || s.e.Metrics().AcksReceived != 7 { // only the new request's
		t.Fatalf("server rpcs %d, acks %d", s.e.NumRPCs(), s.e.Metrics().AcksReceived)
	}
	for range 6 {
		receive(t, cli)
	}
}

func TestRPC_privateResultOnlyThroughWait(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	id, _ := cli.SendPrivate(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	if _, ok, err := cli.Wait(id); ok || err != nil {
		t.Fatal("ready before the response")
	}
	n.flush()
	srv.Reply(receive(t, srv), msg(30, 2))
	n.flush()
	if _, ok := cli.Receive(); ok {
		t.Fatal("private result delivered to Receive")
	}
	m, ok, err := cli.Wait(id)
	if !ok || err != nil || len(m.Data) != 30 {
		t.Fatalf("Wait: %+v %v %v", m, ok, err)
	}
	if _, _, err := cli.Wait(id); err != ErrNoRPC {
		t.Fatal("a result taken twice")
	}
}

func TestRPC_abortOneAndAll(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	a, _ := cli.Send(dst, msg(10, 1))
	cli.Send(dst, msg(10, 1))
	cli.Send(dst, msg(10, 1))
	if err := cli.Abort(a); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, cli); m.ID != a || m.Err != ErrAborted {
		t.Fatalf("%+v", m)
	}
	cli.AbortAll()
	for range 2 {
		if m := receive(t, cli); m.Err != ErrAborted {
			t.Fatalf("%+v", m)
		}
	}
	if c.e.NumRPCs() != 0 || cli.Abort(a) != ErrNoRPC {
		t.Fatal("state left")
	}
}

func TestRPC_sendErrors(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	cli, _ := c.e.OpenClient()
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 9, 9, 9}), Port: 1}, msg(10, 0)); err != ErrPeerUnknown {
		t.Fatalf("unknown peer: %v", err)
	}
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 1}, nil); err != ErrMessageLength {
		t.Fatalf("empty: %v", err)
	}
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 1}, make([]byte, 1_000_001)); err != ErrMessageLength {
		t.Fatalf("too long: %v", err)
	}
	if _, err := c.e.Bind(0x8000); err != ErrBadPort {
		t.Fatal(err)
	}
	c.e.Bind(5)
	if _, err := c.e.Bind(5); err != ErrPortInUse {
		t.Fatal(err)
	}
	if c.e.NumRPCs() != 0 {
		t.Fatal("failed sends left state")
	}
}

func TestRPC_lateDuplicateAfterAckDoesNotExecuteAgain(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	late := c.out[0].frame // the request packet, to deliver again later
	n.flush()
	srv.Reply(receive(t, srv), msg(10, 2))
	n.flush()
	receive(t, cli)
	n.advance(2_000_000) // NEED_ACK, ACK: the server RPC is gone
	if s.e.NumRPCs() != 0 {
		t.Fatal("server RPC not acked")
	}
	s.e.Receive(late)
	if _, ok := srv.Receive(); ok || s.e.NumRPCs() != 0 || s.e.Metrics().Drops[DropStale] != 1 {
		t.Fatal("a late duplicate executed the request again")
	}
	// A retransmitted packet never starts a server RPC either.
	retx := slices.Clone(late)
	wire.Data(retx[frameHomaOffset:]).SetRetransmit(1)
	wire.Data(retx[frameHomaOffset:]).Common().SetSenderID(1000)
	s.e.Receive(retx)
	if s.e.NumRPCs() != 0 || s.e.Metrics().Drops[DropStale] != 2 {
		t.Fatal("a retransmission started a request")
	}
}

// TestRPC_closePort: Close ends the port's client and server RPCs,
// discards what was not taken, refuses further use, frees the number
// (a request to it now gets ICMP port unreachable) and may be repeated.
func TestRPC_closePort(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	cli.Send(dst, msg(10, 1))
	cli.Send(dst, msg(10, 2))
	n.flush()
	inService := receive(t, srv) // taken, not answered
	// The second request waits in srv's queue, a third (private) arrives:
	// three RPCs at each end.
	priv, _ := cli.SendPrivate(dst, msg(10, 3))
	n.flush()
	if s.e.NumRPCs() != 3 || c.e.NumRPCs() != 3 {
		t.Fatalf("rpcs before Close: server %d client %d", s.e.NumRPCs(), c.e.NumRPCs())
	}
	n.takeLog()

	srv.Close()
	if s.e.NumRPCs() != 0 {
		t.Fatalf("server port closed with %d RPCs left", s.e.NumRPCs())
	}
	if _, ok := srv.Receive(); ok {
		t.Fatal("a queued request survived Close")
	}
	if err := srv.Reply(inService, msg(10, 4)); err != ErrNoRPC {
		t.Fatalf("Reply after Close: %v", err)
	}
	if _, err := srv.Send(dst, msg(10, 5)); err != ErrClosed {
		t.Fatalf("Send after Close: %v", err)
	}
	srv.Close() // a no-op

	cli.Close()
	if c.e.NumRPCs() != 0 {
		t.Fatalf("client port closed with %d RPCs left", c.e.NumRPCs())
	}
	if _, ok := cli.Receive(); ok {
		t.Fatal("an aborted result was delivered after Close")
	}
	if _, _, err := cli.Wait(priv); err != ErrNoRPC {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, err := cli.Send(dst, msg(10, 6)); err != ErrClosed {
		t.Fatalf("Send after Close: %v", err)
	}
	n.flush()
	if log := n.takeLog(); log != "" {
		t.Fatalf("Close sent:\n%s", log)
	}

	// The number is free: a request to it is refused, and it binds again.
	cli2, _ := c.e.OpenClient()
	cli2.Send(dst, msg(10, 7))
	n.flush()
	if m := receive(t, cli2); m.Err != ErrPortUnreachable {
		t.Fatalf("request to a closed port: %+v", m)
	}
	srv2, err := s.e.Bind(99)
	if err != nil {
		t.Fatalf("Bind after Close: %v", err)
	}
	cli2.Send(dst, msg(10, 8))
	n.flush()
	receive(t, srv2)
}

// Messages sent with SendRef and ReplyRef go out through the DataSender
// with their refs, payloads not copied into the frames; when the
// transmit side refuses, the engine copies, and the messages arrive the
// same.
func TestSendRef_payloadsFromTheMessagesMemory(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		n := newTestNet(t)
		c := n.addHost("c", 1, nil)
		s := n.addHost("s", 2, nil)
		c.zcRefuse, s.zcRefuse = refuse, refuse
		srv, _ := s.e.Bind(99)
		cl, _ := c.e.OpenClient()
		var done []uint64
		cl.SetHooks(PortHooks{OutDone: func(id uint64, _ Addr, _ []byte) { done = append(done, id) }})
		req := msg(5000, 3)
		id, err := cl.SendRef(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req, 0x5e17)
		if err != nil {
			t.Fatal(err)
		}
		n.advance(2_000_000)
		in := receive(t, srv)
		if !bytes.Equal(in.Data, req) {
			t.Fatalf("refuse=%v: request differs", refuse)
		}
		resp := msg(3000, 9)
		if err := srv.ReplyRef(in, resp, 0x4e91); err != nil {
			t.Fatal(err)
		}
		n.advance(2_000_000)
		out := receive(t, cl)
		if out.ID != id || !bytes.Equal(out.Data, resp) {
			t.Fatalf("refuse=%v: response differs", refuse)
		}
		if len(done) != 1 || done[0] != id {
			t.Errorf("refuse=%v: OutDone for %v, want [%d]", refuse, done, id)
		}
		zc := c.e.Metrics().ZeroCopyPackets + s.e.Metrics().ZeroCopyPackets
		if refuse {
			if zc != 0 || len(c.zcRefs)+len(s.zcRefs) != 0 {
				t.Errorf("refused: %d zero-copy packets", zc)
			}
			continue
		}
		// 5000 bytes: 4 DATA packets; 3000: 3.
		if zc != 7 || len(c.zcRefs) != 4 || len(s.zcRefs) != 3 || c.zcRefs[0] != 0x5e17 || s.zcRefs[0] != 0x4e91 {
			t.Errorf("zero-copy packets %d, refs %v / %v", zc, c.zcRefs, s.zcRefs)
		}
	}
}

// unknownServer is a host on memnet that keeps no RPC state: it answers
// every RESEND with RPC_UNKNOWN, and every DATA with RPC_UNKNOWN too or,
// with busy set, with BUSY (as a server that takes the request and then
// drops it, its pool full, would look).
type unknownServer struct {
	mh   *memnet.Host
	busy bool
	rcvd int
}

func (u *unknownServer) receive(frame []byte) {
	var f wire.Frame
	if wire.ParseFrame(frame, &f) != wire.DropNone || f.Type == wire.TypeRPCUnknown {
		return
	}
	u.rcvd++
	t := wire.TypeRPCUnknown
	if u.busy && f.Type == wire.TypeData {
		t = wire.TypeBusy
	}
	b := make([]byte, frameHomaOffset+wire.CommonHeaderLen)
	eth := wire.EthernetFields{Dst: wire.Ethernet(frame).Src(), Src: u.mh.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(u.mh.IP(), f.IPv4.Src(), 7, wire.CommonHeaderLen)
	ip.Encode(b[frameIPOffset:])
	c := wire.ControlFields{Type: t, Common: replyCommon(f.Homa)}
	c.Encode(b[frameHomaOffset:])
	u.mh.Send(b)
}

// A client RPC ends within its timeout whatever the server does: a
// server that answers RPC_UNKNOWN every time (and one that answers the
// request with BUSY, then RESEND with RPC_UNKNOWN) makes it restart, but
// restarts neither reset its silence nor go on without bound: it fails
// with ErrTimeout after TimeoutTicks of silence (+1 for the tick Send
// fell in) when the server sends nothing else, and after MaxRestarts
// restarts, at most one per ResendInterval, when it answers BUSY in
// between: ResendInterval × (MaxRestarts + 1) + 1 ticks.
func TestRPC_restartsDoNotPostponeTimeout(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) {
			net := memnet.New(memnet.Config{Seed: 1})
			c := &mnHost{mh: net.AddHost([4]byte{10, 0, 3, 1}), buf: make([]byte, 2048)}
			srv := &unknownServer{mh: net.AddHost([4]byte{10, 0, 3, 2}), busy: busy}
			srv.mh.SetReceive(srv.receive)
			cfg := DefaultConfig()
			cfg.IP, cfg.MAC, cfg.Clock = c.mh.IP(), c.mh.MAC(), net.Now
			c.neigh.Add(netip.AddrFrom4(srv.mh.IP()), srv.mh.MAC())
			cfg.Resolve = c.neigh.Resolve
			cfg.IDSeed = 100
			e, err := New(cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			c.mh.SetReceive(e.Receive)
			cli, _ := e.OpenClient()
			start := net.Now()
			id, _ := cli.Send(Addr{IP: netip.AddrFrom4(srv.mh.IP()), Port: 99}, msg(100_000, 1))
			bound := int64(cfg.TimeoutTicks+1) * cfg.TickNs
			if busy {
				restarts := cfg.TimeoutTicks / cfg.ResendInterval // MaxRestarts' default
				bound = int64(cfg.ResendInterval*(restarts+1)+1) * cfg.TickNs
			}
			var m Message
			for net.Now()-start < 10*bound {
				net.RunUntil(net.Now() + cfg.TickNs)
				e.Run()
				if r, ok := cli.Receive(); ok {
					m = r
					break
				}
			}
			took := net.Now() - start
			t.Logf("ended after %.0f ms with %v; %d restarts, %d packets at the server", float64(took)/1e6, m.Err,
				e.Metrics().RPCRestarts, srv.rcvd)
			if m.ID != id || m.Err != ErrTimeout || took > bound {
				t.Fatalf("after %d ms: result %+v, want ErrTimeout within %d ms", took/1e6, m, bound/1e6)
			}
			// One restart per ResendInterval at most.
			if r := e.Metrics().RPCRestarts; r > uint64(cfg.TimeoutTicks/cfg.ResendInterval+1) {
				t.Fatalf("%d restarts", r)
			}
		})
	}
}
