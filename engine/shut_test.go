package engine

import (
	"bytes"
	"net/netip"
	"testing"
)

// A server that answers 3 requests with 256 KB each and shuts its port at
// once: the 3 responses still reach the client whole (as a TCP close
// delivers what was written), the port number is free at once (bound
// again while they go), and the owner hears OutDone for each when its
// client has acked it. Close used to end them mid-way: the client heard
// RPC_UNKNOWN and failed with ErrPeerRestarted.
func TestPort_shutLetsResponsesFinish(t *testing.T) {
	const calls, size = 3, 256 << 10
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	var done int
	srv.SetHooks(PortHooks{OutDone: func(uint64, Addr, []byte) { done++ }})
	seed := map[uint64]byte{} // each RPC's response pattern
	for i := range calls {
		id, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, byte(i)))
		if err != nil {
			t.Fatal(err)
		}
		seed[id] = byte(i)
	}
	n.flush()
	for i := range calls {
		req := receive(t, srv)
		if err := srv.Reply(req, msg(size, byte(req.Data[0]))); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	srv.Shut()
	again, err := s.e.Bind(99)
	if err != nil {
		t.Fatalf("port 99 not free after Shut: %v", err)
	}
	n.advance(50_000_000)
	got := 0
	for {
		m, ok := cli.Receive()
		if !ok {
			break
		}
		if m.Err != nil {
			t.Errorf("RPC %d: %v", m.ID, m.Err)
			continue
		}
		if !bytes.Equal(m.Data, msg(size, seed[m.ID])) {
			t.Errorf("RPC %d: %d bytes, not the response", m.ID, len(m.Data))
			continue
		}
		got++
	}
	srv.Close()
	if got != calls || done != calls || s.e.NumRPCs() != 0 {
		t.Fatalf("%d of %d responses arrived whole, OutDone for %d, %d server RPCs left", got, calls, done, s.e.NumRPCs())
	}
	if s.e.ports[99] != again {
		t.Fatal("Close of the shut port unbound the port bound after it")
	}
}

// Shut ends what has no response yet: a client RPC of the port fails
// with ErrAborted, a request waiting for Reply is dropped (Reply then
// fails with ErrNoRPC, Send with ErrClosed); the request's client, whose RESEND
// finds neither the RPC nor the port, hears ICMP port unreachable and
// fails with ErrPortUnreachable.
func TestPort_shutEndsWhatHasNoResponse(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
	n.flush()
	req := receive(t, srv)
	if _, err := srv.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 0x8001}, msg(10, 1)); err != nil {
		t.Fatal(err)
	}
	srv.Shut()
	if m, ok := srv.Receive(); ok {
		t.Fatalf("a shut port delivered %+v", m)
	}
	if err := srv.Reply(req, msg(10, 1)); err != ErrNoRPC {
		t.Fatalf("Reply after Shut: %v, want ErrNoRPC", err)
	}
	if _, err := srv.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 0x8001}, msg(10, 1)); err != ErrClosed {
		t.Fatalf("Send after Shut: %v, want ErrClosed", err)
	}
	if s.e.NumRPCs() != 0 {
		t.Fatalf("%d RPCs left at the server", s.e.NumRPCs())
	}
	n.advance(50_000_000)
	m := receive(t, cli)
	if m.Err != ErrPortUnreachable || s.e.Metrics().ICMPPortUnreach == 0 {
		t.Fatalf("the client's RPC ended with %v (ICMP sent %d), want ErrPortUnreachable", m.Err, s.e.Metrics().ICMPPortUnreach)
	}
}

// A response its server gave up on (Close after Shut: the worker's linger
// ran out) mid-way: the client's RESEND finds no RPC on a port nobody
// binds, and is answered ICMP port unreachable (ClosedPortResends), so the
// client fails with ErrPortUnreachable (the server closed), not
// ErrPeerRestarted. One bound again answers RPC_UNKNOWN as before.
func TestHandleResend_closedPortAnsweredPortUnreachable(t *testing.T) {
	for _, rebind := range []bool{false, true} {
		n := newTestNet(t)
		c := n.addHost("c", 1, smallPackets)
		s := n.addHost("s", 2, smallPackets)
		srv, cli := serverAndClient(t, s, c, 99)
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
		n.flush()
		n.drop = func(l string) bool { return l == "s: xmit DATA 1000@1000 p6" }
		srv.Reply(receive(t, srv), msg(2500, 1))
		n.flush()
		srv.Shut()
		srv.Close()
		if rebind {
			s.e.Bind(99)
		}
		n.advance(10_000_000)
		m := receive(t, cli)
		// The first RESEND's unreachable comes 5 ticks after the
		// response's last DATA, within ResendTicks + ResendInterval: not
		// believed (icmpLive); the second's is.
		want, resends := ErrPortUnreachable, uint64(2)
		if rebind {
			want, resends = ErrPeerRestarted, 0
		}
		if m.Err != want || s.e.Metrics().ClosedPortResends != resends {
			t.Fatalf("rebound %v: the client's RPC ended with %v after %d closed-port RESENDs, want %v after %d",
				rebind, m.Err, s.e.Metrics().ClosedPortResends, want, resends)
		}
	}
}

// A request after its port was closed and its number bound again goes to
// the new port, and one after the number was freed finds no port: the
// port the last request found is not kept past its Close.
func TestPort_requestsFindThePortBoundNow(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	if _, err := cli.Send(dst, msg(100, 1)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	receive(t, srv)
	srv.Close()
	again, err := s.e.Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Send(dst, msg(100, 2)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	if m := receive(t, again); m.Data[0] != msg(100, 2)[0] {
		t.Fatalf("the new port got %d bytes, not the second request", len(m.Data))
	}
	if _, ok := srv.Receive(); ok {
		t.Fatal("the closed port got a request")
	}
	again.Close()
	dropped := s.e.Metrics().Drops[DropNoPort]
	if _, err := cli.Send(dst, msg(100, 3)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	if got := s.e.Metrics().Drops[DropNoPort]; got != dropped+1 {
		t.Fatalf("DropNoPort %d after a request to a freed port, want %d", got, dropped+1)
	}
}
