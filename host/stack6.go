package host

import (
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The host's IPv6 duties besides Homa, as ARP and ICMP echo are for IPv4:
// answer neighbour solicitations for its address and ICMPv6 echo (so that
// ping -6 and a Linux host's neighbour discovery work), learn neighbours
// from the solicitations aimed at it (neighbourTable.Heard) and from
// advertisements for entries it has (Advert: RFC 4861 §7.2.5, unsolicited
// ones discarded), and solicit the neighbours the engine needs. Answers
// are built in place.

// handleIPv6 processes an IPv6 frame that is not Homa (ip is the frame's
// IPv6 packet, validated by ParseIPv6, its upper layer proto at off).
func handleIPv6(frame []byte, ip wire.IPv6, proto uint8, off int, me hostAddr, n *neighbourTable[[16]byte], now int64, c *StackCounters) stackVerdict {
	if me.ip6 == ([16]byte{}) || proto != wire.IPProtoICMPv6 {
		c.Unsupported++
		return stackDrop
	}
	m := wire.ParseICMPv6(ip, off)
	if m == nil {
		c.Malformed++
		return stackDrop
	}
	switch m.Type() {
	case wire.ICMPv6DestUnreachable:
		return stackICMPv6Error // the engine's: a port unreachable about our Homa packets
	case wire.ICMPv6EchoRequest:
		if ip.Dst() != me.ip6 {
			c.NotForUs++
			return stackDrop
		}
		c.EchoRequests++
		src := ip.Src()
		ip.SetSrc(me.ip6)
		ip.SetDst(src)
		ip.SetHopLimit(wire.DefaultHopLimit)
		m[0] = wire.ICMPv6EchoReply
		m.SetChecksum(me.ip6, src)
		e := wire.Ethernet(frame)
		e.SetDst(e.Src())
		e.SetSrc(me.mac)
		return stackReply
	case wire.ICMPv6NeighborSolicit:
		if m.Target() != me.ip6 || (ip.Dst() != me.ip6 && ip.Dst() != wire.SolicitedNode(me.ip6)) {
			c.NotForUs++
			return stackDrop
		}
		c.NeighborSolicits++
		src := ip.Src()
		dst, dmac := src, wire.Ethernet(frame).Src()
		flags := uint8(wire.NDPFlagSolicited | wire.NDPFlagOverride)
		if src == ([16]byte{}) { // duplicate address detection: answer all nodes, unsolicited
			dst, dmac, flags = allNodes, wire.MulticastMAC(allNodes), wire.NDPFlagOverride
		} else if mac, ok := m.LinkAddr(wire.NDPOptSourceLinkAddr); ok {
			n.Heard(src, mac, now)
			dmac = mac
		}
		if len(m) < wire.NDPMessageLen {
			c.Malformed++ // no room for the advertisement's option in place
			return stackDrop
		}
		na := wire.NDPFields{Type: wire.ICMPv6NeighborAdvert, Flags: flags, Target: me.ip6, MAC: me.mac}
		na.Encode(m, me.ip6, dst)
		ip.SetPayloadLength(uint16(off - wire.IPv6HeaderLen + wire.NDPMessageLen))
		ip.SetSrc(me.ip6)
		ip.SetDst(dst)
		ip.SetHopLimit(wire.NDPHopLimit)
		e := wire.Ethernet(frame)
		e.SetDst(dmac)
		e.SetSrc(me.mac)
		return stackReply
	case wire.ICMPv6NeighborAdvert:
		mac, ok := m.LinkAddr(wire.NDPOptTargetLinkAddr)
		if !ok || wire.IsMulticast6(m.Target()) {
			c.Malformed++
			return stackDrop
		}
		c.NeighborAdverts++
		flags := m.NDPFlags()
		n.Advert(m.Target(), mac, flags&wire.NDPFlagSolicited != 0, flags&wire.NDPFlagOverride != 0, now)
		return stackLearn
	}
	c.Unsupported++
	return stackDrop
}

// allNodes is ff02::1, the link's all-nodes multicast address.
var allNodes = [16]byte{0: 0xff, 1: 0x02, 15: 1}

// ndpSolicit writes a neighbour solicitation for target into b (at
// least 14 + 4 + 40 + 32 bytes) and returns its length: to target's
// solicited-node address, with our link address; with tagged, in an
// 802.1Q tag with TCI tci.
func ndpSolicit(b []byte, me hostAddr, target [16]byte, tagged bool, tci uint16) int {
	dst := wire.SolicitedNode(target)
	eth := wire.EthernetFields{Dst: wire.MulticastMAC(dst), Src: me.mac, Type: wire.EtherTypeIPv6, Tagged: tagged, TCI: tci}
	n := eth.Encode(b)
	ip := wire.IPv6Fields{PayloadLength: wire.NDPMessageLen, NextHeader: wire.IPProtoICMPv6, HopLimit: wire.NDPHopLimit, Src: me.ip6, Dst: dst}
	n += ip.Encode(b[n:])
	ns := wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: target, MAC: me.mac}
	return n + ns.Encode(b[n:], me.ip6, dst)
}
