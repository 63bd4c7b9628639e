package engine

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Transmitter is the transmit side the engine writes packets into. The
// DPDK side lends mbuf memory; tests lend slices and record.
type Transmitter interface {
	// Buffer lends a buffer of at least Config.MTU + 18 bytes (Ethernet
	// with an 802.1Q tag), or nil when none is free. The engine keeps
	// DATA queued and owes GRANTs, both sent on a later Run (NextDeadline
	// asks for the next pass), counted in TxDeferred; other packets it
	// counts in DropNoBuffer and relies on its timers for. The engine
	// writes one frame at its start and passes it to Send before asking
	// for another.
	Buffer() []byte

	// Send transmits frame (a prefix of the last lent buffer) at Homa
	// priority 0..7. The buffer belongs to the transmit side again.
	Send(frame []byte, priority int)
}

// TxProgress is a Transmitter that can tell which of the frames it was
// given have left the host. The engine asks before it answers a RESEND:
// DATA of the RPC still waiting in the host's transmit queues (behind
// higher priorities, or behind a long backlog) is not lost, and a copy
// would only join the queue behind it, so the RESEND is answered BUSY
// (kernel Homa's homa_resend_data skips a packet whose buffer the NIC
// still holds). A Transmitter without it gets retransmissions as before.
type TxProgress interface {
	// TxDone returns how many of the frames passed to Send (or SendData)
	// at priority have left the host: put on the wire, or dropped. Frames
	// of one priority must leave in the order they were passed. Counts
	// start at zero when the transmit side is made; an engine given one
	// that has counted frames already merely retransmits as it would
	// without.
	TxDone(priority int) uint64
}

// PayloadRef names a message's memory to the transmit side (a
// DataSender), which owns whatever it stands for (on DPDK, an
// external-buffer descriptor). 0 means none: the engine copies the
// payload into each frame.
type PayloadRef uint64

// DataSender is a Transmitter that can send a DATA packet's payload from
// the message's own memory, without copying it into the frame: the frame
// holds the headers and the payload follows as a second segment (on DPDK,
// an mbuf attached to the memory as an external buffer). The engine uses
// it for messages sent with SendRef or ReplyRef and a non-zero ref.
type DataSender interface {
	// SendData transmits frame (the headers, a prefix of the last lent
	// buffer) followed by payload, a part of the message sent with ref,
	// at priority. It returns false, with the lent buffer still lent, when
	// it cannot; the engine then copies the payload into the frame.
	SendData(frame, payload []byte, ref PayloadRef, priority int) bool
}

