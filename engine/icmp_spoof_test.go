package engine

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// quotedHoma returns the first n bytes of a DATA header from port sport
// to dport with sender id id: what an unreachable quotes of it.
func quotedHoma(sport, dport uint16, id uint64, n int) []byte {
	h := make([]byte, wire.DataHeaderLen)
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id},
		MessageLength: 1000, Incoming: 1000, CutoffVersion: 1}
	f.Encode(h)
	return h[:n]
}

// unreachable4 returns an IPv4 ICMP port unreachable from src to dst that
// quotes the IPv4 header of a packet from qsrc to qdst of protocol proto,
// then homa.
func unreachable4(src, dst, qsrc, qdst [4]byte, proto uint8, homa []byte) []byte {
	q := wire.HomaIPv4Fields(qsrc, qdst, 6, wire.DataHeaderLen+1000)
	q.Protocol = proto
	quoted := make([]byte, wire.IPv4MinHeaderLen+len(homa))
	q.Encode(quoted)
	copy(quoted[wire.IPv4MinHeaderLen:], homa)
	return frameOf(icmpUnreachable4(src, dst, quoted))
}

// unreachable6 is unreachable4 for ICMPv6, in an Ethernet frame.
func unreachable6(src, dst, qsrc, qdst [16]byte, next uint8, homa []byte) []byte {
	q := wire.HomaIPv6Fields(qsrc, qdst, 6, wire.DataHeaderLen+1000)
	q.NextHeader = next
	m := wire.ICMPv6(make([]byte, wire.ICMPv6HeaderLen+wire.IPv6HeaderLen+len(homa)))
	q.Encode(m[wire.ICMPv6HeaderLen:])
	copy(m[wire.ICMPv6HeaderLen+wire.IPv6HeaderLen:], homa)
	m[0], m[1] = wire.ICMPv6DestUnreachable, wire.ICMPv6PortUnreachable
	m.SetChecksum(src, dst)
	b := make([]byte, wire.EthernetHeaderLen+wire.IPv6HeaderLen+len(m))
	eth := wire.EthernetFields{Type: wire.EtherTypeIPv6}
	eth.Encode(b)
	ip := wire.IPv6Fields{PayloadLength: uint16(len(m)), NextHeader: wire.IPProtoICMPv6, HopLimit: wire.DefaultHopLimit, Src: src, Dst: dst}
	ip.Encode(b[wire.EthernetHeaderLen:])
	copy(b[wire.EthernetHeaderLen+wire.IPv6HeaderLen:], m)
	return b
}

// icmpDrops returns e's unreachables refused: spoofed, matching no RPC,
// and sparing live RPCs; and the RPCs spared.
func icmpDrops(e *Endpoint) [4]uint64 {
	m := e.Metrics()
	return [4]uint64{m.Drops[DropICMPSpoofed], m.Drops[DropICMPNoRPC], m.Drops[DropICMPIgnoredLive], m.ICMPLiveRPCsSpared}
}

// spoofBatch is what a stranger sends a client to fail its RPCs to a
// server port without seeing a packet, and then what one who sees their
// ids sends: the finding's packet (from the stranger's own address,
// quoting a packet from there, from another port: 70 bytes), 64
// unreachables that look like the server's but name guessed ids, and
// one naming each RPC whose response is arriving (live), from the
// server's address. mk(outerSrc, quotedSrc, sport, homa) builds each.
func spoofBatch(stranger, client, server [16]byte, cport uint16, live []uint64,
	mk func(src, qsrc [16]byte, homa []byte) []byte) [][]byte {
	rng := rand.New(rand.NewPCG(4, 30))
	frames := [][]byte{mk(stranger, stranger, quotedHoma(cport+1, 99, 0, 8))}
	for range 64 {
		frames = append(frames, mk(server, client, quotedHoma(cport, 99, rng.Uint64()&^1, wire.CommonHeaderLen)))
	}
	for _, id := range live {
		frames = append(frames, mk(server, client, quotedHoma(cport, 99, id, wire.CommonHeaderLen)))
	}
	return frames
}

