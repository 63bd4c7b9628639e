package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Issue 30, findings 1 and 5: what a blind stranger can make an endpoint
// believe about which Homa a real peer runs, and about its unscheduled
// allowance, with packets from that peer's address.

// spoofedHoma wraps a Homa header (and payload) in the Ethernet and IPv4
// headers of a frame from src to dst.
func spoofedHoma(src, dst [4]byte, homa []byte) []byte {
	b := make([]byte, frameHomaOffset+len(homa))
	eth := wire.EthernetFields{Dst: testMAC(dst), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 6, len(homa))
	ip.Encode(b[frameIPOffset:])
	copy(b[frameHomaOffset:], homa)
	return b
}

// spoofedData is a one-packet DATA from src (client port 0x8000, client
// id id) to dst's port 99: message length msgLen, incoming incoming, the
// pad bytes pad, 1,000 payload bytes at offset 0.
func spoofedData(src, dst [4]byte, id uint64, msgLen, incoming int, pad [3]byte) []byte {
	h := make([]byte, wire.DataHeaderLen+1000)
	d := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: id},
		MessageLength: uint32(msgLen), Incoming: uint32(incoming), Pad: pad}
	d.Encode(h)
	return spoofedHoma(src, dst, h)
}

// spoofedResend36 is an upstream-subset RESEND (36 bytes) from src's
// client port 0x8000, client id id, to dst's port 99.
func spoofedResend36(src, dst [4]byte, id uint64) []byte {
	h := make([]byte, wire.ResendUpstreamLen)
	f := wire.ResendFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: id},
		Length: wire.ResendAll, Upstream: true}
	f.Encode(h)
	return spoofedHoma(src, dst, h)
}

// rpcOutcome is what one RPC run by runRPC saw.
type rpcOutcome struct {
	ms      int    // milliseconds until the client had its result (-1: none by the limit)
	err     error  // the result's error
	grants  int    // GRANTs the server sent (for the request)
	respGr  int    // GRANTs the client sent (for the response)
	resends int    // RESENDs either sent
	log     string // the frames sent, one line each
}

// runRPC sends a request of reqLen bytes from c to s's port 99 (bound
// already), answers it with respLen bytes, and runs the clock in 1 ms
// steps for up to limitMs, then reports. Requests other than this one
// (a stranger's) are taken and left unanswered.
func runRPC(t *testing.T, n *testNet, c, s *testHost, reqLen, respLen, limitMs int) rpcOutcome {
	t.Helper()
	srv := s.e.ports[99]
	cli, err := c.e.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	n.takeLog()
	req, resp := msg(reqLen, 1), msg(respLen, 2)
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req); err != nil {
		t.Fatal(err)
	}
	out := rpcOutcome{ms: -1}
	for ms := 0; ms <= limitMs; ms++ {
		n.flush()
		for {
			m, ok := srv.Receive()
			if !ok {
				break
			}
			if bytes.Equal(m.Data, req) {
				if err := srv.Reply(m, resp); err != nil {
					t.Fatal(err)
				}
			}
		}
		n.flush()
		if m, ok := cli.Receive(); ok {
			out.ms, out.err = ms, m.Err
			if m.Err == nil && !bytes.Equal(m.Data, resp) {
				t.Fatalf("response of %d bytes arrived as %d, not byte-exact", respLen, len(m.Data))
			}
			break
		}
		n.advance(1_000_000)
	}
	out.log = n.takeLog()
	for _, l := range strings.Split(out.log, "\n") {
		switch {
		case strings.HasPrefix(l, s.name+": xmit GRANT"):
			out.grants++
		case strings.HasPrefix(l, c.name+": xmit GRANT"):
			out.respGr++
		}
		if strings.Contains(l, "xmit RESEND") {
			out.resends++
		}
	}
	return out
}

// spoofNet is two real homa-dpdk endpoints, c at 10.0.0.1 and s at
// 10.0.0.2, each with port 99 bound.
func spoofNet(t *testing.T, cMod, sMod func(*Config)) (*testNet, *testHost, *testHost) {
	n := newTestNet(t)
	c := n.addHost("c", 1, cMod)
	s := n.addHost("s", 2, sMod)
	for _, h := range []*testHost{c, s} {
		if _, err := h.e.Bind(99); err != nil {
			t.Fatal(err)
		}
	}
	return n, c, s
}