// Endpoint is one Homa host: one IPv4 address, its ports, peers and RPCs.
// It is a deterministic state machine owned by one goroutine (a DPDK
// lcore, or a test): inputs are ReceiveLink (or Receive), Run,
// NeighbourReady and NeighbourFailed, and the Port methods; the time
// comes from Config.Clock, and packets leave through the Transmitter.
type Endpoint struct {
	cfg    Config      // validated, defaults filled; read-only after New
	tx     Transmitter // transmit side
	dataTx DataSender  // tx, when it can send payloads without a copy
	txProg TxProgress  // tx, when it tells which frames have left (nil: it does not)
	// txSent counts the frames passed to tx by priority (the queue
	// argument of Send and SendData), as TxProgress.TxDone counts those
	// that left.
	txSent  [wire.NumPriorities]uint64
	payload int // message bytes per DATA packet over IPv4 (a peer's own: peer.payload)
	ipOff   int // offset of the IP header in a frame: 14, or 18 with an 802.1Q tag
	homaOff int // offset of the Homa header in a frame over IPv4 (a peer's own: peer.homaOff)
	// maxHomaOff is the largest peer.homaOff: over IPv6 when Config.IP6
	// is set. A transmit buffer must hold it and the largest header.
	maxHomaOff int
	// speaks4 and speaks6: the families the endpoint reaches peers in —
	// IPv6 when Config.IP6 is set, IPv4 unless IPv6 is all it has.
	speaks4, speaks6 bool

	now int64 // ns: Clock at the start of the current call
	// batch: between BeginBatch and EndBatch; grantsDue: a Receive in the
	// batch left grant decisions to EndBatch.
	batch, grantsDue bool
	ticks            uint64 // timer ticks run so far
	// rxPrio is 1 + the highest priority of the DATA frames received
	// since the current tick began (0: none); rxPrioLast is its value
	// over the tick before (tick moves it). A message whose missing bytes
	// have a lower priority may be queued behind them in the switch, so
	// it is not asked to resend (checkRPC). rxBy and rxByLast: the RPC
	// whose frames alone set them (nil: several); compared, never
	// dereferenced.
	rxPrio, rxPrioLast uint8
	rxBy, rxByLast     *rpc
	// rxBytes and rxBytesLast: the Homa bytes of those DATA frames, in
	// the current tick and the one before.
	rxBytes, rxBytesLast int64
	nextTick             int64 // ns: when the next tick is due

	ports map[uint16]*Port // bound server ports and open client ports
	// srvPort is the port serverPort last found in ports, asked again
	// for every new request (see serverPort).
	srvPort        *Port
	nextClientPort uint16 // next client port to try (≥ 0x8000)
	// peers4 and peers6 hold the peers by address, IPv4 ones by their 4
	// bytes (a lookup per packet: hashing 16 bytes for them cost an IPv4
	// exchange a tenth of its time), IPv6 ones by 16 (peerAt).
	peers4 map[[4]byte]*peer
	peers6 map[[16]byte]*peer
	// lastPeer4 is the peer peerFromFrame last found in peers4 (nil
	// once evicted): a burst's frames mostly come from one peer.
	lastPeer4 *peer
	// idleHead, idleTail: the peers with no live RPCs, least recently
	// used first (peer.idlePrev, idleNext).
	idleHead, idleTail *peer
	rpcs               rpcTable  // every live RPC
	first, last        *rpc      // live RPCs in creation order, for the timer
	owedGrants         []*rpc    // RPCs whose latest GRANT is owed (oweGrant), in order
	fence              []fenced  // messages waiting for the copier (copier.go), in order
	heldBufs           []heldBuf // buffers of ended messages waiting for the copier (copier.go)
	copyMin            int       // Config.CopyMin, or DefaultCopyMin

	// icmpLimit limits the port unreachables sent (Shard.ICMP, or this
	// endpoint's own; icmplimit.go).
	icmpLimit *ICMPLimiter
	// icmpScanned counts the RPCs short-quote unreachables looked at
	// (portUnreachable), for the tests.
	icmpScanned uint64

	// waitingPeers are the peers with RPCs waiting for their link address
	// or GRANTs dropped while it was unresolved (peer.listed), checked by
	// Run, NeighbourReady and NeighbourFailed; sparePeers is the other
	// half of its double buffer. numWaiting counts the RPCs waiting;
	// neighDue says NeighbourReady or NeighbourFailed came inside a batch.
	waitingPeers, sparePeers []*peer
	numWaiting               int
	neighDue                 bool
	nextID                   uint64 // next client RPC id (even; this shard's)
	idStep                   uint64 // from one client id to the next: 2 x the shards

	grants *sched.GrantScheduler // incoming messages needing grants
	sendq  *sched.SenderQueue    // outgoing messages deferred by the pacer
	pacer  *sched.Pacer          // NIC backlog estimate
	incast *sched.Incast         // unscheduled bytes expected, allowance
	sizes  sched.Histogram       // lengths of incoming messages, for cutoffs

	numServerRPCs int // live server RPCs (≤ cfg.MaxServerRPCs)
	// Ended RPCs are reused (rpc.go, "Recycling"): dead since the call
	// into the endpoint that ended them, spare once a later call began.
	dead, spare []*rpc
	// reqHead, reqTail: the incoming requests, by their last DATA, oldest
	// first (rpc.reqPrev, reqNext; incoming.go).
	reqHead, reqTail *rpc
	// heldHead, heldTail: the committed requests still arriving, by their
	// last DATA, oldest first (rpc.heldPrev, heldNext; recvpool.go).
	heldHead, heldTail *rpc

	// Memory for incoming messages (recvbuf.go): commitBytes of a
	// message arrive before it is committed; until then its first
	// stageSlots chunks may be staged. allocChunks chunks exist (at most
	// maxChunks), stagedChunks of them held by messages, the rest in
	// freeChunks; freeSlots are spare slot tables. recvHeap is the bytes
	// of committed heap buffers not yet delivered. unschedLimit is
	// cfg.UnschedBytes in whole packets: the most of a sender's incoming
	// field believed.
	unschedLimit            int
	commitBytes, stageSlots int
	allocChunks, maxChunks  int
	stagedChunks            int
	freeChunks              []*stageChunk
	freeSlots               [][]*stageChunk
	recvHeap                int

	cutoffVersion uint16 // version of cfg.Cutoffs sent in CUTOFFS (starts at 1)
	ipID          uint16 // IPv4 identification counter
	frame         wire.Frame
	m             Metrics
}

