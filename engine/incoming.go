package engine

import (
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// inMsg is the incoming message of an RPC (a client's response, a
// server's request) being reassembled. Owned by the endpoint.
type inMsg struct {
	length int // bytes; 0 until the first DATA arrives
	// buf is the message, length bytes, once committed (see recvbuf.go):
	// from the port's RecvBuf, or from the heap when heap is set; handed
	// to the application when complete. nil before: the bytes are in
	// stage, chunks by offset / stageChunkSize (nil until the first).
	buf     []byte
	heap    bool
	stage   []*stageChunk
	recvEnd int   // bytes: one past the highest byte received
	gaps    []gap // missing ranges below recvEnd, in order; at most Config.MaxGaps

	// g is the grant scheduler's view: Length, Received (bytes accepted),
	// Granted (starts at unsched). In the scheduler
	// only while the message needs grants.
	g sched.GrantMsg

	// unsched is what the sender sends unscheduled: the first incoming
	// field, believed up to Config.UnschedBytes in whole packets (all of
	// it when the RPC is upstream). awaitsGrants: that field was above 0
	// and below the length, so the sender runs the full protocol and
	// sends the rest only when granted (awaitsWithheldGrants).
	unsched      int
	awaitsGrants bool

	// grantOwed: the GRANT for g.Granted could not be sent; the RPC is in
	// the endpoint's owedGrants and Run sends it.
	grantOwed bool
	// copySeq is the Copier's number of the last copy into buf it took
	// (0: none): the message is delivered once the copier is past it.
	copySeq uint64
	// lapseMark is the offset g.Granted had at tick lapseTick, when every
	// byte granted before had arrived; the message lapses if they have
	// not all arrived GrantLapseTicks later. lapsed: it has, and is out
	// of the grants until they do; waitsTurn: it is out of the grants
	// while another message of its peer, which takes turns, is in them
	// (lapse.go).
	lapseMark int
	lapseTick uint64
	lapseFrom int
	lapsed    bool
	waitsTurn bool
}

// gap is a missing byte range [start, end) of an incoming message.
type gap struct{ start, end int }

// handleData accepts one DATA packet: creates the server RPC for a new
// request, reassembles, grants, and delivers complete messages.
func (e *Endpoint) handleData(f *wire.Frame) {
	d := wire.Data(f.Homa)
	p := e.peerFromFrame(f)
	if p == nil {
		return
	}
	if a := d.Ack(); a.ClientID() != 0 {
		e.ackRPC(p, a.ClientID(), a.ServerPort())
	}
	r := e.lookup(f)
	if r == nil {
		if wire.IsClientID(wire.LocalID(d.Common().SenderID())) {
			e.unknown() // a response for an RPC we ended
			return
		}
		if r = e.newServerRPC(f, p); r == nil {
			return
		}
	}
	e.heardFrom(r)
	e.noteRxPriority(f, r)
	switch {
	case r.client && samePorts(r, d.Common()):
		// Our RPC, by its id: what the response says of its sender is
		// evidence, as nothing a stranger sends is (variant.go).
		e.noteAllowance(p, d)
		if r.in.length == 0 {
			e.noteVariant(r, d.Incoming() == 0) // the full protocol always says how far it will send
		}
	case !r.client && samePorts(r, d.Common()):
		e.noteRequestAllowance(r, d)
	}
	if d.CutoffVersion() != e.cutoffVersion && !r.upstream {
		e.maybeSendCutoffs(r)
	}
	switch {
	case r.client && r.state == stateOutgoing:
		r.state = stateIncoming // the server has the request: it is answering
		e.sendq.Remove(&r.out.sq)
		e.stopWaiting(r)
	case r.state != stateIncoming:
		e.m.drop(DropStale) // retransmitted request bytes; the request is complete
		return
	}
	in := &r.in
	if in.length == 0 && !e.startIn(r, d) {
		return
	}
	if int(d.MessageLength()) != in.length {
		e.m.drop(DropBadLength)
		return
	}
	offset, payload := d.Offset(), f.Payload // Payload: also a split frame's second piece (wire.Link.Tail)
	if !e.placeSegment(r, int(offset), payload) {
		return
	}
	// The sender's incoming field is believed up to its unscheduled
	// bytes, or the end of this packet (a whole packet goes once its
	// first byte is granted): never further than bytes that came.
	if inc := min(int(d.Incoming()), in.length, max(e.unschedLimit, int(offset)+len(payload))); inc > in.g.Granted {
		in.g.Granted = inc
	}
	if r.upstream {
		in.g.Granted = in.length // it sends the whole message unscheduled, and takes no GRANT
	}
	e.updateIncast(r)
	if in.g.Received == in.length {
		e.complete(r)
		return
	}
	if in.lapsed {
		e.resumeLapsed(r)
	}
	e.grants.Update(&in.g)
	e.scheduleGrants()
}

// newServerRPC creates the server RPC for a request's first DATA, or
// answers ICMP port unreachable and returns nil. A request beyond
// Config.MaxServerRPCsPerPeer or MaxServerRPCs is dropped and counted,
// unanswered: its client's RESEND finds no RPC and is answered
// RPC_UNKNOWN, so the client restarts it later (an answer now, such as
// BUSY, would tell the client we hold state we do not, and would answer
// spoofed sources).
func (e *Endpoint) newServerRPC(f *wire.Frame, p *peer) *rpc {
	c := f.Homa
	port := e.serverPort(c.DstPort())
	if port == nil || !port.server {
		e.m.drop(DropNoPort)
		e.sendPortUnreachable(f, p)
		return nil
	}
	d := wire.Data(c)
	if n := d.MessageLength(); n == 0 || int(n) > p.maxMessage {
		e.m.drop(DropBadLength)
		return nil
	}
	// A retransmission answers a RESEND from an RPC we have since ended,
	// and a request we acked may come back as a late duplicate: neither
	// may start (and execute) the request again.
	if d.Retransmit() != 0 || p.recentlyAcked(c.SenderID()) {
		e.m.drop(DropStale)
		return nil
	}
	switch {
	case p.serverRPCs >= e.cfg.MaxServerRPCsPerPeer:
		e.m.drop(DropPeerRPCLimit)
		return nil
	case e.numServerRPCs >= e.cfg.MaxServerRPCs && !e.evictStaleRequest(nil, false):
		e.m.drop(DropServerRPCLimit)
		return nil
	}
	r := e.newRPC()
	r.id, r.port, r.peer, r.dport, r.state = wire.LocalID(c.SenderID()), port, p, c.SrcPort(), stateIncoming
	r.upstream = e.sendsUpstream(p, d)
	p.serverRPCs++
	e.numServerRPCs++
	e.insert(r.key(), r)
	r.lastData = e.ticks
	e.pushRequest(r)
	return r
}

// serverPort returns ports[num], the port a new request names, from
// srvPort when it is that port: a port leaves ports only by Shut, which
// marks it closed first, and a number in use is not bound again, so an
// open port numbered num that ports held is still ports[num]. (Looking
// up a uint16 key, which Go's maps hash by the generic routine, was a
// thirtieth of a small RPC's cost.)
func (e *Endpoint) serverPort(num uint16) *Port {
	if p := e.srvPort; p != nil && p.num == num && !p.closed {
		return p
	}
	p := e.ports[num]
	if p != nil {
		e.srvPort = p
	}
	return p
}

// The incoming requests — server RPCs receiving their request — are
// listed by the tick of their last DATA accepted, oldest first
// (reqHead). A flood of requests that never finish (fresh ids from
// spoofed addresses, each a packet) would otherwise keep MaxServerRPCs
// and the staging pool full for TimeoutTicks at a time and shut real
// clients out: when a bound is reached, the request silent longest makes
// room, if it has been silent for ResendTicks (its client, if real,
// would be asked to resend by now, and retries). Requests the
// application holds, and responses, are never evicted.

// pushRequest adds incoming request r at the tail (the freshest).
func (e *Endpoint) pushRequest(r *rpc) {
	r.reqPrev, r.reqNext = e.reqTail, nil
	if e.reqTail != nil {
		e.reqTail.reqNext = r
	} else {
		e.reqHead = r
	}
	e.reqTail = r
	r.reqListed = true
}

// unlinkRequest takes r off the list of incoming requests.
func (e *Endpoint) unlinkRequest(r *rpc) {
	if !r.reqListed {
		return
	}
	if r.reqPrev != nil {
		r.reqPrev.reqNext = r.reqNext
	} else {
		e.reqHead = r.reqNext
	}
	if r.reqNext != nil {
		r.reqNext.reqPrev = r.reqPrev
	} else {
		e.reqTail = r.reqPrev
	}
	r.reqPrev, r.reqNext, r.reqListed = nil, nil, false
}

// requestData notes that request r accepted a DATA packet now.
func (e *Endpoint) requestData(r *rpc) {
	if r.lastData == e.ticks && e.reqTail == r {
		return
	}
	r.lastData = e.ticks
	e.unlinkRequest(r)
	e.pushRequest(r)
	e.heldData(r)
}

// evictStaleRequest ends the incoming request silent longest, other than
// keep, if it has been silent for ResendTicks; staged asks for one whose
// message is staged (to free staging chunks), among the eight oldest. It
// reports whether it ended one (counted in RequestsEvicted).
func (e *Endpoint) evictStaleRequest(keep *rpc, staged bool) bool {
	n := 0
	for r := e.reqHead; r != nil && n < 8; r = r.reqNext {
		if e.ticks-r.lastData < uint64(e.cfg.ResendTicks) {
			return false // the rest are fresher
		}
		if r == keep || staged && r.in.stage == nil {
			n++
			continue
		}
		e.m.RequestsEvicted++
		e.end(r)
		return true
	}
	return false
}

// startIn sets up reassembly from the first DATA of a message. No memory
// is committed yet (see recvbuf.go).
func (e *Endpoint) startIn(r *rpc, d wire.Data) bool {
	n := int(d.MessageLength())
	if n == 0 || n > r.peer.maxMessage {
		e.m.drop(DropBadLength)
		return false
	}
	in := &r.in
	in.length = n
	in.unsched = min(int(d.Incoming()), n, e.unschedLimit)
	in.awaitsGrants = d.Incoming() != 0 && int(d.Incoming()) < n
	if r.upstream {
		in.unsched = n
	}
	// Zeroed in place, then filled: a composite literal is built in a
	// temporary by narrow stores and copied by wide loads that stall on
	// them (store forwarding fails), a thirtieth of a small RPC's cost.
	g := &in.g
	*g = sched.GrantMsg{}
	g.Length, g.Granted, g.Unsched, g.Owner = n, in.unsched, in.unsched, r
	in.lapsed, in.waitsTurn = false, false
	e.sizes.Record(n)
	if in.g.Granted < n {
		e.joinGrants(r)
	}
	return true
}

// placeSegment takes payload, the message bytes at offset, into r's
// incoming message: the packet with which enough bytes have arrived
// (commitsAt) commits the message first, earlier ones are staged (see
// recvbuf.go). It drops
// (and counts) what locateSegment refuses and what finds no memory, and
// reports whether the packet was accepted; false may mean that r ended.
func (e *Endpoint) placeSegment(r *rpc, offset int, payload []byte) bool {
	in := &r.in
	end := offset + len(payload)
	if end > in.length || len(payload) == 0 {
		e.m.drop(DropPastEnd)
		return false
	}
	place, cause := e.locateSegment(in, offset, end)
	if cause != 0 {
		e.m.drop(cause)
		return false
	}
	if in.buf == nil {
		if got := in.g.Received + len(payload); e.commitsAt(r.port, in.length, got) {
			if !e.commit(r) {
				return false
			}
			if r.reqListed && got < in.length { // a request that holds its buffer until whole
				e.noteHeld(r, heldSize(r.port, in.length))
			}
		} else if !e.stageRoom(r, offset, end) {
			return false
		}
	}
	in.addSegment(place, offset, end)
	if in.buf != nil {
		e.copyIn(in, in.buf[offset:end], payload)
	} else {
		stageCopy(in, offset, payload)
	}
	in.g.Received += len(payload)
	if r.reqListed {
		e.requestData(r)
	}
	return true
}

// segPlace is where a segment goes in an incoming message's bytes: at
// or past recvEnd (gap: opening a gap before it), or into gaps[i],
// taking all of it, its start, its end, or its middle (split).
type segPlace struct {
	kind uint8
	i    int
}

const (
	segAppend uint8 = iota
	segAppendGap
	segFillAll
	segFillStart
	segFillEnd
	segSplit
)

// locateSegment finds where [offset, end) (inside the message) goes in
// in, or why it is refused: a duplicate, an overlap of received and
// missing bytes, or one gap too many (Config.MaxGaps; the sender's
// RESEND logic brings it again once earlier gaps are filled). The gaps
// are in order and at most MaxGaps, so finding the gap is a binary
// search.
func (e *Endpoint) locateSegment(in *inMsg, offset, end int) (segPlace, DropCause) {
	if offset >= in.recvEnd {
		switch {
		case offset == in.recvEnd:
			return segPlace{kind: segAppend}, 0
		case len(in.gaps) >= e.cfg.MaxGaps:
			return segPlace{}, DropTooManyGaps
		}
		return segPlace{kind: segAppendGap}, 0
	}
	// The first gap that ends after offset.
	lo, hi := 0, len(in.gaps)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if in.gaps[mid].end <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(in.gaps) || end <= in.gaps[lo].start {
		return segPlace{}, DropDuplicate // all received already
	}
	g := in.gaps[lo]
	switch {
	case offset < g.start || end > g.end:
		return segPlace{}, DropOverlap // covers received and missing bytes at once
	case offset == g.start && end == g.end:
		return segPlace{segFillAll, lo}, 0
	case offset == g.start:
		return segPlace{segFillStart, lo}, 0
	case end == g.end:
		return segPlace{segFillEnd, lo}, 0
	case len(in.gaps) >= e.cfg.MaxGaps:
		return segPlace{}, DropTooManyGaps // splitting the gap would make one too many
	}
	return segPlace{segSplit, lo}, 0
}

// addSegment records that in now holds [offset, end), placed by
// locateSegment.
func (in *inMsg) addSegment(p segPlace, offset, end int) {
	switch p.kind {
	case segAppendGap:
		in.gaps = append(in.gaps, gap{in.recvEnd, offset})
		in.recvEnd = end
	case segAppend:
		in.recvEnd = end
	case segFillAll:
		in.gaps = append(in.gaps[:p.i], in.gaps[p.i+1:]...)
	case segFillStart:
		in.gaps[p.i].start = end
	case segFillEnd:
		in.gaps[p.i].end = offset
	case segSplit:
		tail := gap{end, in.gaps[p.i].end}
		in.gaps[p.i].end = offset
		in.gaps = append(in.gaps, gap{})
		copy(in.gaps[p.i+2:], in.gaps[p.i+1:])
		in.gaps[p.i+1] = tail
	}
}

// updateIncast keeps r's share of the expected unscheduled backlog equal
// to the unscheduled bytes of its incoming message still to come.
func (e *Endpoint) updateIncast(r *rpc) {
	in := &r.in
	want := 0
	if in.g.Received < in.unsched {
		want = in.unsched - in.g.Received
	}
	e.incast.Add(want - r.incastBytes)
	r.incastBytes = want
}

// complete delivers r's whole incoming message.
func (e *Endpoint) complete(r *rpc) {
	in := &r.in
	e.leaveGrants(r)
	e.incast.Add(-r.incastBytes)
	r.incastBytes = 0
	m := Message{ID: r.id, Peer: Addr{IP: r.peer.ip, Port: r.dport}, Data: in.buf}
	seq := in.copySeq // its bytes are in buf once the copier is past it
	e.delivered(in)
	in.gaps = nil
	e.m.MessageSizes.record(&MessageSizeBounds, int64(in.length))
	if r.client {
		e.m.ResponsesReceived++
		e.m.RoundTrips.record(&RoundTripBoundsNs, e.now-r.startNs)
		e.end(r)
		e.addAck(r)
		e.deliverCopied(r.port, m, r.private, seq)
	} else {
		e.m.RequestsReceived++
		e.unlinkRequest(r)
		e.unlinkHeld(r)
		r.state = stateInService
		m.Request = true
		e.deliverCopied(r.port, m, false, seq)
	}
	e.scheduleGrants() // room under MaxIncoming may have opened
}

// handleBusy: the peer is alive and working on r (no progress, though,
// where r awaitsWithheldGrants: variant.go).
func (e *Endpoint) handleBusy(f *wire.Frame) {
	r := e.lookup(f)
	if r == nil {
		e.unknown()
		return
	}
	if r.awaitsWithheldGrants() {
		e.heardWithoutProgress(r) // one end waits for grants the other withholds
	} else {
		e.heardFrom(r)
	}
	if in := &r.in; r.state == stateIncoming && in.length != 0 && in.recvEnd < in.g.Granted && in.g.Granted > in.unsched {
		// Alive, but not sending bytes we granted: our GRANT may have
		// been lost, and a RESEND is no grant. Repeat it.
		e.sendGrant(r, in.g.Granted, in.g.Priority)
	}
}

// handleCutoffs records the peer's unscheduled cutoffs.
func (e *Endpoint) handleCutoffs(f *wire.Frame) {
	c := wire.Cutoffs(f.Homa)
	p := e.peerFromFrame(f)
	if p == nil {
		return
	}
	for i := 1; i < wire.NumPriorities; i++ {
		p.cutoffs[i] = c.Cutoff(i)
	}
	p.cutoffs[0] = 0 // entry 0 is ignored: Priority falls back to 0
	p.cutoffVersion = c.Version()
}

// maybeSendCutoffs sends our cutoffs to r's peer, which used another
// version, at most once per tick.
func (e *Endpoint) maybeSendCutoffs(r *rpc) {
	p := r.peer
	if p.cutoffsSentVersion == e.cutoffVersion && p.cutoffsSentTick == e.ticks {
		return
	}
	buf := e.startControl(p)
	if buf == nil {
		return // the peer's next DATA asks again
	}
	p.cutoffsSentVersion, p.cutoffsSentTick = e.cutoffVersion, e.ticks
	f := wire.CutoffsFields{Common: r.common(), Version: e.cutoffVersion}
	for i := range f.Cutoffs {
		f.Cutoffs[i] = e.cfg.Cutoffs[i]
	}
	n := f.Encode(buf[p.homaOff:])
	e.finishFrame(buf, p, controlPriority, n, wire.TypeCutoffs)
}

// handleRPCUnknown: the peer has no state for r. A client whose response
// has not started resends its request from the start (the server lost or
// never saw it). One whose response has started fails with
// ErrPeerRestarted, but only once it has been asking for the rest: silent
// for ResendTicks, so that its RESEND went out and nothing came back but
// this. An RPC_UNKNOWN that reaches it while response bytes still flow
// answered an older packet (a RESEND that overtook the request on a
// higher priority, say) and is ignored (StaleUnknowns); a server that has
// truly lost the RPC answers the next RESEND with RPC_UNKNOWN again. A
// server drops the RPC (the client has forgotten it, e.g. it restarted).
//
// RPC_UNKNOWN is no sign of progress, so it does not reset the client's
// silence, and restarts are bounded: at most one per ResendInterval
// ticks (an RPC_UNKNOWN sooner answers the packets of the last restart,
// counted in RPCRestartsLimited), and Config.MaxRestarts in all, after
// which the next RPC_UNKNOWN fails the RPC with ErrTimeout
// (RPCRestartsExhausted). A server that always answers RPC_UNKNOWN (its
// pool full, or the request's id one it remembers as acked) leaves the
// RPC silent, so it times out after TimeoutTicks; one that answers BUSY
// or GRANT in between exhausts its restarts.
func (e *Endpoint) handleRPCUnknown(f *wire.Frame) {
	r := e.lookup(f)
	if r == nil {
		e.unknown()
		return
	}
	switch {
	case !r.client:
		e.m.ServerRPCDiscards++
		e.end(r)
	case r.in.length != 0 && r.silentTicks < e.cfg.ResendTicks:
		e.m.StaleUnknowns++
	case r.in.length != 0:
		e.fail(r, ErrPeerRestarted)
	case r.restarts > 0 && e.ticks-r.lastRestart < uint64(e.cfg.ResendInterval):
		e.m.RPCRestartsLimited++
	case r.restarts >= e.cfg.MaxRestarts:
		e.m.RPCRestartsExhausted++
		e.timeout(r)
	default:
		r.restarts++
		r.lastRestart = e.ticks
		e.m.RPCRestarts++
		e.restart(r)
	}
}

// restart resends a client's request from byte 0 at its unscheduled
// priority, as kernel Homa does after RPC_UNKNOWN. The packets are not
// marked as retransmissions: they start the request anew at the server.
func (e *Endpoint) restart(r *rpc) {
	o := &r.out
	r.state = stateOutgoing
	if !r.peer.reachable() {
		o.next = 0 // all of it waits (or fails) as new bytes
		e.xmitReady(r)
		return
	}
	for off := 0; off < o.next; {
		n := e.xmitData(r, off, o.next, o.dataPriority(off), false)
		if n == 0 {
			break
		}
		off += n
	}
	e.xmitReady(r)
}
