package host

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ShardSet joins the shards of one port
// (docs/design.md#shards-and-the-receive-copier): each a
// Host on its own RX and TX queues with its own engine.Endpoint
// (engine.Shard), on its own loop. A shard hands the others what it
// received for them over a single-producer, single-consumer ring per
// ordered pair of shards: frames of RPCs another shard owns (the mbuf
// itself), acks it read for their RPCs, copies of CUTOFFS (every shard's);
// the owner takes them in its next pass, in the same batch as its own RX
// burst. The shards share the grant view, the link clock and the limits
// on the port unreachables of the port.
type ShardSet struct {
	n      int
	frames [][]*handRing[*dpdk.Mbuf] // [from][to]
	acks   [][]*handRing[handAck]
	copies [][]*handRing[handCopy]
	grants *sched.GrantShare
	link   *sched.LinkClock
	homes  *engine.PortHomes // nil unless HomePorts

	// icmp is made by the first shard, from its engine.Config.ICMPRate.
	icmpOnce sync.Once
	icmp     *engine.ICMPLimiter
}

// handCopy is a copy of a frame every shard takes: CUTOFFS (the peer's
// cutoffs, for each shard's copy of the peer) or a neighbour frame (ARP,
// IPv6 neighbour discovery: each shard's table learns from it; only the
// shard that received it answers).
type handCopy struct {
	frame     []byte
	neighbour bool
}

type handAck struct {
	peer   netip.Addr
	client uint64
	port   uint16
}

// handRingSize is each ring's room: a few RX bursts a pass behind.
const handRingSize = 1024

// NewShardSet returns the set of a port of n shards.
func NewShardSet(n int) *ShardSet {
	s := &ShardSet{n: max(n, 1), grants: sched.NewGrantShare(n), link: &sched.LinkClock{}}
	s.frames = make([][]*handRing[*dpdk.Mbuf], s.n)
	s.acks = make([][]*handRing[handAck], s.n)
	s.copies = make([][]*handRing[handCopy], s.n)
	for i := range s.n {
		s.frames[i] = make([]*handRing[*dpdk.Mbuf], s.n)
		s.acks[i] = make([]*handRing[handAck], s.n)
		s.copies[i] = make([]*handRing[handCopy], s.n)
		for j := range s.n {
			if i != j {
				s.frames[i][j] = newHandRing[*dpdk.Mbuf](handRingSize)
				s.acks[i][j] = newHandRing[handAck](handRingSize)
				s.copies[i][j] = newHandRing[handCopy](64)
			}
		}
	}
	return s
}

// Shards is how many shards the port has.
func (s *ShardSet) Shards() int { return s.n }

// HomePorts makes the port's server ports homed (engine.PortHomes): each
// bound on one shard, which takes all its RPCs; the worker hub binds a
// session's ports on the session's shard. Call it before the shards'
// hosts are made. Without it, an application binds a port on every shard
// and each serves the RPCs whose ids are its own.
func (s *ShardSet) HomePorts() {
	if s.homes == nil {
		s.homes = new(engine.PortHomes)
	}
}

// engineShard is shard i's engine.Shard, with h taking its acks; the
// port's unreachables are limited by rate (the shards' engine configs
// are alike: the first one's is used).
func (s *ShardSet) engineShard(i int, h *Host, rate engine.ICMPRate) engine.Shard {
	s.icmpOnce.Do(func() { s.icmp = engine.NewICMPLimiter(rate) })
	return engine.Shard{Index: i, Count: s.n, ForwardAck: h.forwardAck, Grants: s.grants, Link: s.link, Homes: s.homes, ICMP: s.icmp}
}

// HandOff is what a shard handed the others, and what it could not (their
// ring was full: the frame dropped, recovered by Homa's RESEND; the ack
// left to NEED_ACK; a copy left to the next one).
type HandOff struct {
	Frames, Acks, Copies uint64
	Dropped              uint64
}

// HandOff is what this host, a shard, handed the port's other shards.
func (h *Host) HandOff() HandOff { return h.handed }

// handFrame gives the frame m, of an RPC shard owner owns, to that shard.
func (h *Host) handFrame(owner int, m *dpdk.Mbuf) {
	if h.shards.frames[h.shardIdx][owner].push(m) {
		h.handed.Frames++
		return
	}
	h.handed.Dropped++
	h.free = append(h.free, m)
}