// rpcKey finds an RPC: client RPCs by their id alone (ids are unique per
// endpoint, ip zero); server RPCs by client address and id.
type rpcKey struct {
	ip [16]byte // the peer's address (IPv4 mapped); zero for client RPCs
	id uint64
}

// New returns an endpoint. It sends nothing until asked.
func New(cfg Config, tx Transmitter) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Endpoint{
		cfg:            cfg,
		tx:             tx,
		payload:        wire.PayloadPerPacket(cfg.MTU, wire.IPv4MinHeaderLen),
		ports:          make(map[uint16]*Port),
		nextClientPort: clientPortMin,
		peers4:         make(map[[4]byte]*peer),
		peers6:         make(map[[16]byte]*peer),
		rpcs:           newRPCTable(),
		nextID:         (cfg.IDSeed + 2) &^ 1,
		grants:         sched.NewGrantScheduler(cfg.Grant, 64),
		sendq:          sched.NewSenderQueue(cfg.PacerFIFOFraction, 64),
		pacer:          sched.NewPacer(cfg.LinkBps, cfg.MaxNICQueueNs),
		incast:         sched.NewIncast(cfg.Incast),
		cutoffVersion:  1,
	}
	e.ipOff = wire.EthernetHeaderLen
	if cfg.PCP {
		e.ipOff += wire.VLANTagLen
	}
	e.homaOff = e.ipOff + wire.IPv4MinHeaderLen
	e.maxHomaOff = e.homaOff
	e.speaks6 = cfg.IP6 != [16]byte{}
	e.speaks4 = cfg.IP != [4]byte{} || !e.speaks6
	if e.speaks6 {
		e.maxHomaOff = e.ipOff + wire.IPv6HeaderLen
	}
	e.dataTx, _ = tx.(DataSender)
	e.txProg, _ = tx.(TxProgress)
	e.initRecvMem()
	e.copyMin = cmp.Or(e.cfg.CopyMin, DefaultCopyMin)
	e.now = cfg.Clock()
	e.nextTick = e.now + cfg.TickNs
	if cfg.IDSeed == 0 {
		e.nextID = randomID()
	}
	e.nextID = firstShardID(e.nextID, cfg.Shard)
	if g := cfg.Shard.Grants; g != nil {
		e.grants.Share(g, cfg.Shard.Index)
	}
	if l := cfg.Shard.Link; l != nil {
		e.pacer.Share(l)
	}
	e.idStep = 2 * uint64(max(cfg.Shard.Count, 1))
	e.icmpLimit = cfg.Shard.ICMP
	if e.icmpLimit == nil {
		e.icmpLimit = NewICMPLimiter(cfg.ICMPRate)
	}
	return e, nil
}

// randomID returns an even, non-zero id drawn from crypto/rand.
func randomID() uint64 {
	var b [8]byte
	rand.Read(b[:]) // never returns an error: it crashes the program if the system has no randomness
	if id := binary.LittleEndian.Uint64(b[:]) &^ 1; id != 0 {
		return id
	}
	return 2
}

// Metrics returns a copy of the counters.
func (e *Endpoint) Metrics() Metrics { return e.m }

// MaxMessageLength is the largest message the endpoint sends or accepts
// (towards a peer Config.KernelPeer names, at most wire.MaxMessageLength).
func (e *Endpoint) MaxMessageLength() int { return e.cfg.MaxMessageLength }

// MTU is the IP MTU the endpoint sends at, in bytes (Config.MTU).
func (e *Endpoint) MTU() int { return e.cfg.MTU }

// NumRPCs returns the number of live RPCs (client and server).
func (e *Endpoint) NumRPCs() int { return e.rpcs.len() }

// NumServerRPCs returns the number of live server RPCs (a gauge, at most
// Config.MaxServerRPCs).
func (e *Endpoint) NumServerRPCs() int { return e.numServerRPCs }

// Cutoffs returns the endpoint's unscheduled cutoffs and their version.
func (e *Endpoint) Cutoffs() (sched.Cutoffs, uint16) { return e.cfg.Cutoffs, e.cutoffVersion }

