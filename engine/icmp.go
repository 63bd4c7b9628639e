package engine

import (
	"encoding/binary"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ICMP destination unreachable / port unreachable, which kernel Homa
// sends for a packet to an unbound port and turns into ENOTCONN for the
// client's RPCs to that port (homa_err_handler_v4). The host's own stack
// answers echo; the formats are package wire's.

// sendPortUnreachable answers f, a packet to an unbound port, with an
// ICMP port unreachable quoting its IPv4 header and first 8 Homa bytes.
// Over IPv6 it is ICMPv6 destination unreachable, code 4, quoting the
// IPv6 header and the first 8 Homa bytes.
func (e *Endpoint) sendPortUnreachable(f *wire.Frame, p *peer) {
	if p.v6 {
		e.sendPortUnreachable6(f, p)
		return
	}
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	icmp := wire.ICMP(buf[e.homaOff : e.homaOff+wire.ICMPHeaderLen+wire.ICMPErrorQuoteLen])
	clear(icmp[:wire.ICMPHeaderLen])
	icmp[0], icmp[1] = wire.ICMPDestUnreachable, wire.ICMPPortUnreachable
	copy(icmp[wire.ICMPHeaderLen:], f.IPv4[:wire.IPv4MinHeaderLen])
	copy(icmp[wire.ICMPHeaderLen+wire.IPv4MinHeaderLen:], f.Homa[:8])
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
	e.tx.Send(buf[:e.homaOff+len(icmp)], controlPriority)
}

func (e *Endpoint) sendPortUnreachable6(f *wire.Frame, p *peer) {
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	m := wire.ICMPv6(buf[p.homaOff : p.homaOff+wire.ICMPv6HeaderLen+wire.ICMPv6ErrorQuoteLen])
	clear(m[:wire.ICMPv6HeaderLen])
	m[0], m[1] = wire.ICMPv6DestUnreachable, wire.ICMPv6PortUnreachable
	copy(m[wire.ICMPv6HeaderLen:], f.IPv6[:wire.IPv6HeaderLen])
	copy(m[wire.ICMPv6HeaderLen+wire.IPv6HeaderLen:], f.Homa[:8])
	m.SetChecksum(e.cfg.IP6, p.addr)
	eth := e.ethernet(p, controlPriority)
	eth.Encode(buf)
	ip := wire.IPv6Fields{TrafficClass: wire.TOSFromPriority(controlPriority), PayloadLength: uint16(len(m)),
		NextHeader: wire.IPProtoICMPv6, HopLimit: wire.DefaultHopLimit, Src: e.cfg.IP6, Dst: p.addr}
	ip.Encode(buf[e.ipOff:])
	e.m.ICMPPortUnreach++
	e.tx.Send(buf[:p.homaOff+len(m)], controlPriority)
}

// ReceiveICMPv6 is ReceiveICMP for ICMPv6: ip is an IPv6 packet the host
// has validated (wire.ParseIPv6) whose ICMPv6 message (checksum checked,
// wire.ParseICMPv6) starts at off. A port unreachable about a Homa packet
// we sent fails every client RPC to that address and port with
// ErrPortUnreachable; anything else is counted in DropBadICMP.
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
	quoted := wire.IPv6(m[wire.ICMPv6HeaderLen:])
	if quoted.Version() != 6 || quoted.NextHeader() != wire.IPProtoHoma && quoted.NextHeader() != wire.IPProtoTCP {
		e.m.drop(DropBadICMP)
		return
	}
	e.portUnreachable(quoted.Dst(), binary.BigEndian.Uint16(quoted[wire.IPv6HeaderLen+2:]))
}

// portUnreachable fails every client RPC to port dport at addr (IPv4
// mapped) with ErrPortUnreachable: an ICMP or ICMPv6 port unreachable
// came about one of our packets to it.
func (e *Endpoint) portUnreachable(addr [16]byte, dport uint16) {
	e.m.ICMPReceived++
	for r := e.first; r != nil; {
		next := r.next
		if r.client && r.peer.addr == addr && r.dport == dport {
			e.fail(r, ErrPortUnreachable)
		}
		r = next
	}
}

// ReceiveICMP processes an ICMP message other than echo, addressed to
// this endpoint, whose IPv4 header the host has already validated (as
// wire.ParseIPv4 does, the protocol aside): ip starts at the IPv4 header
// and ends at its total length, and is read during the call only. A port
// unreachable about a Homa packet we sent fails every client RPC to that
// address and port with ErrPortUnreachable; anything else is counted in
// DropBadICMP. ReceiveLink calls it for the ICMP it is given; like
// Receive, it may be called inside a batch.
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
	quoted := m.Quoted()
	if quoted.Protocol() != wire.IPProtoHoma || quoted.HeaderLen() < wire.IPv4MinHeaderLen ||
		len(quoted) < quoted.HeaderLen()+4 {
		e.m.drop(DropBadICMP)
		return
	}
	e.portUnreachable(wire.MapIPv4(quoted.Dst()), binary.BigEndian.Uint16(quoted[quoted.HeaderLen()+2:]))
}