// handCopies gives every other shard a copy of a frame they all take:
// CUTOFFS (the peer's, not an RPC's), or a neighbour frame. Both are rare
// (once per peer and cutoff version; ARP and neighbour discovery).
func (h *Host) handCopies(frame []byte, neighbour bool) {
	for j, r := range h.shards.copies[h.shardIdx] {
		if j == h.shardIdx {
			continue
		}
		if r.push(handCopy{append([]byte(nil), frame...), neighbour}) {
			h.handed.Copies++
		} else {
			h.handed.Dropped++
		}
	}
}

// isNeighbour says whether a frame that is not Homa is one the neighbour
// tables learn from: ARP, or ICMPv6 neighbour solicitation or
// advertisement.
func isNeighbour(l *wire.Link) bool {
	switch l.Type {
	case wire.EtherTypeARP:
		return true
	case wire.EtherTypeIPv6:
		ip, proto, off, r := wire.ParseIPv6(l.Payload)
		if r != wire.DropNone || proto != wire.IPProtoICMPv6 || len(ip) <= off {
			return false
		}
		t := ip[off]
		return t == wire.ICMPv6NeighborSolicit || t == wire.ICMPv6NeighborAdvert
	}
	return false
}

// forwardAck is the engine's Shard.ForwardAck: an ack for another
// shard's RPC.
func (h *Host) forwardAck(owner int, peer netip.Addr, client uint64, port uint16) {
	if h.shards.acks[h.shardIdx][owner].push(handAck{peer, client, port}) {
		h.handed.Acks++
	} else {
		h.handed.Dropped++
	}
}

// handIn takes what the other shards handed this one; it runs inside
// the pass's receive batch (or opens one), and reports whether there was
// anything.
func (h *Host) handIn(inBatch bool) bool {
	took := false
	begin := func() {
		if !inBatch && !took {
			h.ep.BeginBatch(h.now)
		}
		took = true
	}
	for from := range h.shards.n {
		if from == h.shardIdx {
			continue
		}
		for r := h.shards.frames[from][h.shardIdx]; ; {
			m, ok := r.pop()
			if !ok {
				break
			}
			begin()
			h.dispatch(m, false)
		}
		for r := h.shards.acks[from][h.shardIdx]; ; {
			a, ok := r.pop()
			if !ok {
				break
			}
			begin()
			h.ep.ReceiveAck(a.peer, a.client, a.port)
		}
		for r := h.shards.copies[from][h.shardIdx]; ; {
			c, ok := r.pop()
			if !ok {
				break
			}
			begin()
			if !c.neighbour {
				h.copyInLoop = true // c.frame is the ring's copy, let go after
				h.ep.Receive(c.frame)
				h.copyInLoop = false
				continue
			}
			h.learnNeighbour(c.frame)
		}
	}
	if took && !inBatch {
		h.ep.EndBatch()
	}
	return took
}

// learnNeighbour lets this shard's neighbour tables learn from a copy of
// a neighbour frame another shard received and answered: the answer made
// here is not sent, and the stack's counters are that shard's.
func (h *Host) learnNeighbour(frame []byte) {
	var l wire.Link
	var uncounted StackCounters
	if wire.ParseLink(frame, &l) != wire.DropNone {
		return
	}
	switch l.Type {
	case wire.EtherTypeARP:
		handleARP(frame, len(frame)-len(l.Payload), h.me, h.neigh, h.now, &uncounted)
	case wire.EtherTypeIPv6:
		if ip, proto, off, r := wire.ParseIPv6(l.Payload); r == wire.DropNone {
			handleIPv6(frame, ip, proto, off, h.me, h.neigh6, h.now, &uncounted)
		}
	}
}

// drainHandOff frees the frames handed to this shard and not taken (the
// port stopping).
func (h *Host) drainHandOff() {
	if h.shards == nil {
		return
	}
	for from := range h.shards.n {
		if from == h.shardIdx {
			continue
		}
		for r := h.shards.frames[from][h.shardIdx]; ; {
			m, ok := r.pop()
			if !ok {
				break
			}
			h.free = append(h.free, m)
		}
	}
}