// RecomputeCutoffs derives new cutoffs from the lengths of the messages
// received so far (levels unscheduled levels), bumps the cutoff version so
// peers are sent the new ones, and resets the histogram.
func (e *Endpoint) RecomputeCutoffs(levels int) sched.Cutoffs {
	if e.sizes.Total() == 0 {
		return e.cfg.Cutoffs
	}
	e.cfg.Cutoffs = sched.ComputeCutoffs(&e.sizes, e.cfg.UnschedBytes, levels, e.cfg.MaxMessageLength)
	e.sizes.Reset()
	e.cutoffVersion++
	if e.cutoffVersion == 0 {
		e.cutoffVersion = 1
	}
	e.cfg.Grant.MaxSchedPrio = e.cfg.Cutoffs.MaxSchedPrio()
	e.grants.SetMaxSchedPrio(e.cfg.Grant.MaxSchedPrio)
	return e.cfg.Cutoffs
}

// BeginBatch starts a batch of frames received together, such as one
// burst from the NIC, at time now (ns, Config.Clock's): until EndBatch,
// ReceiveLink (Receive, ReceiveICMP) takes every frame to arrive at now
// instead of reading the clock, and leaves grant decisions to EndBatch,
// which makes them once for the whole batch — one GRANT per message per
// batch, raising its offset as far as a GRANT after each DATA packet
// would have, instead of one GRANT per DATA packet. Only those and
// NeighbourReady and NeighbourFailed (whose work also waits for
// EndBatch: an ARP reply in the same burst) may be called inside a batch.
// The batch counts as one call for NextDeadline: begin one only when
// there are frames to receive.
func (e *Endpoint) BeginBatch(now int64) {
	e.batch, e.grantsDue, e.now = true, false, now
}

// EndBatch ends the batch BeginBatch started and sends the grants it
// deferred, and what NeighbourReady released inside it.
func (e *Endpoint) EndBatch() {
	e.batch = false
	if e.grantsDue {
		e.grantsDue = false
		e.scheduleGrants()
	}
	if e.neighDue {
		e.checkNeighbours()
	}
}

// Run advances the endpoint to the clock's time: it runs the timer if a
// tick came due and lets the pacer send what it may. Call it at
// NextDeadline, or on every pass of a polling loop.
//
// A call runs at most one tick. A tick counts silence: every one must
// follow a chance to hear the peer. When the caller comes late (its loop
// was descheduled, the garbage collector stopped it, it started long
// after New), the packets that arrived meanwhile wait unread in its
// receive queue; running every missed tick back to back would age each
// RPC by the whole delay and time them all out (kernel Homa's timer, too,
// runs once when it wakes late). The missed ticks are skipped and counted
// in TimerTicksSkipped.
func (e *Endpoint) Run() {
	e.now = e.cfg.Clock()
	if len(e.dead) > 0 {
		e.reap()
	}
	if len(e.waitingPeers) > 0 {
		e.checkNeighbours() // an entry may have changed without a call
	}
	if e.now >= e.nextTick {
		e.nextTick += e.cfg.TickNs
		if e.now >= e.nextTick {
			missed := (e.now-e.nextTick)/e.cfg.TickNs + 1
			e.m.TimerTicksSkipped += uint64(missed)
			e.nextTick += missed * e.cfg.TickNs
		}
		e.tick()
	}
	if len(e.owedGrants) > 0 {
		e.sendOwedGrants()
	}
	e.pump()
}

// NextDeadline returns the time (ns) at which Run next has work: the next
// tick, or earlier when the pacer holds packets or GRANTs are owed (the
// Transmitter lent no buffer for them).
func (e *Endpoint) NextDeadline() int64 {
	d := e.nextTick
	if e.sendq.Len() > 0 {
		d = min(d, max(e.pacer.ReadyAt(e.now), e.now+1))
	}
	if len(e.owedGrants) > 0 {
		d = min(d, e.now+1)
	}
	return d
}

// Receive processes one received frame: wire.ParseLink, then
// ReceiveLink. The frame is read during the call only; message bytes are
// copied out. For DATA of a message already known it allocates only the
// message's buffer, once, when the message is committed (for a port
// without PortHooks.RecvBuf), and staging memory until the pool has
// grown to what is in use (see recvbuf.go).
func (e *Endpoint) Receive(frame []byte) {
	var l wire.Link
	if r := wire.ParseLink(frame, &l); r != wire.DropNone {
		e.m.drop(DropCause(r))
		return
	}
	e.ReceiveLink(&l)
}