// A packet from a real peer's address that no live RPC of that peer's
// matched is no evidence of which Homa the peer runs: a DATA with
// incoming 0 (a request's first packet, from a made-up id), or a
// 36-byte RESEND for a request the stranger made up itself, leaves c
// taken for the full protocol at s. Then 1 MB requests go both ways in
// the time and with the GRANTs they have without the spoof, and no RESEND. At ceae0b5 the DATA made s
// take c for the upstream subset for good: s never granted c's request,
// asked for it with a 36-byte RESEND after 5 ms, from which c took s for
// the subset in turn, and neither granted the other again.
func TestVariant_spoofFromPeerAddressDowngradesNobody(t *testing.T) {
	n0, c0, s0 := spoofNet(t, nil, nil)
	base := runRPC(t, n0, c0, s0, 1_000_000, 100_000, 50) // the same RPC without the spoof
	for _, tc := range []struct {
		name  string
		spoof func(n *testNet, c, s *testHost)
	}{
		{"DATA with incoming 0", func(n *testNet, c, s *testHost) {
			s.e.Receive(spoofedData(c.ip, s.ip, 1<<40, 100_000, 0, [3]byte{}))
		}},
		{"36-byte RESEND for a made-up request", func(n *testNet, c, s *testHost) {
			s.e.Receive(spoofedData(c.ip, s.ip, 1<<40, 1000, 1000, [3]byte{})) // a whole request, full protocol
			receive(n.t.(*testing.T), s.e.ports[99])                           // in service, unanswered
			s.e.Receive(spoofedResend36(c.ip, s.ip, 1<<40))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, c, s := spoofNet(t, nil, nil)
			tc.spoof(n, c, s)
			n.flush()
			for _, dir := range []struct {
				name     string
				from, to *testHost
			}{{"c to s", c, s}, {"s to c", s, c}} {
				o := runRPC(t, n, dir.from, dir.to, 1_000_000, 100_000, 50)
				t.Logf("%s: 1 MB request done in %d ms, %d GRANTs for it, %d GRANTs for the 100 KB response, %d RESENDs (without the spoof: %d ms, %d, %d, %d)",
					dir.name, o.ms, o.grants, o.respGr, o.resends, base.ms, base.grants, base.respGr, base.resends)
				if o.ms < 0 || o.ms > base.ms || o.err != nil {
					t.Errorf("%s: a 1 MB request took %d ms (err %v), want %d ms as without the spoof", dir.name, o.ms, o.err, base.ms)
				}
				if o.grants != base.grants || o.respGr != base.respGr || o.resends != 0 {
					t.Errorf("%s: %d GRANTs for the request, %d for the response, %d RESENDs: want %d and %d as without the spoof, no RESEND",
						dir.name, o.grants, o.respGr, o.resends, base.grants, base.respGr)
				}
			}
			for _, h := range []*testHost{c, s} {
				if got := h.e.Metrics().UpstreamPeersDetected; got != 0 {
					t.Errorf("%s: upstream_peers_detected %d, want 0", h.name, got)
				}
			}
		})
	}
}

// c takes s for the full protocol by configuration (peers[].variant:
// full); a spoofed DATA with incoming 0 from c's address reaches s. c's
// 1 MB request to s is still granted and completes in the normal time. At
// ceae0b5 s took c for the subset and never granted it, c (configured
// full) waited for grants, and each kept the other alive: s's RESENDs
// reset c's silence, c's BUSYs s's, with no end and no timeout in 2 s.
func TestVariant_spoofAgainstPeerConfiguredFull(t *testing.T) {
	full := func(cfg *Config) {
		cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Variant: VariantFull} }
	}
	n, c, s := spoofNet(t, full, nil)
	s.e.Receive(spoofedData(c.ip, s.ip, 1<<40, 100_000, 0, [3]byte{}))
	o := runRPC(t, n, c, s, 1_000_000, 100, 2000)
	t.Logf("1 MB request: done in %d ms (err %v), %d GRANTs, %d RESENDs, %d RPC timeouts at c",
		o.ms, o.err, o.grants, o.resends, c.e.Metrics().RPCTimeouts)
	if o.ms < 0 || o.ms > 3 || o.err != nil || o.grants == 0 {
		t.Errorf("1 MB request: done in %d ms (err %v, -1: no end in 2 s), %d GRANTs: want at most 3 ms, granted", o.ms, o.err, o.grants)
	}
}

