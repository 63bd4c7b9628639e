package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// frameInfo is what the variant tests check of a frame on the wire.
type frameInfo struct {
	from     [4]byte
	typ      wire.PacketType
	proto    uint8
	hijacked bool
	csumOK   bool // the Homa checksum is right
	csum     uint16
	homaLen  int
	homa     []byte
}

// watch records every frame the net delivers or drops.
func watch(t *testing.T, n *testNet) *[]frameInfo {
	var seen []frameInfo
	n.inspect = func(frame []byte, line string) {
		var f wire.Frame
		if r := wire.ParseFrame(frame, &f); r != wire.DropNone {
			t.Fatalf("unparseable frame (%v): %s", r, line)
		}
		p := wire.PseudoSumIPv4(f.IPv4.Src(), f.IPv4.Dst(), wire.IPProtoTCP, len(f.Homa))
		seen = append(seen, frameInfo{from: f.IPv4.Src(), typ: f.Type, proto: f.IPv4.Protocol(), hijacked: f.Hijacked,
			csumOK: wire.IsHomaChecksumValid(p, f.Homa, nil), csum: f.Homa.Checksum(), homaLen: len(f.Homa),
			homa: append([]byte(nil), f.Homa...)})
	}
	return &seen
}

// exchange sends a request of reqLen bytes from c to s's port 99, answers
// it with respLen bytes, and checks both arrive whole, advancing the clock
// up to 200 ms for retransmissions.
func exchange(t *testing.T, n *testNet, c, s *testHost, reqLen, respLen int) {
	t.Helper()
	srv := s.e.ports[99]
	if srv == nil {
		var err error
		if srv, err = s.e.Bind(99); err != nil {
			t.Fatal(err)
		}
	}
	cli, err := c.e.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	req, resp := msg(reqLen, 1), msg(respLen, 2)
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req); err != nil {
		t.Fatal(err)
	}
	var got Message
	for i := 0; i < 200; i++ {
		n.flush()
		if m, ok := srv.Receive(); ok {
			if !bytes.Equal(m.Data, req) {
				t.Fatalf("request of %d bytes arrived as %d, not byte-exact", reqLen, len(m.Data))
			}
			if err := srv.Reply(m, resp); err != nil {
				t.Fatal(err)
			}
		}
		if m, ok := cli.Receive(); ok {
			got = m
			break
		}
		n.advance(1_000_000)
	}
	if got.Err != nil || !bytes.Equal(got.Data, resp) {
		t.Fatalf("response: err %v, %d bytes of %d", got.Err, len(got.Data), respLen)
	}
}

// A peer configured for TCP-hijacked framing gets every packet as TCP
// with the markers and a right checksum, GRANTs included; it answers
// natively, checksum 0, unless told to fill it.
func TestHijack_framingAndChecksums(t *testing.T) {
	for _, fill := range []bool{false, true} {
		n := newTestNet(t)
		seen := watch(t, n)
		sIP := [4]byte{10, 0, 0, 2}
		c := n.addHost("c", 1, func(cfg *Config) {
			cfg.PeerOptions = func(a netip.Addr) PeerOptions {
				ip := a.Unmap().As4()
				return PeerOptions{Hijack: ip == sIP}
			}
		})
		s := n.addHost("s", 2, func(cfg *Config) { cfg.Checksum = fill })
		exchange(t, n, c, s, 60_000, 100_000) // unscheduled, granted DATA and GRANTs both ways
		types := map[string]bool{}
		for _, f := range *seen {
			fromC := f.from == c.ip
			types[map[bool]string{true: "c ", false: "s "}[fromC]+f.typ.String()] = true
			switch {
			case fromC && (f.proto != wire.IPProtoTCP || !f.hijacked || !f.csumOK):
				t.Fatalf("c's %v: protocol %d, hijacked %v, checksum ok %v", f.typ, f.proto, f.hijacked, f.csumOK)
			case !fromC && f.proto != wire.IPProtoHoma:
				t.Fatalf("s's %v: protocol %d", f.typ, f.proto)
			case !fromC && fill && !f.csumOK:
				t.Fatalf("s's %v (Checksum set): checksum %#04x wrong", f.typ, f.csum)
			case !fromC && !fill && f.csum != 0:
				t.Fatalf("s's %v: checksum %#04x, want 0", f.typ, f.csum)
			}
		}
		for _, want := range []string{"c DATA", "c GRANT", "s DATA", "s GRANT"} {
			if !types[want] {
				t.Errorf("fill %v: no %s seen (%v)", fill, want, types)
			}
		}
	}
}