// arriving lists e's client RPCs whose response is arriving.
func arriving(e *Endpoint) []uint64 {
	var ids []uint64
	for r := e.first; r != nil; r = r.next {
		if r.client && r.state == stateIncoming {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// A stranger who sees no packet cannot fail a client's RPCs with ICMP
// port unreachables, nor can one who knows their ids while the server
// is answering (issue 30, finding 4). 50 RPCs to a live server on
// memnet, 25 of them with 400 KB responses arriving, 25 waiting for the
// server's answer (BUSY to their RESENDs) until 30 ms: at 3 ms the
// stranger sends the finding's 70-byte packet, 64 unreachables naming
// guessed ids, and one naming each RPC whose response is arriving. Before
// the fix the first failed 50 of 50. Now all 50 complete, and each
// unreachable is counted as refused.
func TestReceiveICMP_blindSpoofFailsNoRPC(t *testing.T) {
	net := memnet.New(memnet.Config{Seed: 7})
	var neigh StaticNeighbours
	mk := func(last byte) *mnHost { return newMNHost(t, net, [4]byte{10, 0, 6, last}, &neigh, uint64(last)<<40) }
	c, s := mk(1), mk(2)
	h := net.AddHost([4]byte{10, 0, 6, 3})
	const total = 50
	for i := range total {
		if _, err := c.cli.Send(Addr{IP: netip.AddrFrom4(s.e.cfg.IP), Port: 99}, msg(1000, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	var held []Message
	done, failed, failedArriving, spared := 0, 0, 0, 0
	var attackNs int64
	live := map[uint64]bool{}
	for step := 0; done+failed < total; step++ {
		if step > 300 {
			t.Fatalf("%d done, %d failed after %d ms", done, failed, step)
		}
		if step == 1 { // the first responses begin: attack once all 25 arrive, or at 3 ms
			var poll func()
			poll = func() {
				ids := arriving(c.e)
				if len(ids) < total/2 && net.Now() < 3_000_000 {
					net.After(20_000, poll)
					return
				}
				for _, id := range ids {
					live[id] = true
				}
				to4 := func(a [16]byte) [4]byte { return [4]byte(a[12:]) }
				for _, f := range spoofBatch(wire.MapIPv4(h.IP()), wire.MapIPv4(c.e.cfg.IP), wire.MapIPv4(s.e.cfg.IP), c.cli.Num(), ids,
					func(src, qsrc [16]byte, homa []byte) []byte {
						return unreachable4(to4(src), c.e.cfg.IP, to4(qsrc), s.e.cfg.IP, wire.IPProtoHoma, homa)
					}) {
					h.Send(f)
				}
				spared, attackNs = len(ids), net.Now()
			}
			poll()
		}
		net.RunUntil(net.Now() + 1_000_000)
		for m, ok := s.srv.Receive(); ok; m, ok = s.srv.Receive() {
			if m.Data[0]%2 == 0 {
				s.srv.Reply(m, msg(400_000, m.Data[0]))
			} else {
				held = append(held, m)
			}
		}
		if step == 30 {
			for _, m := range held {
				s.srv.Reply(m, msg(400_000, m.Data[0]))
			}
		}
		c.e.Run()
		s.e.Run()
		for m, ok := c.cli.Receive(); ok; m, ok = c.cli.Receive() {
			switch {
			case m.Err != nil:
				failed++
				if live[m.ID] {
					failedArriving++
				}
			case len(m.Data) != 400_000:
				t.Fatalf("response of %d bytes", len(m.Data))
			default:
				done++
			}
		}
	}
	if done != total {
		t.Fatalf("%d of %d RPCs complete, %d failed (%d of them while their response was arriving)", done, total, failed, failedArriving)
	}
	if spared < 10 {
		t.Fatalf("only %d responses arriving at %d µs", spared, attackNs/1000)
	}
	t.Logf("%d of %d RPCs complete; the %d whose responses were arriving at %d µs spared", done, total, spared, attackNs/1000)
	if got, want := icmpDrops(c.e), [4]uint64{1, 64, uint64(spared), uint64(spared)}; got != want {
		t.Fatalf("unreachables refused (spoofed, no RPC, live; RPCs spared) %v, want %v", got, want)
	}
}

// The same over IPv6, on the test net: 20 RPCs, 10 with 200 KB
// responses arriving and 10 waiting for Reply when the stranger's batch
// comes (from 2001:db8::3, once the 10 are arriving). Before the fix its first unreachable failed
// 20 of 20.
func TestReceiveICMPv6_blindSpoofFailsNoRPC(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost6("c", 1, nil)
	s := n.addHost6("s", 2, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	stranger := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 3}
	const total = 20
	for i := range total {
		if _, err := cli.Send(Addr{IP: netip.AddrFrom16(s.ip6), Port: 99}, msg(1000, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	spared := 0
	live := map[uint64]bool{}
	n.inspect = func(frame []byte, line string) {
		if line[:2] != "s:" || describeFrame(frame)[:4] != "DATA" {
			return
		}
		ids := arriving(c.e)
		if len(ids) < total/2 || spared > 0 {
			return // attack once the 10 responses are all arriving
		}
		for _, id := range ids {
			live[id] = true
		}
		spared = len(ids)
		for _, f := range spoofBatch(stranger, c.ip6, s.ip6, cli.Num(), ids, func(src, qsrc [16]byte, homa []byte) []byte {
			return unreachable6(src, c.ip6, qsrc, s.ip6, wire.IPProtoHoma, homa)
		}) {
			c.e.Receive(f)
		}
	}
	n.flush()
	var held []Message
	for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
		if m.Data[0]%2 == 0 {
			srv.Reply(m, msg(200_000, m.Data[0]))
		} else {
			held = append(held, m)
		}
	}
	n.flush()
	for _, m := range held {
		srv.Reply(m, msg(200_000, m.Data[0]))
	}
	n.flush()
	done, failed, failedArriving := 0, 0, 0
	for m, ok := cli.Receive(); ok; m, ok = cli.Receive() {
		switch {
		case m.Err != nil:
			failed++
			if live[m.ID] {
				failedArriving++
			}
		case len(m.Data) == 200_000:
			done++
		}
	}
	if done != total {
		t.Fatalf("%d of %d RPCs complete, %d failed (%d of them while their response was arriving)", done, total, failed, failedArriving)
	}
	if spared < 5 {
		t.Fatalf("only %d responses arriving at the batch", spared)
	}
	t.Logf("%d of %d RPCs complete; the %d whose responses were arriving spared", done, total, spared)
	if got, want := icmpDrops(c.e), [4]uint64{1, 64, uint64(spared), uint64(spared)}; got != want {
		t.Fatalf("unreachables refused (spoofed, no RPC, live; RPCs spared) %v, want %v", got, want)
	}
}

// addPair adds a client "c" and a server "s" to n, over IPv6 when v6,
// and returns them with the server's and a stranger's address (IPv4
// mapped when not v6).
func addPair(n *testNet, v6 bool, mod func(*Config)) (c, s *testHost, server, stranger [16]byte) {
	if v6 {
		c, s = n.addHost6("c", 1, mod), n.addHost6("s", 2, nil)
		return c, s, s.ip6, [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 3}
	}
	c, s = n.addHost("c", 1, mod), n.addHost("s", 2, nil)
	return c, s, wire.MapIPv4(s.ip), wire.MapIPv4([4]byte{10, 0, 0, 3})
}

// unreachableTo returns an unreachable from src to h quoting a packet of
// protocol proto from qsrc to qdst, in h's family when v6.
func unreachableTo(h *testHost, v6 bool, src, qsrc, qdst [16]byte, proto uint8, homa []byte) []byte {
	if v6 {
		return unreachable6(src, h.ip6, qsrc, qdst, proto, homa)
	}
	return unreachable4([4]byte(src[12:]), h.ip, [4]byte(qsrc[12:]), [4]byte(qdst[12:]), proto, homa)
}

// Each rule of an unreachable, in both families: it must come from the
// address it quotes a packet to, quote our address and the framing we
// send that peer; a quote that holds the sender id fails that client RPC
// only, if its port and server port match; a shorter one fails every
// client RPC of its port to that server port.
func TestReceiveICMP_quoteRules(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		n := newTestNet(t)
		c, _, server, stranger := addPair(n, v6, nil)
		me := wire.MapIPv4(c.ip)
		if v6 {
			me = c.ip6
		}
		cli, _ := c.e.OpenClient()
		cli2, _ := c.e.OpenClient()
		to := Addr{IP: netip.AddrFrom16(server).Unmap(), Port: 7}
		a, _ := cli.Send(to, msg(10, 0))
		b, _ := cli.Send(to, msg(10, 1))
		cli2.Send(to, msg(10, 2))
		quote := func(sport, dport uint16, id uint64) []byte {
			return quotedHoma(sport, dport, id, wire.CommonHeaderLen)
		}
		steps := []struct {
			name   string
			frame  []byte
			drops  [4]uint64 // icmpDrops after it
			failed uint64    // the RPC it fails, or 0
		}{
			{"from a stranger", unreachableTo(c, v6, stranger, me, server, wire.IPProtoHoma, quote(cli.Num(), 7, a)), [4]uint64{1, 0, 0, 0}, 0},
			{"quoting another source", unreachableTo(c, v6, server, stranger, server, wire.IPProtoHoma, quote(cli.Num(), 7, a)), [4]uint64{2, 0, 0, 0}, 0},
			{"quoting the other framing", unreachableTo(c, v6, server, me, server, wire.IPProtoTCP, quote(cli.Num(), 7, a)), [4]uint64{3, 0, 0, 0}, 0},
			{"a guessed id", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quote(cli.Num(), 7, a^1<<50)), [4]uint64{3, 1, 0, 0}, 0},
			{"the id with another client port", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quote(cli2.Num(), 7, a)), [4]uint64{3, 2, 0, 0}, 0},
			{"the id with another server port", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quote(cli.Num(), 8, a)), [4]uint64{3, 3, 0, 0}, 0},
			{"the RPC's own", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quote(cli.Num(), 7, a)), [4]uint64{3, 3, 0, 0}, a},
			{"a short quote of the port", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quotedHoma(cli.Num(), 7, 0, 8)), [4]uint64{3, 3, 0, 0}, b},
			{"a short quote, nothing left", unreachableTo(c, v6, server, me, server, wire.IPProtoHoma, quotedHoma(cli.Num(), 7, 0, 8)), [4]uint64{3, 4, 0, 0}, 0},
		}
		for _, st := range steps {
			c.e.Receive(st.frame)
			var failed uint64
			if m, ok := cli.Receive(); ok {
				if m.Err != ErrPortUnreachable {
					t.Fatalf("v6 %v, %s: result %+v", v6, st.name, m)
				}
				failed = m.ID
			}
			if got := icmpDrops(c.e); got != st.drops || failed != st.failed {
				t.Fatalf("v6 %v, %s: failed RPC %d, want %d; refused (spoofed, no RPC, live; spared) %v, want %v",
					v6, st.name, failed, st.failed, got, st.drops)
			}
		}
		if m := c.e.Metrics(); c.e.NumRPCs() != 1 || m.ICMPReceived != uint64(len(steps)) || m.Drops[DropBadICMP] != 0 {
			t.Fatalf("v6 %v: %d RPCs left (the other port's), %d unreachables received, %d bad", v6, c.e.NumRPCs(), m.ICMPReceived, m.Drops[DropBadICMP])
		}
	}
}

// An RPC that has heard from its server within ResendTicks +
// ResendInterval ticks (10 ms) is not failed by an unreachable, which
// the server, answering BUSY to the client's RESENDs, cannot have sent;
// once the server has been silent that long, the same unreachable fails
// it.
func TestReceiveICMP_liveRPCSpared(t *testing.T) {
	n := newTestNet(t)
	c, s, server, _ := addPair(n, false, nil)
	srv, cli := serverAndClient(t, s, c, 99)
	id, _ := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 0))
	var last int64
	silent := false
	n.inspect = func(_ []byte, line string) {
		if line[:2] == "s:" && !silent {
			last = n.now
		}
	}
	n.drop = func(line string) bool { return silent && line[:2] == "s:" }
	n.flush()
	receive(t, srv) // in service: the server answers the client's RESENDs with BUSY
	n.advance(12_000_000)
	me := wire.MapIPv4(c.ip)
	full := unreachableTo(c, false, server, me, server, wire.IPProtoHoma, quotedHoma(cli.Num(), 99, id, wire.CommonHeaderLen))
	short := unreachableTo(c, false, server, me, server, wire.IPProtoHoma, quotedHoma(cli.Num(), 99, 0, 8))
	c.e.Receive(full)
	c.e.Receive(short)
	if got, want := icmpDrops(c.e), [4]uint64{0, 0, 2, 2}; got != want || c.e.NumRPCs() != 1 || n.now-last > 5_000_000 {
		t.Fatalf("live: refused %v, want %v; %d RPCs; server last heard %d ms ago", got, want, c.e.NumRPCs(), (n.now-last)/1e6)
	}
	silent = true // the server stops answering
	n.advance(last + 9_000_000 - n.now)
	c.e.Receive(full)
	if got, want := icmpDrops(c.e), [4]uint64{0, 0, 3, 3}; got != want || c.e.NumRPCs() != 1 {
		t.Fatalf("silent 9 ms: refused %v, want %v; %d RPCs", got, want, c.e.NumRPCs())
	}
	n.advance(1_000_000)
	c.e.Receive(full)
	if m := receive(t, cli); m.ID != id || m.Err != ErrPortUnreachable {
		t.Fatalf("silent 10 ms: result %+v", m)
	}
}