// Ends that disagree by configuration (c takes s for the full protocol, s
// takes c for the upstream subset) cannot exchange a message that needs
// grants: s never grants, c never sends what was not granted. Each RPC
// still ends within its timeout, both ways: a RESEND for bytes never
// granted, and a BUSY while an RPC waits for grants, or from a sender of
// the full protocol of a message taken whole, are not life
// (variant_mismatches). At ceae0b5 the two kept each other alive with
// RESENDs and BUSYs: no end in 2 s, no timeout.
func TestVariant_configuredMismatchTimesOut(t *testing.T) {
	cMod := func(cfg *Config) {
		cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Variant: VariantFull} }
	}
	sMod := func(cfg *Config) {
		cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Variant: VariantUpstream} }
	}
	for _, tc := range []struct {
		name            string
		reqLen, respLen int
		client          func(c, s *testHost) (*testHost, *testHost)
	}{
		{"c's 1 MB request", 1_000_000, 100, func(c, s *testHost) (*testHost, *testHost) { return c, s }},
		{"c's 1 MB response", 100, 1_000_000, func(c, s *testHost) (*testHost, *testHost) { return s, c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, c, s := spoofNet(t, cMod, sMod)
			from, to := tc.client(c, s)
			o := runRPC(t, n, from, to, tc.reqLen, tc.respLen, 2000)
			// Whatever is left ends within a timeout of the result.
			n.advance(int64(c.e.cfg.TimeoutTicks) * c.e.cfg.TickNs)
			left := c.e.NumRPCs() + s.e.NumRPCs()
			t.Logf("result after %d ms (err %v), %d RESENDs; RPCs left a timeout later: %d; variant_mismatches c %d, s %d",
				o.ms, o.err, o.resends, left, c.e.Metrics().VariantMismatches, s.e.Metrics().VariantMismatches)
			if limit := c.e.cfg.TimeoutTicks + 2*c.e.cfg.ResendInterval; o.ms < 0 || o.ms > limit || o.err == nil {
				t.Errorf("result after %d ms (err %v; -1: none in 2 s), want an error within %d ms", o.ms, o.err, limit)
			}
			if left != 0 {
				t.Errorf("%d RPCs left a timeout after the result, want 0", left)
			}
			if c.e.Metrics().VariantMismatches == 0 {
				t.Error("variant_mismatches 0 at c")
			}
		})
	}
}

// A spoofed allowance is no evidence either. A DATA from s's address
// that matches no RPC of c's (a response to a request c never sent),
// whose pad bytes advertise an allowance of 0, leaves c's next 30 KB
// request to s its whole first burst, 22 packets; a request made up from
// s's address, which c cannot tell from one of s's, cuts it for the tick
// it came in and the next only (weakAllowanceTicks), then 22 again. A peer
// configured as kernel Homa (peers[].variant: full) is not taken for
// homa-dpdk by either. At ceae0b5 the burst was 1 packet for 10 ms after
// either, and the kernel peer was sent pad bytes from then on.
func TestAllowance_spoofedFromPeerAddressIgnored(t *testing.T) {
	kernelFull := func(cfg *Config) {
		cfg.KernelPeer = func(netip.Addr) bool { return true }
		cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Variant: VariantFull} }
	}
	for _, tc := range []struct {
		name    string
		mod     func(*Config)
		id      uint64 // the spoof's sender id: odd, a response's
		afterMs int64  // the request goes this long after the spoof
	}{
		{"response to no request, homa-dpdk peer", nil, 1<<40 + 1, 0},
		{"response to no request, peer configured kernel full", kernelFull, 1<<40 + 1, 0},
		{"made-up request, homa-dpdk peer", nil, 1 << 40, 2},
		{"made-up request, peer configured kernel full", kernelFull, 1 << 40, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, c, s := spoofNet(t, tc.mod, nil)
			c.e.Receive(spoofedData(s.ip, c.ip, tc.id, 100_000, 40_000, sched.EncodeAllowance(0)))
			for range tc.afterMs {
				n.now += 1_000_000
				c.e.Run()
			}
			c.out = nil
			cli, _ := c.e.OpenClient()
			if _, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(30_000, 1)); err != nil {
				t.Fatal(err)
			}
			for range 200 { // the pacer's deadlines only: no frame comes back
				n.now = max(n.now, c.e.NextDeadline())
				c.e.Run()
			}
			sent, padded := 0, 0
			for _, sf := range c.out {
				if !strings.Contains(sf.line, "DATA") {
					continue
				}
				sent++
				var f wire.Frame
				wire.ParseFrame(sf.frame, &f)
				if _, ok := sched.DecodeAllowance(wire.Data(f.Homa).Pad()); ok {
					padded++
				}
			}
			t.Logf("first burst of a 30 KB request %d ms after the spoof: %d packets, %d with pad bytes", tc.afterMs, sent, padded)
			if sent != 22 {
				t.Errorf("first burst %d packets, want 22", sent)
			}
			if tc.mod != nil && padded != 0 {
				t.Errorf("%d packets to a kernel peer carry pad bytes, want 0", padded)
			}
		})
	}
}