// corrupt returns a copy of frame with one payload bit flipped.
func corrupt(frame []byte) []byte {
	b := bytes.Clone(frame)
	b[len(b)-1] ^= 1
	return b
}

// The Homa checksum is checked on hijacked packets by default, on every
// packet with VerifyAll, on none with VerifyNone; a wrong one is dropped
// and counted.
func TestChecksum_verifiedOnReceive(t *testing.T) {
	build := func(hijack, fill bool) []byte {
		n := newTestNet(t)
		c := n.addHost("c", 1, func(cfg *Config) {
			cfg.Checksum = fill
			cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Hijack: hijack} }
		})
		n.addHost("s", 2, nil)
		cli, _ := c.e.OpenClient()
		cli.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, msg(500, 1))
		return c.out[0].frame
	}
	for _, tc := range []struct {
		name    string
		verify  ChecksumCheck
		frame   []byte
		dropped bool
	}{
		{"hijacked, right", VerifyHijacked, build(true, false), false},
		{"hijacked, wrong", VerifyHijacked, corrupt(build(true, false)), true},
		{"hijacked, wrong, not checked", VerifyNone, corrupt(build(true, false)), false},
		{"native, zero, default", VerifyHijacked, build(false, false), false},
		{"native, zero, all checked", VerifyAll, build(false, false), true},
		{"native, filled, all checked", VerifyAll, build(false, true), false},
		{"native, filled and wrong, all checked", VerifyAll, corrupt(build(false, true)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNet(t)
			s := n.addHost("s", 2, func(cfg *Config) { cfg.VerifyChecksum = tc.verify })
			s.e.Bind(99)
			s.e.Receive(tc.frame)
			m := s.e.Metrics()
			if got := m.Drops[DropCause(wire.DropBadHomaChecksum)] == 1; got != tc.dropped {
				t.Errorf("dropped %v, want %v (received %d)", got, tc.dropped, m.PacketsRcvd[0])
			}
			if !tc.dropped && m.PacketsRcvd[0] != 1 {
				t.Errorf("DATA not received")
			}
		})
	}
}

// An endpoint speaking the upstream subset exchanges whole RPCs with one
// that does not know it yet: it sends nothing the subset lacks (no GRANT,
// no CUTOFFS, 36-byte RESENDs, incoming, cutoff_version, flags and urgent
// 0), and the full endpoint finds it out (from its first RESEND or DATA)
// and stops granting it.
func TestUpstream_exchangeWithDetection(t *testing.T) {
	n := newTestNet(t)
	seen := watch(t, n)
	c := n.addHost("c", 1, nil) // full, VariantAuto
	s := n.addHost("s", 2, func(cfg *Config) { cfg.Upstream = true })
	exchange(t, n, c, s, 100_000, 200_000)
	exchange(t, n, c, s, 300, 60_000) // again, now known
	if got := c.e.Metrics().UpstreamPeersDetected; got != 1 {
		t.Errorf("UpstreamPeersDetected %d, want 1", got)
	}
	resends, grantsToS := 0, 0
	for _, f := range *seen {
		if f.from == c.ip {
			if f.typ == wire.TypeGrant {
				grantsToS++
			}
			continue
		}
		c := wire.Common(f.homa)
		switch {
		case f.typ == wire.TypeGrant || f.typ == wire.TypeCutoffs:
			t.Fatalf("the upstream endpoint sent %v", f.typ)
		case c.Flags() != 0 || c.Urgent() != 0:
			t.Fatalf("its %v has flags %d, urgent %#x", f.typ, c.Flags(), c.Urgent())
		case f.typ == wire.TypeResend && f.homaLen != wire.ResendUpstreamLen:
			t.Fatalf("its RESEND is %d bytes", f.homaLen)
		case f.typ == wire.TypeData && (wire.Data(f.homa).Incoming() != 0 || wire.Data(f.homa).CutoffVersion() != 0 || wire.Data(f.homa).Pad() != [3]byte{}):
			t.Fatalf("its DATA says incoming %d, cutoff_version %d, pad %v", wire.Data(f.homa).Incoming(), wire.Data(f.homa).CutoffVersion(), wire.Data(f.homa).Pad())
		}
		if f.typ == wire.TypeResend {
			resends++
		}
	}
	if resends == 0 {
		t.Error("no RESEND: the full endpoint's first request was sent whole before it knew?")
	}
	if grantsToS != 0 {
		t.Errorf("the full endpoint sent %d GRANTs to the upstream one", grantsToS)
	}
}

