package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// scheduleGrants asks the grant scheduler what to grant now (SRPT within
// MaxIncoming, the dynamic window, the FIFO share; see package sched) and
// sends the GRANTs.
func (e *Endpoint) scheduleGrants() {
	if e.batch { // EndBatch decides for the whole batch
		e.grantsDue = true
		return
	}
	for _, g := range e.grants.Schedule() {
		r := g.Msg.Owner.(*rpc)
		e.sendGrant(r, g.Offset, g.Priority)
	}
}

// oweGrant records that r's latest grant could not be sent (the
// Transmitter lent no buffer). The scheduler has counted it as given, so
// nothing would grant those bytes again and the sender would wait for
// RESEND; Run sends the owed GRANT as soon as a buffer is lent.
func (e *Endpoint) oweGrant(r *rpc) {
	if !r.in.grantOwed {
		r.in.grantOwed = true
		e.owedGrants = append(e.owedGrants, r)
	}
}

// sendOwedGrants sends the GRANTs owed, in the order they were owed, until
// the Transmitter refuses again.
func (e *Endpoint) sendOwedGrants() {
	i := 0
	for ; i < len(e.owedGrants); i++ {
		r := e.owedGrants[i]
		if !r.in.grantOwed {
			continue // a later GRANT went out
		}
		if r.state != stateIncoming {
			r.in.grantOwed = false // complete or ended: nothing to grant
			continue
		}
		if !e.sendGrant(r, r.in.g.Granted, r.in.g.Priority) {
			break
		}
	}
	n := copy(e.owedGrants, e.owedGrants[i:])
	clear(e.owedGrants[n:])
	e.owedGrants = e.owedGrants[:n]
}

// grantKeepalive repeats r's granted offset when we have received every
// granted byte and chose not to grant more: the sender then knows we are
// alive and does not time the RPC out while others are served first.
func (e *Endpoint) grantKeepalive(r *rpc) {
	e.m.GrantKeepalives++
	e.sendGrant(r, r.in.g.Granted, r.in.g.Priority)
}

// requestRetransmit asks r's peer for the bytes of r's incoming message
// that are missing: each gap, then the granted bytes past the highest
// received, at most Config.MaxResendsPerRPC ranges, the lowest first (the
// rest wait for the next check, counted in ResendsDeferred). A RESEND is
// no grant: when granted bytes never came because our GRANT was lost,
// the sender answers BUSY and handleBusy repeats the GRANT. Before any
// byte of a response arrived, it asks for the first packet at the top
// priority (the answer is data, BUSY or RPC_UNKNOWN).
func (e *Endpoint) requestRetransmit(r *rpc) {
	in := &r.in
	if in.length == 0 {
		n := uint32(wire.ResendAll)
		if e.cfg.MessagePriorityResends {
			n = uint32(r.peer.payload)
		}
		e.sendResend(r, 0, n, wire.NumPriorities-1)
		return
	}
	prio := wire.NumPriorities - 1 // kernel Homa's
	if e.cfg.MessagePriorityResends {
		prio = e.resendPriority(r)
	}
	budget := e.cfg.MaxResendsPerRPC
	for i, g := range in.gaps {
		if budget == 0 {
			e.m.ResendsDeferred += uint64(len(in.gaps) - i)
			if in.recvEnd < in.g.Granted {
				e.m.ResendsDeferred++
			}
			return
		}
		budget--
		e.sendResend(r, uint32(g.start), uint32(g.end-g.start), prio)
	}
	if in.recvEnd < in.g.Granted {
		if budget == 0 {
			e.m.ResendsDeferred++
			return
		}
		e.sendResend(r, uint32(in.recvEnd), uint32(in.g.Granted-in.recvEnd), prio)

	}
}

// resendPriority is the priority retransmitted bytes of r's incoming
// message should use: its scheduled priority once granted, else its
// unscheduled priority under our cutoffs.
func (e *Endpoint) resendPriority(r *rpc) int {
	if r.in.g.Granted > r.in.unsched {
		return r.in.g.Priority
	}
	return e.cfg.Cutoffs.Priority(r.in.length)
}

// evictStarving ends, while the port's shards are out of grant room
// (sched PortStarved), this shard's stalest request silent for
// ResendTicks that holds grants past its unscheduled bytes and never sent
// a granted byte, among the eight oldest: a claim that never sends holds
// the port's MaxIncoming until it lapses (GrantLapseTicks), and a shard
// that is never short of server RPCs would never evict it
// (evictStaleRequest), while another shard's requests starve. One a tick.
// One that sent granted bytes is a sender waiting for its losses to be
// asked again: ending it made its client send the whole request again
// (TestShards_lossyLongRequestsNotEvicted); gone silent, it keeps its RPC
// until it times out, as on one endpoint, having paid with real bytes,
// and its grants until it lapses.
func (e *Endpoint) evictStarving() {
	n := 0
	for r := e.reqHead; r != nil && n < 8; r = r.reqNext {
		if e.ticks-r.lastData < uint64(e.cfg.ResendTicks) {
			return // the rest are fresher
		}
		if g := &r.in.g; g.Granted > g.Unsched && g.Granted > g.Received && g.Received <= g.Unsched {
			e.m.RequestsEvicted++
			e.end(r)
			return
		}
		n++
	}
}
