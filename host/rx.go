package host

import (
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ipProtocolOffset is where the protocol byte sits in an IPv4 header.
const ipProtocolOffset = 9

// Receive-side drops of the host, by cause (the engine counts its own).
const (
	rxDropShort = iota
	rxDropNotIPv4
	rxDropBadIPv4
	rxDropNotForUs
	rxDropProtocol
	rxDropFault
	rxDropChained
	numRxDrops
)

// RxDropNames are the metric labels of the host's receive-side drops.
var RxDropNames = [numRxDrops]string{"short_frame", "ethertype", "bad_ipv4", "not_for_us", "ip_protocol", "fault_injected",
	"chained_not_homa"}

// isHoma reports whether frame (at least an Ethernet header) carries IPv4
// protocol 146, with or without an 802.1Q tag.
func isHoma(frame []byte) bool {
	off, typ := wire.EthernetHeaderLen, wire.Ethernet(frame).Type()
	if typ == wire.EtherTypeVLAN && len(frame) >= wire.EthernetHeaderLen+wire.VLANTagLen {
		off, typ = wire.EthernetHeaderLen+wire.VLANTagLen, wire.VLAN(frame[wire.EthernetHeaderLen:]).Type()
	}
	return typ == wire.EtherTypeIPv4 && len(frame) > off+ipProtocolOffset && frame[off+ipProtocolOffset] == wire.IPProtoHoma
}

// receiveBurst polls every RX queue and hands the burst (and a packet
// held back last pass by fault injection) to the engine as one batch: one
// round of grant decisions after its last packet. It returns the packets
// received.
func (h *Host) receiveBurst() int {
	prev := h.fault.release() // held back last pass: now it comes after newer packets
	n := h.rx.Rx()
	batch := n > 0 || prev != nil
	if batch {
		h.ep.BeginBatch(h.now)
	}
	for q := 0; n > 0 && q < h.rx.Len(); q++ {
		pkts := h.rx.Pkts(q)
		if h.cap != nil && len(pkts) > 0 {
			h.cap.RecordMbufs(h.capIf, dpdk.Inbound, h.now+h.wallOff, pkts)
		}
		for _, m := range pkts {
			h.receive(m)
		}
	}
	if prev != nil {
		h.dispatch(prev, false)
	}
	if batch {
		h.ep.EndBatch()
	}
	return n
}

// receive dispatches one received frame; it owns m from here on.
func (h *Host) receive(m *dpdk.Mbuf) {
	switch h.fault.decide() {
	case faultDrop:
		h.drops[rxDropFault]++
		h.free = append(h.free, m)
		return
	case faultHold:
		h.fault.hold(m)
		return
	case faultDuplicate:
		h.dispatch(m, true)
		return
	}
	h.dispatch(m, false)
}

func (h *Host) dispatch(m *dpdk.Mbuf, twice bool) {
	d := m.Data()
	if m.NumSegs() > 1 {
		// A chained packet (a peer in this process sent a payload from a
		// worker's memory): made contiguous for the engine, which copies
		// what it keeps. The host stack answers only single segments.
		h.scratch = m.AppendData(h.scratch[:0])
		d = h.scratch
		if ok := len(d) > wire.EthernetHeaderLen; !ok || !isHoma(d) {
			h.drops[rxDropChained]++
			h.free = append(h.free, m)
			return
		}
	}
	if len(d) < wire.EthernetHeaderLen {
		h.drops[rxDropShort]++
		h.free = append(h.free, m)
		return
	}
	ethLen, typ := wire.EthernetHeaderLen, wire.Ethernet(d).Type()
	if typ == wire.EtherTypeVLAN && len(d) >= wire.EthernetHeaderLen+wire.VLANTagLen {
		ethLen, typ = wire.EthernetHeaderLen+wire.VLANTagLen, wire.VLAN(d[wire.EthernetHeaderLen:]).Type()
	}
	switch typ {
	case wire.EtherTypeARP:
		if handleARP(d, ethLen, h.me, h.neigh, h.now, &h.stack) == stackReply {
			h.tx.enqueue(m)
			return
		}
	case wire.EtherTypeIPv4:
		if len(d) > ethLen+ipProtocolOffset && d[ethLen+ipProtocolOffset] == wire.IPProtoHoma {
			// The engine parses and validates the whole frame (IPv4
			// checksum, destination, Homa header) and counts what it
			// drops: checking it here too would do that work twice.
			h.ep.Receive(d) // the engine copies what it keeps
			if twice {
				h.ep.Receive(d)
			}
			break
		}
		ip, r := wire.ParseIPv4(d[ethLen:])
		if r == wire.DropNotHoma { // a valid IPv4 header of another protocol
			ip, r = wire.IPv4(d[ethLen:]), wire.DropNone
			ip = ip[:ip.TotalLength()]
		}
		switch {
		case r != wire.DropNone:
			h.drops[rxDropBadIPv4]++
		case ip.Dst() != h.me.ip:
			h.drops[rxDropNotForUs]++
		case ip.Protocol() == wire.IPProtoICMP && len(ip.Payload()) > 0 && ip.Payload()[0] == wire.ICMPEchoRequest:
			if handleICMP(d, ip, h.me, &h.stack) == stackReply {
				h.tx.enqueue(m)
				return
			}
		case ip.Protocol() == wire.IPProtoICMP: // port unreachable and the like: the engine's
			h.ep.Receive(d)
		default:
			h.drops[rxDropProtocol]++
		}
	default:
		h.drops[rxDropNotIPv4]++
	}
	h.free = append(h.free, m)
}

// sendARPRequest broadcasts a request for ip.
func (h *Host) sendARPRequest(ip [4]byte) {
	if h.arpBuf == nil {
		h.arpBuf = make([]*dpdk.Mbuf, 1)
	}
	if h.tx.pool.AllocBulk(h.arpBuf) != nil {
		h.tx.NoBuffer++
		return
	}
	m := h.arpBuf[0]
	b := m.Append(64)
	clear(b)
	m.SetLen(max(arpRequest(b, h.me, ip, h.pcp, wire.MakeTCI(wire.NumPriorities-1, false, h.vlan)), 60))
	h.tx.enqueue(m)
}

// resolve is the engine's Resolve: the MAC of ip's next hop — ip itself on
// the port's subnet, the gateway otherwise — when known, or a request
// sent (rate-limited by the table) and false.
func (h *Host) resolve(ip [4]byte) (wire.MAC, bool) {
	hop, ok := h.nextHop(ip)
	if !ok {
		h.noRoute++
		return wire.MAC{}, false
	}
	mac, ok, request := h.neigh.Resolve(hop, h.now)
	if request {
		h.sendARPRequest(hop)
	}
	return mac, ok
}

// nextHop returns the address to resolve to reach ip.
func (h *Host) nextHop(ip [4]byte) ([4]byte, bool) {
	if !h.subnet.IsValid() || h.subnet.Contains(netip.AddrFrom4(ip)) {
		return ip, true
	}
	if h.gateway == ([4]byte{}) {
		return ip, false
	}
	return h.gateway, true
}

// PeerReady reports whether ip's next hop is resolved, so that the engine
// can send to it; otherwise it has ARP ask (rate-limited by the table) and
// reports whether resolution has failed for now (or there is no route).
// The engine fails an RPC to an unresolved address at once, so
// applications in the loop wait for this.
func (h *Host) PeerReady(ip [4]byte) (ready, failed bool) {
	hop, route := h.nextHop(ip)
	if !route {
		return false, true
	}
	_, ok := h.resolve(ip)
	return ok, !ok && h.neigh.Failed(hop)
}