// A peer configured as upstream is sent whole messages at once, without
// waiting for grants, and RESENDs of the 36-byte form.
func TestUpstream_configuredPeerGetsWholeMessages(t *testing.T) {
	n := newTestNet(t)
	sIP := [4]byte{10, 0, 0, 2}
	c := n.addHost("c", 1, func(cfg *Config) {
		cfg.PeerOptions = func(a netip.Addr) PeerOptions {
			ip := a.Unmap().As4()

			if ip == sIP {
				return PeerOptions{Variant: VariantUpstream}
			}
			return PeerOptions{}
		}
	})
	n.addHost("s", 2, func(cfg *Config) { cfg.Upstream = true })
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(sIP), Port: 99}, msg(100_000, 1))
	for range 200 { // the pacer's deadlines only: no frame comes back
		n.now = max(n.now, c.e.NextDeadline())
		c.e.Run()
	}
	sent := 0
	for _, sf := range c.out {
		if strings.Contains(sf.line, "DATA") {
			sent++
		}
	}
	if want := (100_000 + c.e.payload - 1) / c.e.payload; sent != want {
		t.Errorf("%d DATA packets sent before any answer, want all %d", sent, want)
	}
	if got := c.e.Metrics().UpstreamPeersDetected; got != 0 {
		t.Errorf("a configured peer counted as detected (%d)", got)
	}
}

// homa-dpdk's DATA extension (the incast allowance in the pad bytes) goes
// only to peers known to run homa-dpdk: not to one Config.KernelPeer
// names, unless PeerOptions says otherwise or it sends the extension
// first.
func TestExtension_onlyToHomaDPDKPeers(t *testing.T) {
	pad := func(frame []byte) [3]byte {
		var f wire.Frame
		if r := wire.ParseFrame(frame, &f); r != wire.DropNone || f.Type != wire.TypeData {
			t.Fatalf("not DATA: %v %v", r, f.Type)
		}
		return wire.Data(f.Homa).Pad()
	}
	for _, tc := range []struct {
		name   string
		kernel bool // KernelPeer names every peer
		named  bool // PeerOptions.HomaDPDK
		want   bool
	}{
		{"kernel peer", true, false, false},
		{"kernel peer named homa-dpdk", true, true, true},
		{"not a kernel peer", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNet(t)
			c := n.addHost("c", 1, func(cfg *Config) {
				cfg.KernelPeer = func(netip.Addr) bool { return tc.kernel }
				cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{HomaDPDK: tc.named} }
			})
			s := n.addHost("s", 2, nil)
			cli, _ := c.e.OpenClient()
			cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
			_, has := sched.DecodeAllowance(pad(c.out[0].frame))
			if has != tc.want {
				t.Errorf("extension sent %v, want %v (pad % x)", has, tc.want, pad(c.out[0].frame))
			}
			if !tc.want && pad(c.out[0].frame) != [3]byte{} {
				t.Errorf("pad bytes % x, want zero", pad(c.out[0].frame))
			}
		})
	}
	// A peer Config.KernelPeer names (it may run kernel Homa) that sends
	// the extension in a request has it in that request's response only:
	// a request's id is its sender's to choose, so it says nothing of the
	// address (issue 30 finding 5). One that sends it in the response to
	// our own request is homa-dpdk after all.
	n := newTestNet(t)
	kernel := func(cfg *Config) { cfg.KernelPeer = func(netip.Addr) bool { return true } }
	c := n.addHost("c", 1, kernel)
	s := n.addHost("s", 2, nil) // it sends the extension to c
	csrv, _ := c.e.Bind(99)
	ssrv, _ := s.e.Bind(99)
	sc, _ := s.e.OpenClient()
	sc.Send(Addr{IP: netip.AddrFrom4(c.ip), Port: 99}, msg(100, 3)) // s → c first: c hears the extension
	n.flush()
	csrv.Reply(receive(t, csrv), msg(100, 4))
	if _, has := sched.DecodeAllowance(pad(c.out[len(c.out)-1].frame)); !has {
		t.Error("no extension in the response to a request that carried one")
	}
	n.flush()
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
	if _, has := sched.DecodeAllowance(pad(c.out[len(c.out)-1].frame)); has {
		t.Error("a request's extension made its sender homa-dpdk")
	}
	n.flush()
	ssrv.Reply(receive(t, ssrv), msg(100, 5))
	n.flush()
	receive(t, cli)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
	if _, has := sched.DecodeAllowance(pad(c.out[len(c.out)-1].frame)); !has {
		t.Error("no extension to a peer whose response carried one")
	}
	if got := c.e.Metrics().HomaDPDKPeersDetected; got != 1 {
		t.Errorf("homa_dpdk_peers_detected %d, want 1", got)
	}
}