// A closed port's unreachable fails the RPC whether the client frames
// its packets natively or TCP-hijacked, over IPv4 and IPv6 alike (before,
// IPv4 refused a quoted hijacked header), and it quotes the common header
// with the sender id.
func TestReceiveICMP_hijackedQuoteBothFamilies(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		n := newTestNet(t)
		c, s, server, _ := addPair(n, v6, func(cfg *Config) {
			cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Hijack: true} }
		})
		var quoted []byte
		var proto uint8
		n.inspect = func(frame []byte, line string) {
			var l wire.Link
			wire.ParseLink(frame, &l)
			if ip, next, off, r := wire.ParseIPv6(l.Payload); v6 && r == wire.DropNone && next == wire.IPProtoICMPv6 {
				q := wire.IPv6(ip[off+wire.ICMPv6HeaderLen:])
				quoted, proto = q[wire.IPv6HeaderLen:], q.NextHeader()
			}
			if ip := wire.IPv4(l.Payload); !v6 && ip.Protocol() == wire.IPProtoICMP {
				q := wire.ICMP(ip.Payload()).Quoted()
				quoted, proto = q[q.HeaderLen():], q.Protocol()
			}
		}
		cli, _ := c.e.OpenClient()
		id, _ := cli.Send(Addr{IP: netip.AddrFrom16(server).Unmap(), Port: 7}, msg(10, 0))
		n.flush()
		m, ok := cli.Receive()
		if !ok || m.ID != id || m.Err != ErrPortUnreachable || s.e.Metrics().ICMPPortUnreach != 1 {
			t.Fatalf("v6 %v: result %+v (%v), %d unreachables sent, %d refused as bad", v6, m, ok,
				s.e.Metrics().ICMPPortUnreach, c.e.Metrics().Drops[DropBadICMP])
		}
		if proto != wire.IPProtoTCP || len(quoted) < wire.CommonHeaderLen || wire.Common(quoted).SenderID() != id {
			t.Fatalf("v6 %v: quoted protocol %d, %d Homa bytes", v6, proto, len(quoted))
		}
	}
}

