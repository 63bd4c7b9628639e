package memnet

import "github.com/homa-dpdk/homa-dpdk/wire"

// Frames, their free list, and the strict-priority queues of a port.

// packet is one frame in the network, from Send until it is delivered or
// dropped. Its bytes are a copy owned by the network and recycled through
// the free list; the fields after buf are filled by classify at Send.
type packet struct {
	buf  []byte          // the frame; cap kept across reuse
	ok   bool            // parseable IPv4 (else dropped at the switch)
	prio uint8           // priority from the IPv4 TOS (0 when !ok)
	typ  wire.PacketType // Homa type for traces; 0 when not Homa
	dst  [4]byte         // IPv4 destination (zero when !ok)
	nicq int8            // SendQueue's queue (its priority); -1: the IPv4 priority

	from, to *Host // sender; receiver once routed at the switch

	// Epochs of the sender at Send and of the receiver when routed: a
	// Restart bumps a host's epoch, and a frame with an older epoch is
	// dropped when it next comes up (cause DropRestart).
	fromEpoch, toEpoch uint32

	next *packet // queue or free-list link
}

// minBufCap is the smallest buffer the free list hands out: every
// standard frame fits, so buffers need not grow in steady state.
const minBufCap = 2048

// alloc returns a packet holding a copy of frame.
func (n *Network) alloc(frame []byte) *packet {
	p := n.free
	if p != nil {
		n.free = p.next
		*p = packet{buf: p.buf[:0]}
	} else {
		p = &packet{}
	}
	if cap(p.buf) < len(frame) {
		p.buf = make([]byte, 0, max(len(frame), minBufCap))
	}
	p.buf = append(p.buf[:0], frame...)
	return p
}

// release returns p to the free list; p must not be used afterwards.
func (n *Network) release(p *packet) {
	p.next = n.free
	p.from, p.to = nil, nil
	n.free = p
}

// classify reads the fields the network needs from p's frame: Ethernet
// (one optional 802.1Q tag), then a structurally valid IPv4 header (the
// header checksum is not checked: that is the receiver's job). Homa
// packets also get their type, for traces.
func classify(p *packet) {
	b := p.buf
	if !wire.Ethernet(b).IsValid() {
		return
	}
	off, typ := wire.EthernetHeaderLen, wire.Ethernet(b).Type()
	if typ == wire.EtherTypeVLAN {
		if !wire.VLAN(b[off:]).IsValid() {
			return
		}
		typ = wire.VLAN(b[off:]).Type()
		off += wire.VLANTagLen
	}
	ip := wire.IPv4(b[off:])
	if typ != wire.EtherTypeIPv4 || !ip.IsValid() {
		return
	}
	p.ok, p.prio, p.dst = true, ip.Priority(), ip.Dst()
	if ip.Protocol() == wire.IPProtoHoma {
		if t, r := wire.ParseHoma(ip.Payload()); r == wire.DropNone {
			p.typ = t
		}
	}
}

// fifo is an intrusive singly linked queue of packets.
type fifo struct{ head, tail *packet }

// port is a link's transmit side: strict-priority queues served at the
// link rate, one frame on the wire at a time. Host NICs and switch
// egress ports are both ports. Owned by the Network.
type port struct {
	queues [MaxQueues]fifo
	cur    *packet // frame being serialized; nil when the link is idle

	bytes, frames       int // held: queued frames plus cur
	maxBytes, maxFrames int // high-water marks of bytes, frames
}

// push appends p to queue q and updates the occupancy.
func (pt *port) push(p *packet, q int) {
	p.next = nil
	f := &pt.queues[q]
	if f.tail == nil {
		f.head = p
	} else {
		f.tail.next = p
	}
	f.tail = p
	pt.hold(p)
}

// hold counts p as held by the port.
func (pt *port) hold(p *packet) {
	pt.bytes += len(p.buf)
	pt.frames++
	pt.maxBytes = max(pt.maxBytes, pt.bytes)
	pt.maxFrames = max(pt.maxFrames, pt.frames)
}

// unhold stops counting p as held by the port.
func (pt *port) unhold(p *packet) {
	pt.bytes -= len(p.buf)
	pt.frames--
}

// pop removes the head of the highest non-empty queue, or returns nil.
// It does not change the occupancy: the frame moves to the wire.
func (pt *port) pop() *packet {
	for q := MaxQueues - 1; q >= 0; q-- {
		f := &pt.queues[q]
		if p := f.head; p != nil {
			f.head = p.next
			if f.head == nil {
				f.tail = nil
			}
			p.next = nil
			return p
		}
	}
	return nil
}

// drain removes every queued frame (not cur) and passes each to drop.
func (pt *port) drain(drop func(*packet)) {
	for p := pt.pop(); p != nil; p = pt.pop() {
		pt.unhold(p)
		drop(p)
	}
}

// queueOf maps a priority to a queue index of this network's ports.
func (n *Network) queueOf(prio uint8) int {
	if n.cfg.FIFO {
		return 0
	}
	return int(prio) * n.cfg.Queues / 8
}

// txTime returns the serialization time of a frame of size bytes in ns,
// rounded up to a whole ns. Integer arithmetic keeps it exact.
func (n *Network) txTime(size int) int64 {
	bits := int64(size+n.cfg.FrameOverhead) * 8 * 1e9
	return (bits + n.bps - 1) / n.bps
}

// TxTime returns the time in ns a frame of size bytes takes to serialize
// on one link: ceil((size+FrameOverhead)·8 / LinkBps). An idle path from
// host to host takes 2·TxTime + 2·PropDelay.
func (n *Network) TxTime(size int) int64 { return n.txTime(size) }
