package host

import (
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ipProtocolOffset is where the protocol byte sits in an IPv4 header.
const ipProtocolOffset = 9

// ipv6NextOffset is where the next header byte lies in an IPv6 header.
const ipv6NextOffset = 6

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

// isHoma reports whether a decoded link carries Homa (wire.HomaUpper:
// protocol 146, or TCP with the hijack markers, kernel Homa's hijack_tcp
// framing) right after its IPv4 or fixed IPv6 header. It reads the
// protocol byte (and the markers) only: the engine validates the rest. An
// IPv6 packet whose extension headers come first goes the host stack's
// way, which hands it on (stackFrame).
func isHoma(l *wire.Link) bool {
	p := l.Payload
	switch {
	case l.Tail != nil:
		return true // wire.SplitFits vouched for the protocol
	case l.Type == wire.EtherTypeIPv6:
		return len(p) >= wire.IPv6HeaderLen && wire.HomaUpper(p[ipv6NextOffset], p[wire.IPv6HeaderLen:]) == wire.DropNone
	case l.Type != wire.EtherTypeIPv4 || len(p) <= ipProtocolOffset:
		return false
	}
	hl := min(int(p[0]&0xf)*4, len(p))
	return wire.HomaUpper(p[ipProtocolOffset], p[hl:]) == wire.DropNone
}

// receiveBurst hands the burst that the pass's crossing received on
// every RX queue, n packets (and a packet held back last pass by fault
// injection), to the engine as one batch: one round of grant decisions
// after its last packet.
func (h *Host) receiveBurst(n int) {
	prev := h.fault.release() // held back last pass: now it comes after newer packets
	batch := n > 0 || prev != nil
	if batch {
		h.ep.BeginBatch(h.now)
	}
	if h.shards != nil && h.handIn(batch) && !batch {
		return // what the other shards handed over, in a batch of its own
	}
	for q := 0; n > 0 && q < h.rx.Len(); q++ {
		pkts := h.rx.Pkts(q)
		if h.cap != nil && len(pkts) > 0 {
			h.cap.RecordMbufs(h.capIf, dpdk.Inbound, h.capRxAt, pkts)
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

// dispatch decodes the frame's link header, once, and hands the frame to
// the engine (Homa, ICMP errors) or the host stack (ARP, ICMP echo).
func (h *Host) dispatch(m *dpdk.Mbuf, twice bool) {
	d := m.Data()
	chained := m.NumSegs() > 1
	l := &h.link
	switch {
	case !chained:
		if wire.ParseLink(d, l) != wire.DropNone {
			h.drops[rxDropShort]++
			h.free = append(h.free, m)
			return
		}
	case m.NumSegs() == 2 && wire.ParseLink(d, l) == wire.DropNone && wire.SplitFits(l, m.Next().DataLen()):
		// A chained packet: a peer in this process sent a payload from a
		// worker's memory (headers, then the payload as an external
		// buffer). Its first segment holds exactly the headers: headers
		// and payload stay where they are, and the engine copies the
		// payload straight from the second (wire.Link.Tail).
		l.Tail = m.Next().Data()
		h.splitFrames++
	default:
		// Another chain is made contiguous first. The host stack answers
		// only single segments.
		h.joinedFrames++
		h.scratch = m.AppendData(h.scratch[:0])
		d = h.scratch
		if wire.ParseLink(d, l) != wire.DropNone {
			h.drops[rxDropShort]++
			h.free = append(h.free, m)
			return
		}
	}
	if isHoma(l) {
		if h.shards != nil && h.shards.n > 1 {
			switch owner, all, ok := engine.FrameShard(l, h.shards.n, h.shards.homes); {
			case ok && all:
				h.handCopies(d, false)
			case ok && owner != h.shardIdx:
				h.handFrame(owner, m) // its owner takes it, and frees it
				return
			}
		}
		// The engine parses and validates the rest (IPv4 checksum,
		// destination, Homa header) and counts what it drops: checking it
		// here too would do that work twice.
		h.copyInLoop = chained && l.Tail == nil // joined into h.scratch
		h.ep.ReceiveLink(l)                     // the engine copies what it keeps (or its copier)
		if twice {
			h.ep.ReceiveLink(l)
		}
		h.copyInLoop = false
		h.afterDispatch(m)
		return
	}
	if chained {
		h.drops[rxDropChained]++
		h.free = append(h.free, m)
		return
	}
	if h.shards != nil && h.shards.n > 1 && isNeighbour(l) {
		h.handCopies(d, true) // before stackFrame answers in place
	}
	if h.stackFrame(d, l) == stackReply {
		h.tx.enqueueReply(m, h.dropTx)
		return
	}
	h.free = append(h.free, m)
}

// stackFrame handles a frame that is not Homa: ARP, ICMP echo (answered
// in place) and other ICMP for us (the engine's: port unreachable and the
// like); the rest is dropped and counted.
func (h *Host) stackFrame(d []byte, l *wire.Link) stackVerdict {
	switch l.Type {
	case wire.EtherTypeARP:
		return handleARP(d, len(d)-len(l.Payload), h.me, h.neigh, h.now, &h.stack)
	case wire.EtherTypeIPv6:
		ip, proto, off, r := wire.ParseIPv6(l.Payload)
		if r != wire.DropNone {
			h.drops[rxDropBadIPv4]++
			return stackDrop
		}
		if wire.HomaUpper(proto, ip[off:]) == wire.DropNone { // Homa after extension headers
			h.copyInLoop = true // the stack's caller frees the frame
			h.ep.ReceiveLink(l)
			h.copyInLoop = false
			return stackDrop
		}
		v := handleIPv6(d, ip, proto, off, h.me, h.neigh6, h.now, &h.stack)
		if v == stackICMPv6Error {
			if q := icmpQuote6(ip, off); h.steerICMP(d, &q) {
				h.ep.ReceiveICMPv6(ip, off)
			}
			return stackDrop
		}
		return v
	case wire.EtherTypeIPv4:
	default:
		h.drops[rxDropNotIPv4]++
		return stackDrop
	}
	ip, r := wire.ParseIPv4(l.Payload)
	if r == wire.DropNotHoma || r == wire.DropNotHijacked { // a valid IPv4 header of another protocol (or real TCP)
		ip, r = wire.IPv4(l.Payload), wire.DropNone
		ip = ip[:ip.TotalLength()]
	}
	switch {
	case r != wire.DropNone:
		h.drops[rxDropBadIPv4]++
	case ip.Dst() != h.me.ip:
		h.drops[rxDropNotForUs]++
	case ip.Protocol() == wire.IPProtoICMP && len(ip.Payload()) > 0 && ip.Payload()[0] == wire.ICMPEchoRequest:
		return handleICMP(d, ip, h.me, &h.stack)
	case ip.Protocol() == wire.IPProtoICMP:
		if q := icmpQuote4(ip); h.steerICMP(d, &q) {
			h.ep.ReceiveICMP(ip)
		}
	default:
		h.drops[rxDropProtocol]++
	}
	return stackDrop
}

// resolveHop is resolve in one family's table t: the entry of next hop
// hop (none when !ok: no route), ask sending a request when resolution
// starts.
func resolveHop[K comparable](h *Host, t *neighbourTable[K], hop K, ok bool, ask func(K)) *engine.Neighbour {
	if !ok {
		h.noRoute++
		return nil
	}
	n, request := t.Resolve(hop, h.now)
	if request {
		ask(hop)
	}
	return n
}

// nextHop6 returns the address to resolve to reach IPv6 address a: a
// itself on-link (link-local, or in the port's IPv6 prefix, or any when
// it has none), the IPv6 gateway otherwise; false when the host has no
// IPv6 address or no gateway for a.
func (h *Host) nextHop6(a netip.Addr) ([16]byte, bool) {
	switch {
	case h.me.ip6 == [16]byte{}:
		return [16]byte{}, false
	case a.IsLinkLocalUnicast() || !h.subnet6.IsValid() || h.subnet6.Contains(a):
		return a.As16(), true
	case h.gateway6 == [16]byte{}:
		return [16]byte{}, false
	}
	return h.gateway6, true
}

// sendSolicit sends a neighbour solicitation for ip.
func (h *Host) sendSolicit(ip [16]byte) {
	h.sendRequest(128, func(b []byte, tci uint16) int { return ndpSolicit(b, h.me, ip, h.pcp, tci) })
}

// sendARPRequest broadcasts a request for ip.
func (h *Host) sendARPRequest(ip [4]byte) {
	h.sendRequest(64, func(b []byte, tci uint16) int { return max(arpRequest(b, h.me, ip, h.pcp, tci), 60) })
}

// sendRequest sends a resolution request that build writes into a
// zeroed buffer of room bytes (given the 802.1Q TCI of the top
// priority), returning its length.
func (h *Host) sendRequest(room int, build func(b []byte, tci uint16) int) {
	if h.arpBuf == nil {
		h.arpBuf = make([]*dpdk.Mbuf, 1)
	}
	if h.tx.pool.AllocBulk(h.arpBuf) != nil {
		h.tx.NoBuffer++
		return
	}
	m := h.arpBuf[0]
	b := m.Append(room)
	clear(b)
	m.SetLen(build(b, wire.MakeTCI(wire.NumPriorities-1, false, h.vlan)))
	h.tx.enqueue(m)
}

// resolve is the engine's Resolve: the neighbour entry of ip's next hop
// — ip itself on the port's subnet, the gateway otherwise — with a
// request sent when resolution starts, or nil when there is no route
// (IPv4 by ARP; IPv6 by neighbour discovery, nextHop6).
func (h *Host) resolve(a netip.Addr) *engine.Neighbour {
	if a = a.Unmap(); a.Is4() {
		hop, ok := h.nextHop(a.As4())
		return resolveHop(h, h.neigh, hop, ok, h.sendARPRequest)
	}
	hop, ok := h.nextHop6(a)
	return resolveHop(h, h.neigh6, hop, ok, h.sendSolicit)
}

// forget is the engine's Forget: it dropped its peer for ip, so an
// on-link entry for ip is no longer held (a gateway's entry stays: other
// peers may share it, the gateway's own address as a peer too).
func (h *Host) forget(a netip.Addr) {
	a = a.Unmap()
	if !a.Is4() {
		if hop, ok := h.nextHop6(a); ok && hop == a.As16() && hop != h.gateway6 {
			h.neigh6.Forget(hop)
		}
		return
	}
	ip := a.As4()
	if hop, ok := h.nextHop(ip); ok && hop == ip && ip != h.gateway {
		h.neigh.Forget(ip)
	}
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