// FuzzReceiveICMP feeds port unreachables with arbitrary quotes (ICMP
// header and checksum made right, from the server's address or, with
// bit 0 of the first byte, a stranger's) to an endpoint with client RPCs
// in flight, and checks that it does not panic and that its state stays
// consistent; closing its ports must leave nothing behind. Seeds quote
// one of its requests whole, short, and hijacked.
//
//	go test ./engine -run='^$' -fuzz=^FuzzReceiveICMP$ -fuzztime=60s
func FuzzReceiveICMP(f *testing.F) {
	fx := newReceiveFixture(f, false)
	id := fx.s.e.first.id
	me, server := wire.MapIPv4(fx.s.ip), wire.MapIPv4(fx.c.ip)
	for _, proto := range []uint8{wire.IPProtoHoma, wire.IPProtoTCP} {
		for _, n := range []int{8, wire.CommonHeaderLen, wire.DataHeaderLen} {
			frame := unreachableTo(fx.s, false, server, me, server, proto, quotedHoma(fx.cli.Num(), 99, id, n))
			f.Add(append([]byte{0}, frame[wire.EthernetHeaderLen+wire.IPv4MinHeaderLen+wire.ICMPHeaderLen:]...))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		fx := newReceiveFixture(t, false)
		src := server
		if in[0]&1 != 0 {
			src = wire.MapIPv4([4]byte{10, 0, 0, 3})
		}
		m := wire.ICMP(append(make([]byte, wire.ICMPHeaderLen), in[1:]...))
		m[0], m[1] = wire.ICMPDestUnreachable, wire.ICMPPortUnreachable
		m.UpdateChecksum()
		ipf := wire.HomaIPv4Fields([4]byte(src[12:]), fx.s.ip, 0, len(m))
		ipf.Protocol = wire.IPProtoICMP
		ip := make([]byte, wire.IPv4MinHeaderLen+len(m))
		ipf.Encode(ip)
		copy(ip[wire.IPv4MinHeaderLen:], m)
		fx.s.e.Receive(frameOf(ip))
		fx.serve()
		checkEndpoint(t, fx.s.e)
		fx.closeAll(t)
	})
}
