package engine

import (
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Frame layout the engine writes: untagged Ethernet, a 20-byte IPv4
// header, then Homa.
const (
	frameIPOffset   = wire.EthernetHeaderLen
	frameHomaOffset = frameIPOffset + wire.IPv4MinHeaderLen

	// controlPriority is the priority of every control packet
	// (docs/wire.md#priorities).
	controlPriority = wire.NumPriorities - 1
)

// outMsg is the outgoing message of an RPC (the request of a client RPC,
// the response of a server RPC). Owned by the endpoint.
type outMsg struct {
	data    []byte     // the message; the application must not change it until the RPC ends
	ref     PayloadRef // SendRef/ReplyRef: the owner's reference for a DataSender (0: none)
	length  int        // bytes; 0 while the RPC has no outgoing message
	unsched int        // bytes sent without grants (the first DATA's incoming)
	granted int        // bytes: offset up to which we may send
	next    int        // bytes: offset of the next byte never sent

	unschedPrio int // priority of bytes below unsched (the peer's cutoffs)
	schedPrio   int // priority of granted bytes, from the last GRANT

	sq sched.SendMsg // place in the endpoint's SenderQueue while deferred

	// resendLeft is how many more bytes RESENDs may make us retransmit
	// in the ResendInterval that began at the endpoint's tick
	// resendTick − 1 (0: none began yet).
	resendLeft int
	resendTick uint64

	// txMark is, by priority (Send's queue), the endpoint's txSent
	// count just after this message's last DATA frame at that priority:
	// while TxProgress.TxDone is below it, a frame of the message still
	// waits in the host's transmit queue (dataQueued). 0: none sent.
	txMark [wire.NumPriorities]uint64
}

// send passes frame to the transmit side at queue (0..7), counted in
// txSent.
func (e *Endpoint) send(frame []byte, queue int) {
	e.txSent[queue&(wire.NumPriorities-1)]++
	e.tx.Send(frame, queue)
}

// dataQueued reports whether a DATA frame of o still waits in the host's
// transmit queues, as far as the transmit side tells (TxProgress; false
// when it does not).
func (e *Endpoint) dataQueued(o *outMsg) bool {
	if e.txProg == nil {
		return false
	}
	for q, mark := range o.txMark {
		if mark != 0 && e.txProg.TxDone(q) < mark {
			return true
		}
	}
	return false
}

// startControl borrows a transmit buffer for a control packet to p that
// is lost if it cannot go now (timers recover it): nil, counted, when p's
// link address is not resolved (DropTxUnresolved) or no buffer is lent
// (DropNoBuffer).
func (e *Endpoint) startControl(p *peer) []byte {
	if !p.reachable() {
		e.m.drop(DropTxUnresolved)
		return nil
	}
	return e.startFrame()
}

// startFrame borrows a transmit buffer for a packet that is lost if it
// cannot go now (timers recover it), or counts DropNoBuffer and returns
// nil.
func (e *Endpoint) startFrame() []byte {
	b := e.borrow()
	if b == nil {
		e.m.drop(DropNoBuffer)
	}
	return b
}

// startKept borrows a transmit buffer for a packet the engine keeps when
// it cannot go now (DATA stays queued, a GRANT is owed), or counts
// TxDeferred and returns nil.
func (e *Endpoint) startKept() []byte {
	b := e.borrow()
	if b == nil {
		e.m.TxDeferred++
	}
	return b
}

// borrow returns the Transmitter's buffer, or nil if it lent none big
// enough.
func (e *Endpoint) borrow() []byte {
	if b := e.tx.Buffer(); len(b) >= e.maxHomaOff+wire.MaxHeaderLen {
		return b
	}
	return nil
}

// finishFrame writes the Ethernet and IPv4 headers in front of homaLen
// bytes of Homa packet of type t already in buf, and sends it at prio.
func (e *Endpoint) finishFrame(buf []byte, p *peer, prio, homaLen int, t wire.PacketType) {
	e.finishFrameQueue(buf, p, prio, prio, homaLen, t)
}

// finishFrameQueue is finishFrame with the frame's IPv4 priority (prio)
// and the one it is passed to the Transmitter at (queue) apart.
func (e *Endpoint) finishFrameQueue(buf []byte, p *peer, prio, queue, homaLen int, t wire.PacketType) {
	e.finishHeaders(buf, p, prio, buf[p.homaOff:p.homaOff+homaLen], nil)
	e.m.PacketsSent[t-wire.TypeData]++
	e.send(buf[:p.homaOff+homaLen], queue)
}

// writeHeaders writes the Ethernet and IP headers for homaLen bytes of
// Homa packet to p at prio: p's template (made again when the neighbour
// entry's MAC is no longer the one it was made for) with the fields that
// differ between frames written into it — the priority (TOS or traffic
// class, and the 802.1Q PCP when tagged), the length, the IPv4 id — and
// the IPv4 checksum from the template's sum and theirs. (Encoding the
// headers field by field from their structs was a tenth of a small RPC's
// cost.)
func (e *Endpoint) writeHeaders(buf []byte, p *peer, prio, homaLen int) {
	if !p.hdrOK || p.hdrMAC != p.neigh.MAC {
		e.makeHeaders(p)
	}
	copy(buf[:p.homaOff], p.hdr[:p.homaOff])
	if e.cfg.PCP {
		wire.VLAN(buf[wire.EthernetHeaderLen:]).SetTCI(wire.MakeTCI(uint8(prio), false, e.cfg.VLAN))
	}
	if p.v6 {
		ip := wire.IPv6(buf[e.ipOff:p.homaOff])
		ip.SetTrafficClass(wire.TOSFromPriority(uint8(prio)))
		ip.SetPayloadLength(uint16(homaLen))
		return
	}
	ip := wire.IPv4(buf[e.ipOff:p.homaOff])
	tos := wire.TOSFromPriority(uint8(prio))
	total := uint16(wire.IPv4MinHeaderLen + homaLen)
	e.ipID++
	ip.SetTOS(tos)
	ip.SetTotalLength(total)
	ip.SetID(e.ipID)
	if !e.cfg.IPChecksumOffload {
		s := uint32(p.hdrSum) + uint32(tos) + uint32(total) + uint32(e.ipID)
		s = s&0xffff + s>>16
		s = s&0xffff + s>>16
		ip.SetChecksum(^uint16(s))
	}
}

// finishHeaders writes the link and IP headers of a packet to p at prio
// (writeHeaders) whose Homa header and first bytes are homa (in buf) and
// whose other bytes are tail (a payload sent apart, or nil), and finishes
// the Homa header: the upstream subset's zeroed flags and urgent
// (Config.Upstream), the Homa checksum when p gets one.
func (e *Endpoint) finishHeaders(buf []byte, p *peer, prio int, homa, tail []byte) {
	e.writeHeaders(buf, p, prio, len(homa)+len(tail))
	c := wire.Common(homa)
	if e.cfg.Upstream {
		c.SetFlags(0)
		c.SetUrgent(0)
	}
	if p.csum {
		n := uint32(p.pseudo) + uint32(len(homa)+len(tail))
		n = n&0xffff + n>>16
		n = n&0xffff + n>>16
		c.SetChecksum(wire.HomaChecksum(uint16(n), homa, tail))
	}
}

// makeHeaders makes p's header template (see writeHeaders): IPv4 or IPv6,
// protocol (next header) 146, or 6 (TCP) for a peer sent TCP-hijacked
// framing.
func (e *Endpoint) makeHeaders(p *peer) {
	eth := e.ethernet(p, 0)
	eth.Encode(p.hdr[:])
	proto := uint8(wire.IPProtoHoma)
	if p.hijack {
		proto = wire.IPProtoTCP
	}
	if p.v6 {
		ip := wire.HomaIPv6Fields(e.cfg.IP6, p.addr, 0, 0)
		ip.NextHeader = proto
		ip.Encode(p.hdr[e.ipOff:])
	} else {
		ip := wire.HomaIPv4Fields(e.cfg.IP, p.v4, 0, 0)
		ip.TotalLength, ip.NoChecksum, ip.Protocol = 0, true, proto
		ip.Encode(p.hdr[e.ipOff:])
		p.hdrSum = wire.Checksum(p.hdr[e.ipOff:p.homaOff], 0)
	}
	p.hdrMAC, p.hdrOK = p.neigh.MAC, true
}

// sendControl sends a header-only packet (RPC_UNKNOWN, BUSY, NEED_ACK) to
// p with the given common fields.
func (e *Endpoint) sendControl(p *peer, t wire.PacketType, c wire.CommonFields) {
	buf := e.startControl(p)
	if buf == nil {
		return
	}
	f := wire.ControlFields{Type: t, Common: c}
	n := f.Encode(buf[p.homaOff:])
	e.finishFrame(buf, p, controlPriority, n, t)
}

// common returns the common header fields of a packet of r to its peer.
func (r *rpc) common() wire.CommonFields {
	return wire.CommonFields{SrcPort: r.port.num, DstPort: r.dport, SenderID: r.id}
}

// sendGrant sends a GRANT for r's incoming message. It reports false when
// the Transmitter lent no buffer: the GRANT is then owed (see oweGrant).
// A GRANT to a peer whose link address is not resolved is dropped and
// counted (DropTxUnresolved), and repeated when the address resolves
// (regrant) or by the timer.
func (e *Endpoint) sendGrant(r *rpc, offset, prio int) bool {
	if r.upstream {
		return true // it has no GRANT: its messages come whole
	}
	if !r.peer.reachable() {
		e.m.drop(DropTxUnresolved)
		r.in.grantOwed = false
		e.lostGrant(r.peer)
		return true
	}
	buf := e.startKept()
	if buf == nil {
		e.oweGrant(r)
		return false
	}
	r.in.grantOwed = false // this GRANT carries the latest offset
	f := wire.GrantFields{Common: r.common(), Offset: uint32(offset), Priority: uint8(prio)}
	n := f.Encode(buf[r.peer.homaOff:])
	e.finishFrame(buf, r.peer, controlPriority, n, wire.TypeGrant)
	return true
}

// sendResend asks r's peer to retransmit [offset, offset+length).
func (e *Endpoint) sendResend(r *rpc, offset, length uint32, prio int) {
	buf := e.startControl(r.peer)
	if buf == nil {
		return
	}
	f := wire.ResendFields{Common: r.common(), Offset: offset, Length: length, Priority: uint8(prio), Upstream: r.upstream}
	n := f.Encode(buf[r.peer.homaOff:])
	e.finishFrame(buf, r.peer, controlPriority, n, wire.TypeResend)
}

// xmitData sends one DATA packet of r's outgoing message starting at
// offset, at most one packet's worth and never past limit, and returns
// the number of message bytes sent (0 if no buffer was lent). Packets
// start at multiples of the payload size, as the kernel's do, so a
// retransmission covers exactly what a lost packet carried.
func (e *Endpoint) xmitData(r *rpc, offset, limit, prio int, retransmit bool) int {
	buf := e.startKept()
	if buf == nil {
		return 0
	}
	o := &r.out
	n := min(r.peer.payload, limit-offset)
	// Field by field: a composite literal (with r.common()) is built in
	// a temporary by narrow stores and copied by wide loads, which
	// stall on them (store forwarding fails), and it was a twelfth of a
	// streamed DATA packet's cost.
	var f wire.DataFields
	f.Common.SrcPort, f.Common.DstPort, f.Common.SenderID = r.port.num, r.dport, r.id
	f.Common.Sequence = uint32(offset)
	f.MessageLength = uint32(o.length)
	f.Incoming = uint32(max(o.granted, offset+n))
	f.Ack = r.peer.popAck()
	f.CutoffVersion = r.peer.cutoffVersion
	f.Offset = uint32(offset)
	if retransmit {
		f.Retransmit = 1
	}
	// Our unscheduled allowance (incast control) rides in the pad bytes:
	// a request carries what was reserved for its response; other DATA
	// the current value.
	allow := r.allowance
	if !r.client {
		allow = e.incast.Allowance()
	}
	if r.peer.homaDPDK || r.extension() {
		f.Pad = sched.EncodeAllowance(allow) // never to a kernel host: the pad bytes are its to use
	}
	if e.cfg.Upstream { // what the subset does not have
		f.Incoming, f.CutoffVersion, f.Pad = 0, 0, [3]byte{}
	}
	homa := buf[r.peer.homaOff:]
	f.Encode(homa)
	payload := o.data[offset : offset+n]
	queue := prio
	if e.cfg.ScheduledDataQueue && offset >= o.unsched {
		queue = 0
	}
	if o.ref != 0 && e.dataTx != nil {
		e.finishHeaders(buf, r.peer, prio, homa[:wire.DataHeaderLen], payload)
		if e.dataTx.SendData(buf[:r.peer.homaOff+wire.DataHeaderLen], payload, o.ref, queue) {
			e.txSent[queue&(wire.NumPriorities-1)]++
			o.txMark[queue&(wire.NumPriorities-1)] = e.txSent[queue&(wire.NumPriorities-1)]
			e.m.PacketsSent[0]++ // DATA
			e.m.ZeroCopyPackets++
			e.m.DataBytesZeroCopy += uint64(n)
			e.pacer.Sent(e.now, r.peer.homaOff+wire.DataHeaderLen+n)
			return n
		}
		e.m.ZeroCopyFallbacks++
	}
	e.m.DataBytesCopied += uint64(n)
	copy(homa[wire.DataHeaderLen:], payload)
	e.finishFrameQueue(buf, r.peer, prio, queue, wire.DataHeaderLen+n, wire.TypeData)
	o.txMark[queue&(wire.NumPriorities-1)] = e.txSent[queue&(wire.NumPriorities-1)]
	e.pacer.Sent(e.now, r.peer.homaOff+wire.DataHeaderLen+n)
	return n
}

// dataPriority returns the priority for new bytes at offset of r's
// outgoing message.
func (o *outMsg) dataPriority(offset int) int {
	if offset < o.unsched {
		return o.unschedPrio
	}
	return o.schedPrio
}

// sendNext sends the next new packet of r's outgoing message and returns
// the bytes sent. A whole packet goes once its first byte is granted.
func (e *Endpoint) sendNext(r *rpc) int {
	o := &r.out
	n := e.xmitData(r, o.next, o.length, o.dataPriority(o.next), false)
	o.next += n
	return n
}

// xmitReady sends what r may send now: packets of a message with fewer
// than Config.PacerThreshold bytes left go at once; the rest wait in the
// sender queue for the pacer, which sends the shortest first.
//
// Packets to a peer whose link address is not resolved wait for it
// (awaitNeighbour), or end the RPC when it cannot resolve.
func (e *Endpoint) xmitReady(r *rpc) {
	o := &r.out
	if o.next < o.granted && !r.peer.reachable() {
		e.awaitNeighbour(r)
		return
	}
	for o.next < o.granted && o.length-o.next < e.cfg.PacerThreshold {
		if e.sendNext(r) == 0 {
			break // no transmit buffer: queue it, Run retries
		}
	}
	switch {
	case o.next >= o.granted:
		// Nothing left to send until the next grant. The message may
		// have been queued while it was longer: its last bytes just went
		// out unpaced, and a stale entry would block the queue's head.
		e.sendq.Remove(&o.sq)
	case !o.sq.Queued():
		o.sq.Remaining = o.length - o.next
		o.sq.Owner = r
		e.sendq.Add(&o.sq)
		e.m.ThrottleListAdds++
	default:
		o.sq.Remaining = o.length - o.next
		e.sendq.Update(&o.sq)
	}
	e.pump()
}

// pump sends deferred packets, shortest remaining message first with the
// FIFO share, while the pacer's NIC backlog estimate allows.
func (e *Endpoint) pump() {
	for e.sendq.Len() > 0 && e.pacer.CanSend(e.now) {
		sm := e.sendq.Next()
		r := sm.Owner.(*rpc)
		o := &r.out
		if o.next >= o.granted {
			e.sendq.Remove(sm) // sent by another path meanwhile
			continue
		}
		if !r.peer.reachable() {
			e.awaitNeighbour(r) // the entry aged out or failed since
			continue
		}
		n := e.sendNext(r)
		if n == 0 {
			return // no transmit buffer: try again on the next Run
		}
		e.sendq.Sent(sm, n)
		sm.Remaining = o.length - o.next
		if o.next >= o.granted {
			e.sendq.Remove(sm)
		} else {
			e.sendq.Update(sm)
		}
	}
}

// handleGrant: the receiver of r's outgoing message lets us send up to
// the granted offset at the given priority.
func (e *Endpoint) handleGrant(f *wire.Frame) {
	r := e.lookup(f)
	if r == nil || r.out.length == 0 {
		e.unknown()
		return
	}
	e.heardFrom(r)
	if samePorts(r, f.Homa) {
		e.noteVariant(r, false) // the subset has no GRANT
	}
	g := wire.Grant(f.Homa)
	o := &r.out
	o.schedPrio = min(int(g.Priority()), wire.NumPriorities-1)
	if off := min(int(g.Offset()), o.length); off > o.granted {
		o.granted = off
		e.xmitReady(r)
	}
}

// handleResend retransmits a range of r's outgoing message. Unknown RPC:
// RPC_UNKNOWN, or ICMP port unreachable when it names a server port no
// port is bound to (closedPortResend). Nothing to resend yet (no
// outgoing message, or the range not transmitted yet): BUSY.
//
// A RESEND is a request for bytes already sent, never a grant: it makes
// the sender transmit nothing it has not sent before (kernel Homa's
// homa_resend_pkt stops at what was transmitted too), so a RESEND naming
// a whole message moves no more than its unscheduled bytes and the
// GRANTs it had; a receiver whose GRANT was lost hears BUSY and repeats
// it (handleBusy). And retransmission is rate-limited per RPC: at most
// Config.MaxResendBytes per ResendInterval ticks, in whole packets from
// the first byte asked for; what a RESEND asks past that is not sent
// (ResendsLimited), and the receiver asks again at its next check. RPC
// ids can be guessed or seen (random starts only make it harder; see
// Config.IDSeed), so this bound is what limits what RESENDs can make an
// RPC send.
//
// A RESEND for one of our requests shows which Homa its server runs
// (noteVariant); a 36-byte one for an RPC we do not speak the subset on
// shows that the two ends disagree (mismatchResend), after which it is no
// progress.
func (e *Endpoint) handleResend(f *wire.Frame) {
	rs := wire.Resend(f.Homa)
	r := e.lookup(f)
	if r == nil {
		e.m.UnknownRPCs++
		if p := e.peerFromFrame(f); p != nil && !e.closedPortResend(f, p) {
			e.sendControl(p, wire.TypeRPCUnknown, replyCommon(f.Homa))
		}
		return
	}
	o := &r.out
	if samePorts(r, f.Homa) {
		e.noteVariant(r, !rs.HasPriority()) // only the subset's RESEND names no priority
	}
	switch {
	case r.upstream && o.length > 0 && o.granted < o.length:
		o.granted = o.length // found out mid-message: it will never grant the rest
	case !rs.HasPriority() && !r.upstream:
		e.mismatchResend(r)
	}
	if r.awaitsWithheldGrants() {
		e.heardWithoutProgress(r) // a RESEND is no grant, and it will send none
	} else {
		e.heardFrom(r)
	}
	if o.length == 0 {
		e.m.ResendsBusy++
		e.sendControl(r.peer, wire.TypeBusy, r.common())
		return
	}
	start, end := int(rs.Offset()), o.next
	if rs.Length() != wire.ResendAll {
		end = min(int(rs.Offset())+int(rs.Length()), o.next)
	}
	prio := min(int(rs.Priority()), wire.NumPriorities-1)
	if !rs.HasPriority() {
		prio = o.dataPriority(start) // the upstream subset's RESEND names none: as first sent
	}
	if !r.peer.reachable() {
		// The peer hears us again once its address resolves: the
		// retransmission is dropped.
		e.m.drop(DropTxUnresolved)
		e.xmitReady(r)
		return
	}
	if start >= o.next || e.dataQueued(o) {
		// Not sent yet: it will be when the pacer allows. Or sent, but a
		// frame of the message still waits in our transmit queues (behind
		// higher priorities): the silence is ours, nothing was lost that
		// we can tell, and a copy would wait behind it.
		e.m.ResendsBusy++
		if start < o.next {
			e.m.ResendsQueued++
		}
		e.sendControl(r.peer, wire.TypeBusy, r.common())
		e.xmitReady(r)
		return
	}
	if o.resendTick == 0 || e.ticks+1-o.resendTick >= uint64(e.cfg.ResendInterval) {
		o.resendTick, o.resendLeft = e.ticks+1, e.cfg.MaxResendBytes
	}
	// Whole packets, as first sent, cover the range.
	for off := start; off < end; {
		if o.resendLeft <= 0 {
			e.m.ResendsLimited++
			break
		}
		n := e.xmitData(r, off, o.next, prio, true)
		if n == 0 {
			break
		}
		e.m.ResentPackets++
		e.m.ResentBytes += uint64(n)
		o.resendLeft -= n
		off += n
	}
	e.xmitReady(r)
}

// closedPortResend answers f, a RESEND for an RPC we have no state for,
// with ICMP port unreachable when the server port it names is bound to no
// port (its server closed: Port.Shut, or it never was), and reports
// whether it did (ClosedPortResends). RPC_UNKNOWN would tell the client
// we restarted (ErrPeerRestarted once its response has started); the
// client of a closed port learns that instead (ErrPortUnreachable), as
// its restarted request would. A client port's RESEND (a server asking
// for request bytes) is answered RPC_UNKNOWN as before.
func (e *Endpoint) closedPortResend(f *wire.Frame, p *peer) bool {
	port := f.Homa.DstPort()
	if port == 0 || port >= clientPortMin || e.ports[port] != nil {
		return false
	}
	e.m.ClosedPortResends++
	e.sendPortUnreachable(f, p)
	return true
}

// replyCommon returns common fields answering packet c for an RPC we have
// no state for: ports swapped, our id for it.
func replyCommon(c wire.Common) wire.CommonFields {
	return wire.CommonFields{SrcPort: c.DstPort(), DstPort: c.SrcPort(), SenderID: wire.LocalID(c.SenderID())}
}

// ethernet returns the Ethernet header of a frame to p at priority prio:
// to the MAC p's neighbour entry holds now (the caller checked that it is
// reachable), untagged, or with an 802.1Q tag carrying the priority in its
// PCP when Config.PCP is set (the IPv4 TOS carries it too, either way).
func (e *Endpoint) ethernet(p *peer, prio int) wire.EthernetFields {
	t := uint16(wire.EtherTypeIPv4)
	if p.v6 {
		t = wire.EtherTypeIPv6
	}
	return wire.EthernetFields{
		Dst: p.neigh.MAC, Src: e.cfg.MAC, Type: t,
		Tagged: e.cfg.PCP, TCI: wire.MakeTCI(uint8(prio), false, e.cfg.VLAN),
	}
}