// ReceiveLink processes one received frame whose link header the host
// has decoded (wire.ParseLink), such as every IPv4 frame a polling loop
// dispatches: a Homa packet, or an ICMP message other than echo
// (ReceiveICMP). It validates the rest (wire.ParseHomaIPv4, the IPv4
// checksum included, and the destination address) and counts what it
// drops by cause, as Receive does. The frame is read during the call
// only; message bytes are copied out. It allocates as Receive does.
func (e *Endpoint) ReceiveLink(l *wire.Link) {
	if !e.batch {
		e.now = e.cfg.Clock()
	}
	if len(e.dead) > 0 {
		e.reap()
	}
	f := &e.frame
	if r := wire.ParseHomaIP(l, f, true); r != wire.DropNone {
		if r == wire.DropNotHoma && (l.Type == wire.EtherTypeIPv4 && e.maybeICMP(l) || l.Type == wire.EtherTypeIPv6 && e.maybeICMPv6(l)) {
			return
		}
		e.m.drop(DropCause(r))
		return
	}
	if f.IPv6 != nil && (!e.speaks6 || f.IPv6.Dst() != e.cfg.IP6) || f.IPv4 != nil && (!e.speaks4 || f.IPv4.Dst() != e.cfg.IP) {
		e.m.drop(DropNotForUs)
		*f = wire.Frame{}
		return
	}
	if f.Type != wire.TypeCutoffs && !e.owns(f.Homa.SenderID(), f.Homa.DstPort()) {
		e.m.drop(DropWrongShard) // another shard's RPC: never state here
		*f = wire.Frame{}
		return
	}
	if v := e.cfg.VerifyChecksum; v == VerifyAll || v == VerifyHijacked && f.Hijacked {
		if !e.checksumOK(f) {
			e.m.drop(DropCause(wire.DropBadHomaChecksum))
			*f = wire.Frame{}
			return
		}
	}
	e.m.PacketsRcvd[f.Type-wire.TypeData]++
	switch f.Type {
	case wire.TypeData:
		e.handleData(f)
	case wire.TypeGrant:
		e.handleGrant(f)
	case wire.TypeResend:
		e.handleResend(f)
	case wire.TypeRPCUnknown:
		e.handleRPCUnknown(f)
	case wire.TypeBusy:
		e.handleBusy(f)
	case wire.TypeCutoffs:
		e.handleCutoffs(f)
	case wire.TypeNeedAck:
		e.handleNeedAck(f)
	case wire.TypeAck:
		e.handleAck(f)
	case wire.TypeFreeze:
		// Debugging only: counted above, no action.
	}
	*f = wire.Frame{}
}

// checksumOK reports whether f's Homa checksum is right. A split frame's
// Homa header ends where its payload (f.Payload, the second piece)
// begins; otherwise the payload follows the header in f.Homa.
func (e *Endpoint) checksumOK(f *wire.Frame) bool {
	homa, tail := []byte(f.Homa), f.Payload
	if len(f.Payload) > 0 && len(homa) > 0 && &homa[len(homa)-1] == &f.Payload[len(f.Payload)-1] {
		tail = nil // one piece: the payload is the end of f.Homa
	}
	var p uint16
	if f.IPv6 != nil {
		p = wire.PseudoSumIPv6(f.IPv6.Src(), f.IPv6.Dst(), wire.IPProtoTCP, len(homa)+len(tail))
	} else {
		p = wire.PseudoSumIPv4(f.IPv4.Src(), f.IPv4.Dst(), wire.IPProtoTCP, len(homa)+len(tail))
	}
	return wire.IsHomaChecksumValid(p, homa, tail)
}

// maybeICMPv6 handles a valid IPv6 packet that is not Homa if it is an
// ICMPv6 destination unreachable, and reports whether it was.
func (e *Endpoint) maybeICMPv6(l *wire.Link) bool {
	ip, proto, off, r := wire.ParseIPv6(l.Payload)
	if r != wire.DropNone || proto != wire.IPProtoICMPv6 {
		return false
	}
	m := wire.ParseICMPv6(ip, off)
	if m == nil || m.Type() != wire.ICMPv6DestUnreachable {
		return false
	}
	e.ReceiveICMPv6(ip, off)
	return true
}

// maybeICMP handles a valid IPv4 packet that is not Homa (ParseHomaIPv4
// said DropNotHoma) if it is ICMP, and reports whether it was.
func (e *Endpoint) maybeICMP(l *wire.Link) bool {
	ip := wire.IPv4(l.Payload)
	ip = ip[:ip.TotalLength()]
	switch {
	case ip.Protocol() != wire.IPProtoICMP:
		return false
	case ip.Dst() != e.cfg.IP:
		e.m.drop(DropNotForUs)
	default:
		e.receiveICMP(ip)
	}
	return true
}
