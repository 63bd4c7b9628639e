package engine

import (
	"encoding/binary"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ICMP destination unreachable / port unreachable, which kernel Homa
// sends for a packet to an unbound port and turns into ENOTCONN for the
// client's RPCs to that port (homa_err_handler_v4). The host's own stack
// answers echo; the formats are package wire's.
//
// An unreachable carries no proof and anyone can send one; kernel Homa
// believes any that quotes a server's address and port. Here one is
// believed only when the packet it quotes is one we could have sent, and
// the RPC it names could be failing (portUnreachable), in IPv4 and IPv6
// alike:
//
//   - it comes from the address its quoted packet went to: a port
//     unreachable is the destination host's own answer (Linux sends it
//     from that address);
//   - the quoted packet came from our address, in the framing we send
//     that peer: protocol 146, or 6 (TCP-hijacked) for a peer
//     PeerOptions.Hijack names;
//   - a quote that reaches the common header's sender id (28 Homa bytes:
//     Linux quotes up to 576 bytes over IPv4 and 1,280 over IPv6, and
//     sendPortUnreachable quotes 28) fails that client RPC only, and only
//     if the quoted client and server ports are the RPC's. A shorter
//     quote (the 8 bytes ICMP promises; homa-dpdk sent those before)
//     fails every client RPC of the quoted client port to that server
//     port, as kernel Homa does for any quote. It looks only at the
//     client RPCs to its sender (peer.clients), not at every RPC of the
//     endpoint: a host that made us hold its server RPCs can send one
//     from its own address;
//   - a client RPC that heard from its server (DATA, GRANT, RESEND or
//     BUSY) within ResendTicks + ResendInterval ticks is not failed
//     (icmpLive).
//
// What is refused is counted: DropICMPSpoofed, DropICMPNoRPC,
// DropICMPIgnoredLive, and the RPCs spared in ICMPLiveRPCsSpared.

// icmpQuoteHoma is how much of a packet's Homa header our unreachables
// quote: the common header, sender id included.
const icmpQuoteHoma = wire.CommonHeaderLen

// sendPortUnreachable answers f, a packet to an unbound port, with an
// ICMP port unreachable quoting its IPv4 header and its common header
// (icmpQuoteHoma bytes), unless the rate limits hold it back
// (icmplimit.go). Over IPv6 it is ICMPv6 destination unreachable, code
// 4, quoting the IPv6 header and the common header.
func (e *Endpoint) sendPortUnreachable(f *wire.Frame, p *peer) {
	if p.reachable() { // else startControl drops it: no allowance spent
		switch e.icmpLimit.allow(&p.addr, e.now) {
		case icmpHeldAll:
			e.m.ICMPLimitedAll++
			fallthrough
		case icmpHeldDest:
			e.m.ICMPLimited++
			return
		}
	}
	if p.v6 {
		e.sendPortUnreachable6(f, p)
		return
	}
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	hl, q := f.IPv4.HeaderLen(), min(len(f.Homa), icmpQuoteHoma)
	icmp := wire.ICMP(buf[e.homaOff : e.homaOff+wire.ICMPHeaderLen+hl+q])
	clear(icmp[:wire.ICMPHeaderLen])
	icmp[0], icmp[1] = wire.ICMPDestUnreachable, wire.ICMPPortUnreachable
	copy(icmp[wire.ICMPHeaderLen:], f.IPv4[:hl])
	copy(icmp[wire.ICMPHeaderLen+hl:], f.Homa[:q])
	icmp.UpdateChecksum()
	eth := e.ethernet(p, controlPriority)
	eth.Encode(buf)
	ip := wire.HomaIPv4Fields(e.cfg.IP, p.v4, controlPriority, len(icmp))
	ip.Protocol = wire.IPProtoICMP
	e.ipID++
	ip.ID = e.ipID
	ip.NoChecksum = e.cfg.IPChecksumOffload
	ip.Encode(buf[e.ipOff:])
	e.m.ICMPPortUnreach++
	e.send(buf[:e.homaOff+len(icmp)], controlPriority)
}

func (e *Endpoint) sendPortUnreachable6(f *wire.Frame, p *peer) {
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	q := min(len(f.Homa), icmpQuoteHoma)
	m := wire.ICMPv6(buf[p.homaOff : p.homaOff+wire.ICMPv6HeaderLen+wire.IPv6HeaderLen+q])
	clear(m[:wire.ICMPv6HeaderLen])
	m[0], m[1] = wire.ICMPv6DestUnreachable, wire.ICMPv6PortUnreachable
	copy(m[wire.ICMPv6HeaderLen:], f.IPv6[:wire.IPv6HeaderLen])
	copy(m[wire.ICMPv6HeaderLen+wire.IPv6HeaderLen:], f.Homa[:q])
	m.SetChecksum(e.cfg.IP6, p.addr)
	eth := e.ethernet(p, controlPriority)
	eth.Encode(buf)
	ip := wire.IPv6Fields{TrafficClass: wire.TOSFromPriority(controlPriority), PayloadLength: uint16(len(m)),
		NextHeader: wire.IPProtoICMPv6, HopLimit: wire.DefaultHopLimit, Src: e.cfg.IP6, Dst: p.addr}
	ip.Encode(buf[e.ipOff:])
	e.m.ICMPPortUnreach++
	e.send(buf[:p.homaOff+len(m)], controlPriority)
}

// unreachable is a port unreachable as read from its quote. Its slices
// are the received packet's, valid during the call only.
type unreachable struct {
	v6       bool     // ICMPv6
	from     [16]byte // its source (IPv4 mapped)
	src, dst [16]byte // the quoted packet's addresses (IPv4 mapped)
	proto    uint8    // the quoted packet's protocol (next header): 146 or 6
	homa     []byte   // the quoted Homa bytes, at least 8
}

// ReceiveICMPv6 is ReceiveICMP for ICMPv6: ip is an IPv6 packet the host
// has validated (wire.ParseIPv6) whose ICMPv6 message (checksum checked,
// wire.ParseICMPv6) starts at off. A port unreachable about a packet we
// sent fails the client RPC it names, or those of the port it names, as
// the file's comment says; anything else is counted in DropBadICMP.
func (e *Endpoint) ReceiveICMPv6(ip wire.IPv6, off int) {
	if !e.batch {
		e.now = e.cfg.Clock()
	}
	m := wire.ICMPv6(ip[off:])
	if len(m) < wire.ICMPv6HeaderLen+wire.ICMPv6ErrorQuoteLen || ip.Dst() != e.cfg.IP6 ||
		m.Type() != wire.ICMPv6DestUnreachable || m.Code() != wire.ICMPv6PortUnreachable {
		e.m.drop(DropBadICMP)
		return
	}
	q := wire.IPv6(m[wire.ICMPv6HeaderLen:])
	if q.Version() != 6 || q.NextHeader() != wire.IPProtoHoma && q.NextHeader() != wire.IPProtoTCP {
		e.m.drop(DropBadICMP)
		return
	}
	e.portUnreachable(&unreachable{v6: true, from: ip.Src(), src: q.Src(), dst: q.Dst(), proto: q.NextHeader(),
		homa: q[wire.IPv6HeaderLen:]})
}

// ReceiveICMP processes an ICMP message other than echo, addressed to
// this endpoint, whose IPv4 header the host has already validated (as
// wire.ParseIPv4 does, the protocol aside): ip starts at the IPv4 header
// and ends at its total length, and is read during the call only. A port
// unreachable about a packet we sent fails the client RPC it names, or
// those of the port it names, as the file's comment says; anything else
// is counted in DropBadICMP. ReceiveLink calls it for the ICMP it is
// given; like Receive, it may be called inside a batch.
func (e *Endpoint) ReceiveICMP(ip wire.IPv4) {
	if !e.batch {
		e.now = e.cfg.Clock()
	}
	e.receiveICMP(ip)
}

// receiveICMP is ReceiveICMP within a call that has read the clock.
func (e *Endpoint) receiveICMP(ip wire.IPv4) {
	if !ip.IsValid() || ip.Protocol() != wire.IPProtoICMP {
		e.m.drop(DropBadICMP)
		return
	}
	m := wire.ICMP(ip.Payload())
	if len(m) < wire.ICMPHeaderLen+wire.ICMPErrorQuoteLen || !m.IsValid() ||
		m.Type() != wire.ICMPDestUnreachable || m.Code() != wire.ICMPPortUnreachable {
		e.m.drop(DropBadICMP)
		return
	}
	q := m.Quoted()
	hl := q.HeaderLen()
	if q.Version() != 4 || hl < wire.IPv4MinHeaderLen || len(q) < hl+8 ||
		q.Protocol() != wire.IPProtoHoma && q.Protocol() != wire.IPProtoTCP {
		e.m.drop(DropBadICMP)
		return
	}
	e.portUnreachable(&unreachable{from: wire.MapIPv4(ip.Src()), src: wire.MapIPv4(q.Src()), dst: wire.MapIPv4(q.Dst()),
		proto: q.Protocol(), homa: q[hl:]})
}

// portUnreachable fails with ErrPortUnreachable the client RPC u names
// (by its sender id), or with a short quote the client RPCs of the port
// it names to the server port it names, unless u quotes no packet we
// could have sent or they heard from the server lately (the file's
// comment has the rules).
func (e *Endpoint) portUnreachable(u *unreachable) {
	e.m.ICMPReceived++
	me := wire.MapIPv4(e.cfg.IP)
	if u.v6 {
		me = e.cfg.IP6
	}
	p := e.peerAt(u.dst)
	switch {
	case u.from != u.dst || u.src != me:
		e.m.drop(DropICMPSpoofed)
		return
	case p == nil || p.v6 != u.v6:
		e.m.drop(DropICMPNoRPC) // no peer there: no RPC either
		return
	case u.proto != framing(p):
		e.m.drop(DropICMPSpoofed)
		return
	}
	sport, dport := binary.BigEndian.Uint16(u.homa), binary.BigEndian.Uint16(u.homa[2:])
	if len(u.homa) >= wire.CommonHeaderLen {
		id := wire.Common(u.homa).SenderID()
		var r *rpc
		if wire.IsClientID(id) {
			r = e.rpcs.get(rpcKey{id: id})
		}
		switch {
		case r == nil || !r.client || r.peer != p || r.port.num != sport || r.dport != dport:
			e.m.drop(DropICMPNoRPC)
		case e.icmpLive(r):
			e.m.ICMPLiveRPCsSpared++
			e.m.drop(DropICMPIgnoredLive)
		default:
			e.fail(r, ErrPortUnreachable)
		}
		return
	}
	// A short quote looks at the client RPCs to p alone (peer.clients):
	// the only ones it can fail, none of them of a stranger's making (a
	// host that made us hold its server RPCs can send one from its own
	// address; before, it walked every RPC of the endpoint).
	failed, spared := 0, 0
	for r := p.clients; r != nil; {
		next := r.peerNext
		e.icmpScanned++
		if r.dport == dport && r.port.num == sport {
			if e.icmpLive(r) {
				spared++
			} else {
				failed++
				e.fail(r, ErrPortUnreachable)
			}
		}
		r = next
	}
	e.m.ICMPLiveRPCsSpared += uint64(spared)
	switch {
	case failed > 0:
	case spared > 0:
		e.m.drop(DropICMPIgnoredLive)
	default:
		e.m.drop(DropICMPNoRPC)
	}
}

// framing is the IP protocol of our packets to p: 6 when it is sent
// TCP-hijacked framing, else 146.
func framing(p *peer) uint8 {
	if p.hijack {
		return wire.IPProtoTCP
	}
	return wire.IPProtoHoma
}

// icmpLive reports whether client RPC r heard from its server within
// ResendTicks + ResendInterval ticks (10 ms by default): a live server,
// even one that has nothing to send, answers the RESEND that
// ResendTicks of silence draw (BUSY at least), so an unreachable from it
// now is not its own; one whose port really closed falls silent, and
// the unreachable that answers the next RESEND is believed.
func (e *Endpoint) icmpLive(r *rpc) bool {
	return r.heard != 0 && e.ticks+1-r.heard < uint64(e.cfg.ResendTicks+e.cfg.ResendInterval)
}

// heardFrom notes a packet from r's peer about r that shows it alive:
// DATA, GRANT, RESEND or BUSY. r is not silent (silentTicks), and for a
// while no unreachable fails it (icmpLive).
func (e *Endpoint) heardFrom(r *rpc) {
	r.silentTicks = 0
	r.heard = e.ticks + 1
}