// handRing is a single-producer, single-consumer ring between two
// shards' loops: the producer writes slots and then publishes its tail,
// the consumer reads them and then publishes its head.
type handRing[T any] struct {
	head atomic.Uint64
	_    [56]byte
	tail atomic.Uint64
	_    [56]byte
	buf  []T
	mask uint64
}

func newHandRing[T any](size int) *handRing[T] {
	n := 1
	for n < size {
		n <<= 1
	}
	return &handRing[T]{buf: make([]T, n), mask: uint64(n - 1)}
}

func (r *handRing[T]) push(v T) bool {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1)
	return true
}

func (r *handRing[T]) pop() (T, bool) {
	var zero T
	h := r.head.Load()
	if h == r.tail.Load() {
		return zero, false
	}
	v := r.buf[h&r.mask]
	r.buf[h&r.mask] = zero
	r.head.Store(h + 1)
	return v, true
}

// icmpQuote is what the host reads of an ICMP or ICMPv6 error to steer
// it: its source, the quoted packet's addresses (IPv4 mapped) and
// protocol, and the quoted Homa bytes (nil: too short to steer by).
type icmpQuote struct {
	v6             bool
	from, src, dst [16]byte
	proto          uint8
	homa           []byte
}

// steerICMP decides where an ICMP error for us goes on a sharded port:
// it reports whether this shard takes it, after handing a copy to the
// shard whose RPC it quotes, or to every other one when the quote holds
// only the ports (engine.ICMPShard): each shard has client ports of the
// same numbers, so a short quote may name any shard's. A short quote
// goes to the others only if it passes the rules of engine/icmp.go that
// need no RPC: from the address it quotes a packet to, quoting 8 bytes
// of a Homa packet (146, or 6 hijacked) from our address in its family.
// Any other is this shard's alone, which counts it (icmp_spoofed,
// bad_icmp): a spoofed one costs one shard, not every shard. Unsharded,
// this host takes it.
func (h *Host) steerICMP(frame []byte, q *icmpQuote) bool {
	if h.shards == nil || h.shards.n < 2 {
		return true
	}
	owner, all := engine.ICMPShard(q.homa, h.shards.n)
	switch {
	case all:
		me := wire.MapIPv4(h.me.ip)
		if q.v6 {
			me = h.me.ip6
		}
		if q.from != q.dst || q.src != me || me == ([16]byte{}) || len(q.homa) < 8 ||
			q.proto != wire.IPProtoHoma && q.proto != wire.IPProtoTCP {
			return true
		}
		h.handCopies(frame, false)
		return true
	case owner != h.shardIdx:
		if h.shards.copies[h.shardIdx][owner].push(handCopy{append([]byte(nil), frame...), false}) {
			h.handed.Copies++
		} else {
			h.handed.Dropped++
		}
		return false
	}
	return true
}

// icmpQuote4 reads an ICMP error (IPv4) for steerICMP.
func icmpQuote4(ip wire.IPv4) icmpQuote {
	q := icmpQuote{from: wire.MapIPv4(ip.Src())}
	m := wire.ICMP(ip.Payload())
	if len(m) < wire.ICMPHeaderLen+wire.IPv4MinHeaderLen {
		return q
	}
	p := m.Quoted()
	if hl := p.HeaderLen(); hl >= wire.IPv4MinHeaderLen && len(p) > hl {
		q.src, q.dst, q.proto, q.homa = wire.MapIPv4(p.Src()), wire.MapIPv4(p.Dst()), p.Protocol(), p[hl:]
	}
	return q
}

// icmpQuote6 reads an ICMPv6 error for steerICMP.
func icmpQuote6(ip wire.IPv6, off int) icmpQuote {
	q := icmpQuote{v6: true, from: ip.Src()}
	if len(ip) < off+wire.ICMPv6HeaderLen+wire.IPv6HeaderLen {
		return q
	}
	p := wire.IPv6(ip[off+wire.ICMPv6HeaderLen:])
	q.src, q.dst, q.proto, q.homa = p.Src(), p.Dst(), p.NextHeader(), p[wire.IPv6HeaderLen:]
	return q
}

func (r *handRing[T]) len() int { return int(r.tail.Load() - r.head.Load()) }
