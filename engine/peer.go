package engine

import (
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// peer is what an endpoint knows about another Homa host. Owned by the
// endpoint; created on first use (an RPC to it, or a frame from it), and
// dropped when idle — no live RPCs and not waiting for its link address —
// for Config.PeerIdleTicks, or sooner, oldest idle first, to make room
// for a new one when the table holds Config.MaxPeers (see evictPeer).
type peer struct {
	// addr is the peer's address as kernel Homa holds it, IPv4 mapped
	// (the tables' key); ip the same as the application sees it (IPv4
	// unmapped); v6 says it is reached over IPv6, v4 its IPv4 address
	// otherwise.
	addr [16]byte
	ip   netip.Addr
	v6   bool
	v4   [4]byte

	// homaOff is where the Homa header starts in a frame to the peer
	// (after Ethernet, any 802.1Q tag, IPv4 or IPv6), payload the
	// message bytes per DATA packet to it (Config.MTU less the IP and
	// DATA headers).
	homaOff, payload int

	// neigh is the entry of the peer's next hop in the host's neighbour
	// table (Config.Resolve; nil: no route). The table writes it; the
	// engine reads its State and MAC for every frame it sends to the peer
	// and never learns a MAC from received frames.
	neigh *Neighbour

	// waiting holds the RPCs whose packets wait for neigh to become
	// reachable, in the order they began to wait; lostGrants says a GRANT
	// to the peer was dropped while it was unresolved; listed says the
	// peer is in the endpoint's waitingPeers for either.
	waiting    []*rpc
	lostGrants bool
	listed     bool

	// cutoffs and cutoffVersion are the peer's unscheduled priority
	// cutoffs from its last CUTOFFS (Config.PeerCutoffs, or
	// sched.PeerDefaultCutoffs, and 0 before any arrive); DATA to the peer
	// echoes the version.
	cutoffs       sched.Cutoffs
	cutoffVersion uint16

	// acks buffers ack entries for client RPCs to this peer whose
	// responses arrived; one rides on each DATA to the peer, and an ACK
	// packet carries them when a sixth arrives.
	acks    [wire.MaxAcks]wire.AckEntryFields
	numAcks int

	// allowance is the unscheduled byte allowance the peer advertised in
	// a response to us (bytes; 0 = none; noteAllowance), valid until tick
	// allowanceUntil.
	allowance      int
	allowanceUntil uint64

	// acked remembers the client ids of the peer's latest recentAcks RPCs
	// that our server freed on an ack (ring; next slot ackedNext), so a
	// late duplicate of their request cannot execute it again.
	acked     [recentAcks]uint64
	ackedNext int
	// ackedIdx indexes acked by id: an open-addressed set (linear
	// probing, at most half full) of positions in acked, 1 + the index (0:
	// empty), so that recentlyAcked, asked for every new request, probes a
	// slot or two instead of reading the whole ring (a 64-entry scan was
	// a thirtieth of a small RPC's cost). An id of 0 is never indexed.
	ackedIdx [1 << ackedIdxBits]uint8

	// cutoffsSentTick and cutoffsSentVersion: when we last sent our
	// CUTOFFS to the peer and which version (0 = never); a version is
	// sent at most once per tick.
	cutoffsSentTick    uint64
	cutoffsSentVersion uint16

	serverRPCs int // live server RPCs of requests from the peer (≤ Config.MaxServerRPCsPerPeer)
	heldIn     int // bytes of receive memory the peer's committed requests still arriving hold (recvpool.go)

	// The peer's incoming messages and the grants (lapse.go): granting
	// counts those in the grants. Until tick turnsUntil the peer takes
	// turns: one message in the grants at a time, the others waiting in
	// turnHead..turnTail.
	granting           int
	turnsUntil         uint64
	turn               *rpc // while it takes turns: its message in the grants, if known
	turnHead, turnTail *rpc

	// hdr is the Ethernet and IPv4 headers of every frame to the peer,
	// made (hdrOK) for the MAC hdrMAC, with priority 0 and total length,
	// id and checksum 0; hdrSum is the one's-complement sum of its IPv4
	// header. writeHeaders writes a frame's headers from it.
	hdr    [wire.EthernetHeaderLen + wire.VLANTagLen + wire.IPv6HeaderLen]byte
	hdrMAC wire.MAC
	hdrOK  bool
	hdrSum uint16

	// variant is what Config.PeerOptions said the peer runs; upstream
	// is set when it runs the upstream subset (configured, or found out
	// under VariantAuto: noteVariant), for our requests to it. hijack sends its packets as
	// TCP-hijacked framing; csum fills the Homa checksum of every packet
	// to it (Config.Checksum, or hijack), from pseudo, the sum of its
	// pseudo-header without the length. Set when the peer is created.
	variant  Variant
	upstream bool
	hijack   bool
	csum     bool
	pseudo   uint16
	// homaDPDK says the peer runs homa-dpdk (PeerOptions.HomaDPDK, or
	// found out: noteAllowance): DATA to it carries our incast allowance
	// in the pad bytes.
	homaDPDK bool

	// maxMessage is the largest message sent to or accepted from the
	// peer, bytes: Config.MaxMessageLength, or at most
	// wire.MaxMessageLength when Config.KernelPeer names it. Set once.
	maxMessage int

	// rpcs counts the live RPCs (client and server) with the peer. While
	// it is 0 the peer is on the endpoint's idle list (idlePrev,
	// idleNext; idle), ordered by idleSince, the tick it was last used:
	// created, heard from, or its last RPC ended.
	rpcs               int
	idle               bool
	idlePrev, idleNext *peer
	idleSince          uint64

	// clients, clientsLast: the live client RPCs to the peer in creation
	// order (rpc.peerPrev, peerNext): what an unreachable from the peer
	// that names only ports can fail (portUnreachable), looked at without
	// a walk of the endpoint's other RPCs.
	clients, clientsLast *rpc
}

// recentAcks is how many acknowledged RPCs per peer a server remembers.
const recentAcks = 64

// ackedIdxBits: peer.ackedIdx has twice recentAcks slots.
const ackedIdxBits = 7

// ackedHome is the slot of peer.ackedIdx where clientID's probe starts
// (Fibonacci hashing: the top bits of the product). A client choosing
// its ids can at worst make a probe read the ring's 64 entries, as the
// scan did before.
func ackedHome(clientID uint64) int {
	return int(clientID * 0x9e3779b97f4a7c15 >> (64 - ackedIdxBits))
}

// rememberAcked records that the server RPC of client id clientID ended
// with an ack.
func (p *peer) rememberAcked(clientID uint64) {
	i := p.ackedNext
	if old := p.acked[i]; old != 0 {
		p.unindexAcked(old, i)
	}
	p.acked[i] = clientID
	if clientID != 0 {
		j := ackedHome(clientID)
		for p.ackedIdx[j] != 0 {
			j = (j + 1) & (len(p.ackedIdx) - 1)
		}
		p.ackedIdx[j] = uint8(i + 1)
	}
	p.ackedNext = (i + 1) % recentAcks
}

// unindexAcked takes position i of the ring, holding id, out of
// ackedIdx, moving back the entries after it that probed past its slot.
func (p *peer) unindexAcked(id uint64, i int) {
	const mask = len(p.ackedIdx) - 1
	j := ackedHome(id)
	for int(p.ackedIdx[j]) != i+1 {
		j = (j + 1) & mask
	}
	for k := (j + 1) & mask; p.ackedIdx[k] != 0; k = (k + 1) & mask {
		if h := ackedHome(p.acked[p.ackedIdx[k]-1]); (k-h)&mask >= (k-j)&mask {
			p.ackedIdx[j] = p.ackedIdx[k]
			j = k
		}
	}
	p.ackedIdx[j] = 0
}

// recentlyAcked reports whether clientID is among the remembered acks.
func (p *peer) recentlyAcked(clientID uint64) bool {
	if clientID == 0 {
		return false
	}
	for j := ackedHome(clientID); ; j = (j + 1) & (len(p.ackedIdx) - 1) {
		x := p.ackedIdx[j]
		if x == 0 {
			return false
		}
		if p.acked[x-1] == clientID {
			return true
		}
	}
}

// peerFor returns the peer for ip as an RPC to it starts, creating it
// with its neighbour entry from Config.Resolve on first use; nil when
// there is no route (no peer is kept then). A peer with no route or a
// failed entry is asked about again, so that a route added since, or a
// table that retries a failed resolution when asked, brings it back.
func (e *Endpoint) peerFor(addr [16]byte) *peer {
	p := e.peerAt(addr)
	if p == nil {
		n := e.resolve(addrIP(addr))
		if n == nil {
			return nil
		}
		return e.addPeer(addr, n)
	}
	e.reresolve(p)
	return p
}

// reresolve asks Config.Resolve again about p if it has no route or its
// entry failed.
func (e *Endpoint) reresolve(p *peer) {
	if !p.resolvable() {
		p.neigh = e.resolve(p.ip)
	}
}

// peerFromFrame returns the peer that sent f, creating it (and asking
// Config.Resolve for its entry, which starts resolution in the host's
// table) if it is new. The frame's source MAC is not looked at: where
// frames to the peer go is the neighbour table's business. It returns nil,
// counted in DropPeerTableFull, when the table is full and no peer in it
// is idle: the caller drops the frame.
func (e *Endpoint) peerFromFrame(f *wire.Frame) *peer {
	var p *peer
	if f.IPv4 != nil {
		if src := f.IPv4.Src(); e.lastPeer4 != nil && e.lastPeer4.v4 == src {
			p = e.lastPeer4
		} else if p = e.peers4[src]; p != nil {
			e.lastPeer4 = p
		}
	} else {
		p = e.peers6[f.IPv6.Src()]
	}
	if p != nil {
		if p.idle {
			e.touchIdle(p)
		}
		return p
	}
	if e.NumPeers() >= e.cfg.MaxPeers && !e.evictIdle() {
		e.m.drop(DropPeerTableFull)
		return nil
	}
	ip := f.Src()
	return e.addPeer(ip, e.resolve(addrIP(ip)))
}

// addPeer adds a peer for ip with neighbour entry n. A peer an RPC of the
// application starts may take the table past Config.MaxPeers when no
// peer is idle (the bound is on what remote hosts can make us hold; the
// application bounds its own RPCs); otherwise the oldest idle peer makes
// room.
func (e *Endpoint) addPeer(addr [16]byte, n *Neighbour) *peer {
	if e.NumPeers() >= e.cfg.MaxPeers {
		e.evictIdle()
	}
	ip := addrIP(addr)
	p := &peer{addr: addr, ip: ip, v6: !ip.Is4(), neigh: n, cutoffs: sched.PeerDefaultCutoffs(), maxMessage: e.cfg.MaxMessageLength,
		homaOff: e.homaOff, payload: e.payload}
	if p.v6 {
		p.homaOff = e.ipOff + wire.IPv6HeaderLen
		p.payload = wire.PayloadPerPacket(e.cfg.MTU, wire.IPv6HeaderLen)
	} else {
		p.v4 = ip.As4()
	}
	if e.cfg.PeerCutoffs != (sched.Cutoffs{}) {
		p.cutoffs = e.cfg.PeerCutoffs
	}
	kernel := e.cfg.KernelPeer != nil && e.cfg.KernelPeer(ip)
	if kernel {
		p.maxMessage = min(p.maxMessage, wire.MaxMessageLength)
	}
	p.homaDPDK = !kernel
	if e.cfg.PeerOptions != nil {
		o := e.cfg.PeerOptions(ip)
		p.variant, p.hijack = o.Variant, o.Hijack
		p.upstream = o.Variant == VariantUpstream
		p.homaDPDK = p.homaDPDK || o.HomaDPDK
	}
	if e.cfg.Upstream {
		p.upstream, p.hijack = true, false // what we speak, to everyone; it has no hijack markers
	}
	p.csum = p.hijack || e.cfg.Checksum
	if p.v6 {
		p.pseudo = wire.PseudoSumIPv6(e.cfg.IP6, addr, wire.IPProtoTCP, 0)
	} else {
		p.pseudo = wire.PseudoSumIPv4(e.cfg.IP, p.v4, wire.IPProtoTCP, 0)
	}
	e.setPeer(p)
	e.m.PeerNewEntries++
	e.pushIdle(p)
	return p
}

// usePeer counts a new live RPC with p (insert calls it).
func (e *Endpoint) usePeer(p *peer) {
	if p.rpcs == 0 && p.idle {
		e.unlinkIdle(p)
	}
	p.rpcs++
}

// releasePeer counts the end of a live RPC with p (end calls it).
func (e *Endpoint) releasePeer(p *peer) {
	p.rpcs--
	if p.rpcs == 0 && e.peerAt(p.addr) == p {
		e.pushIdle(p)
	}
}

// pushIdle puts p at the tail of the idle list, used now.
func (e *Endpoint) pushIdle(p *peer) {
	p.idle, p.idleSince = true, e.ticks
	p.idlePrev, p.idleNext = e.idleTail, nil
	if e.idleTail != nil {
		e.idleTail.idleNext = p
	} else {
		e.idleHead = p
	}
	e.idleTail = p
}

// unlinkIdle takes p off the idle list.
func (e *Endpoint) unlinkIdle(p *peer) {
	if p.idlePrev != nil {
		p.idlePrev.idleNext = p.idleNext
	} else {
		e.idleHead = p.idleNext
	}
	if p.idleNext != nil {
		p.idleNext.idlePrev = p.idlePrev
	} else {
		e.idleTail = p.idlePrev
	}
	p.idle, p.idlePrev, p.idleNext = false, nil, nil
}

// touchIdle marks idle peer p used now: to the tail of the list.
func (e *Endpoint) touchIdle(p *peer) {
	if p.idleSince == e.ticks && e.idleTail == p {
		return
	}
	e.unlinkIdle(p)
	e.pushIdle(p)
}

// evictIdle drops the idle peer used longest ago, if there is one, and
// reports whether it did. A peer still on the waiting list (a dropped
// GRANT to repeat; checkNeighbours lets it go) is passed over, among the
// eight oldest.
func (e *Endpoint) evictIdle() bool {
	n := 0
	for p := e.idleHead; p != nil && n < 8; p = p.idleNext {
		if p.listed {
			n++
			continue
		}
		e.evictPeer(p)
		return true
	}
	return false
}

// agePeers drops the peers idle for Config.PeerIdleTicks (tick calls it).
func (e *Endpoint) agePeers() {
	for p := e.idleHead; p != nil && e.ticks-p.idleSince >= uint64(e.cfg.PeerIdleTicks); p = e.idleHead {
		if p.listed {
			e.touchIdle(p)
			continue
		}
		e.evictPeer(p)
	}
}

// evictPeer drops idle peer p from the table: what the endpoint knew of
// it (cutoffs, allowance, buffered acks, the ids of requests it acked,
// so a duplicate of one arriving after PeerIdleTicks would execute
// again) is forgotten, and Config.Forget tells the host that the endpoint
// no longer holds the neighbour entry Resolve gave for p.
func (e *Endpoint) evictPeer(p *peer) {
	e.unlinkIdle(p)
	if p.v6 {
		delete(e.peers6, p.addr)
	} else {
		delete(e.peers4, p.v4)
		if e.lastPeer4 == p {
			e.lastPeer4 = nil
		}
	}
	e.m.PeersEvicted++
	if e.cfg.Forget != nil {
		e.cfg.Forget(p.ip)
	}
	p.neigh = nil
}

// NumPeers returns the number of peers the endpoint holds (a gauge, at
// most Config.MaxPeers but for peers the application's own RPCs added).
func (e *Endpoint) NumPeers() int { return len(e.peers4) + len(e.peers6) }

// peerAt returns the peer at addr (IPv4 mapped), or nil.
func (e *Endpoint) peerAt(addr [16]byte) *peer {
	if a, ok := wire.UnmapIPv4(addr); ok {
		return e.peers4[a]
	}
	return e.peers6[addr]
}

// setPeer puts p in the peer table.
func (e *Endpoint) setPeer(p *peer) {
	if p.v6 {
		e.peers6[p.addr] = p
	} else {
		e.peers4[p.v4] = p
	}
}

// unschedBytes returns how many bytes of a new message to p go out
// before any grant: UnschedBytes, or less while p advertises a smaller
// allowance (incast control).
func (e *Endpoint) unschedBytes(p *peer) int {
	n := e.cfg.UnschedBytes
	if p.allowance > 0 && e.ticks <= p.allowanceUntil {
		n = min(n, p.allowance)
	}
	return n
}

// noteAllowance records the allowance carried in the pad bytes of d, a
// DATA of the response to one of our requests to p (matched by its id
// and ports: a stranger's packet from p's address is not believed), if
// it carries one: at least allowanceFloor, for AllowanceTicks. Only
// homa-dpdk writes the extension, so a VariantAuto peer is homa-dpdk
// from then on (HomaDPDKPeersDetected); a peer configured as kernel Homa
// (its variant set, not as homa-dpdk) never is.
func (e *Endpoint) noteAllowance(p *peer, d wire.Data) {
	a, ok := e.allowanceOf(d)
	if !ok {
		return
	}
	if !p.homaDPDK && p.variant == VariantAuto {
		p.homaDPDK = true
		e.m.HomaDPDKPeersDetected++
	}
	p.allowance = a
	p.allowanceUntil = e.ticks + uint64(e.cfg.AllowanceTicks)
}

// noteRequestAllowance takes the allowance in d, a DATA of server RPC
// r's request. A request says what its sender reserved for its response,
// a fresher word of its allowance than its last response to us, which
// incast control needs (the slowdown and hostile scenarios lose without
// it); but its id is the sender's to choose, so a stranger can make one
// up from any address. It is believed for r's peer (raised to
// allowanceFloor) for weakAllowanceTicks only, not AllowanceTicks: a
// made-up request cuts the next bursts to that peer for at most that
// long. It also makes r's response carry our allowance (extension).
func (e *Endpoint) noteRequestAllowance(r *rpc, d wire.Data) {
	a, ok := e.allowanceOf(d)
	if !ok {
		return
	}
	r.peerAllowance = a
	p := r.peer
	p.allowance = a
	p.allowanceUntil = e.ticks + weakAllowanceTicks
}

// weakAllowanceTicks is how long an allowance a request advertised holds
// for its peer: the tick it came in and the next.
const weakAllowanceTicks = 1

// extension reports whether DATA of r carries our allowance though r's
// peer is not known to run homa-dpdk: the response to a request that
// carried one, to a peer not configured as kernel Homa.
func (r *rpc) extension() bool {
	return r.peerAllowance > 0 && r.peer.variant == VariantAuto
}

// allowanceOf decodes the allowance in d's pad bytes, raised to
// allowanceFloor (AllowancesClamped).
func (e *Endpoint) allowanceOf(d wire.Data) (int, bool) {
	a, ok := sched.DecodeAllowance(d.Pad())
	if !ok {
		return 0, false
	}
	if floor := e.allowanceFloor(); a < floor {
		e.m.AllowancesClamped++
		a = floor
	}
	return a, true
}

// allowanceFloor is the least allowance a peer is believed to advertise:
// our own Config.Incast.MinAllowance (a homa-dpdk peer configured alike
// advertises no less), in whole AllowanceUnits, and at least 1 byte (one
// packet goes).
func (e *Endpoint) allowanceFloor() int {
	return max(e.cfg.Incast.MinAllowance/sched.AllowanceUnit*sched.AllowanceUnit, 1)
}

// popAck removes and returns one buffered ack (zero if none).
func (p *peer) popAck() wire.AckEntryFields {
	if p.numAcks == 0 {
		return wire.AckEntryFields{}
	}
	p.numAcks--
	a := p.acks[p.numAcks]
	p.acks[p.numAcks] = wire.AckEntryFields{}
	return a
}

// addAck records that client RPC r (whose response arrived) may be freed
// by its server: buffered, or, if five are buffered already, sent at once
// in an ACK packet with them (r rides as the packet's own sender_id).
func (e *Endpoint) addAck(r *rpc) {
	p := r.peer
	if p.numAcks < wire.MaxAcks {
		p.acks[p.numAcks] = wire.AckEntryFields{ClientID: r.id, ServerPort: r.dport}
		p.numAcks++
		return
	}
	e.sendAck(p, r.port.num, r.dport, r.id)
}

// sendAck sends an ACK packet acknowledging id and every buffered ack.
func (e *Endpoint) sendAck(p *peer, sport, dport uint16, id uint64) {
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	f := wire.AckFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id}}
	for p.numAcks > 0 && int(f.NumAcks) < wire.MaxAcks {
		f.Acks[f.NumAcks] = p.popAck()
		f.NumAcks++
	}
	n := f.Encode(buf[p.homaOff:])
	e.finishFrame(buf, p, controlPriority, n, wire.TypeAck)
}