// A packet for one of our requests, matched by its id and ports, is what
// shows which Homa its server runs, and it can be undone: a 36-byte
// RESEND for c's request makes c take s for the subset (its next request
// goes whole), and s's response to that request, whose DATA says how far
// it sends (the full protocol's), makes c take s for the full protocol
// again (its next request waits for grants past its unscheduled bytes).
// The same RESEND with other ports changes nothing.
func TestVariant_detectedByOurRPCAndReverted(t *testing.T) {
	n, c, s := spoofNet(t, nil, nil)
	cli, _ := c.e.OpenClient()
	id, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100_000, 1))
	if err != nil {
		t.Fatal(err)
	}
	p := c.e.peerAt(wire.MapIPv4(s.ip))
	c.e.Receive(resendFrameOf(s.ip, c.ip, cli.num+1, id^1, 0, wire.ResendAll, true)) // not its ports
	if p.upstream {
		t.Fatal("a RESEND with another port's number made c take s for the subset")
	}
	c.e.Receive(resendFrameOf(s.ip, c.ip, cli.num, id^1, 0, wire.ResendAll, true))
	if !p.upstream || c.e.Metrics().UpstreamPeersDetected != 1 {
		t.Fatalf("a 36-byte RESEND for c's request: upstream %v, detected %d", p.upstream, c.e.Metrics().UpstreamPeersDetected)
	}
	burst := func() int { // DATA packets of a 1 MB request sent before any answer
		c.out = nil // (the first request's packets are lost)
		if _, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(1_000_000, 2)); err != nil {
			t.Fatal(err)
		}
		for end := n.now + 3_000_000; n.now < end; { // the pacer's deadlines, 3 ms: no frame comes back
			n.now = min(max(n.now+1, c.e.NextDeadline()), end)
			c.e.Run()
		}
		k := 0
		for _, sf := range c.out {
			if strings.Contains(sf.line, "DATA") {
				k++
			}
		}
		return k
	}
	if k := burst(); k != 703 {
		t.Errorf("taken for the subset: %d packets of a 1 MB request before any answer, want all 703", k)
	}
	n.flush()
	ssrv := s.e.ports[99]
	for m, ok := ssrv.Receive(); ok; m, ok = ssrv.Receive() {
		if len(m.Data) == 1_000_000 {
			ssrv.Reply(m, msg(100, 3)) // DATA with incoming 100: the full protocol
		}
	}
	n.flush()
	if p.upstream || c.e.Metrics().UpstreamPeersReverted != 1 {
		t.Fatalf("after s's response: upstream %v, reverted %d", p.upstream, c.e.Metrics().UpstreamPeersReverted)
	}
	if k := burst(); k != 29 {
		t.Errorf("taken for the full protocol again: %d packets of a 1 MB request before any answer, want its 29 unscheduled", k)
	}
}

// The allowance in the pad bytes of the response to one of our requests
// (its id and ports, not other ports) holds AllowanceTicks, raised to the
// least a homa-dpdk peer advertises (allowances_clamped).
func TestAllowance_fromOurResponseHeldAllowanceTicks(t *testing.T) {
	n, c, s := spoofNet(t, nil, nil)
	cli, _ := c.e.OpenClient()
	id, _ := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
	p := c.e.peerAt(wire.MapIPv4(s.ip))
	response := func(dport uint16, allowance int) []byte {
		h := make([]byte, wire.DataHeaderLen+1000)
		d := wire.DataFields{Common: wire.CommonFields{SrcPort: 99, DstPort: dport, SenderID: id ^ 1},
			MessageLength: 100_000, Incoming: 40_000, Pad: sched.EncodeAllowance(allowance)}
		d.Encode(h)
		return spoofedHoma(s.ip, c.ip, h)
	}
	c.e.Receive(response(cli.num+1, 2048)) // another port: not believed
	if got := c.e.unschedBytes(p); got != 40_000 {
		t.Fatalf("allowance from a DATA with other ports: unscheduled bytes %d", got)
	}
	c.e.Receive(response(cli.num, 0))
	if got := c.e.unschedBytes(p); got != 1408 || c.e.Metrics().AllowancesClamped != 1 {
		t.Fatalf("allowance 0 in our response: unscheduled bytes %d, clamped %d; want 1,408 (min_allowance), 1",
			got, c.e.Metrics().AllowancesClamped)
	}
	n.advance(int64(c.e.cfg.AllowanceTicks+1) * c.e.cfg.TickNs)
	if got := c.e.unschedBytes(p); got != 40_000 {
		t.Fatalf("allowance did not expire: %d", got)
	}
}
