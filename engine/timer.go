package engine

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// tick runs once per Config.TickNs: it ages every live RPC and asks for
// retransmission, keeps senders alive, requests acks, and times RPCs
// out (kernel homa_timer).
func (e *Endpoint) tick() {
	e.ticks++
	e.rxPrioLast, e.rxPrio, e.rxByLast, e.rxBy = e.rxPrio, 0, e.rxBy, nil
	e.rxBytesLast, e.rxBytes = e.rxBytes, 0
	for r := e.first; r != nil; {
		next := r.next // r may end
		e.checkRPC(r)
		r = next
	}
	e.agePeers()
	if e.grants.PortStarved() {
		e.evictStarving()
	}
	// Grants are decided when packets arrive and messages complete. A
	// message that ends otherwise (a timeout, an abort, RPC_UNKNOWN)
	// frees room under MaxIncoming with no packet to follow; without this
	// a message waiting for that room would wait for ever, its sender
	// kept alive by grant keepalives (found by FuzzEndpointNeighbour).
	if e.grants.Len() > 0 {
		e.scheduleGrants()
	}
	e.pump()
}

// checkRPC applies the timer to one RPC.
func (e *Endpoint) checkRPC(r *rpc) {
	if e.stalled(r) {
		e.busyTimeout(r)
		return
	}
	o, in := &r.out, &r.in
	if r.state == stateIncoming && in.g.Added() {
		e.checkGrants(r)
	}
	switch {
	case r.waiting:
		// Waiting for the peer's link address: nothing to ask for, and
		// the peer is not silent (nothing went to it yet), but the wait
		// must end: the neighbour table fails it when resolution gives
		// up, and ResolveTimeoutTicks in any case.
		r.waitTicks++
		if r.waitTicks >= e.cfg.ResolveTimeoutTicks {
			e.timeout(r)
		}
		return
	case r.state == stateInService:
		r.silentTicks = 0 // the application has it
		return
	case r.state == stateOutgoing && o.next < o.granted:
		r.silentTicks = 0 // the ball is in our court: waiting for the pacer
		return
	case !r.client && r.state == stateOutgoing && o.next >= o.length:
		e.awaitAck(r)
		return
	case r.state == stateIncoming && in.length != 0 && in.g.Received >= in.g.Granted:
		// Every granted byte is here: we are the ones waiting (other
		// messages are granted first). Not silence; keep the sender
		// from timing out.
		r.silentTicks = 0
		if e.ticks%uint64(e.cfg.ResendInterval) == 0 {
			e.grantKeepalive(r)
		}
		return
	}
	r.silentTicks++
	if r.silentTicks >= e.cfg.TimeoutTicks {
		e.timeout(r)
		return
	}
	if r.state == stateIncoming && in.length != 0 {
		if e.outranked(r) {
			r.outrankedRun++
		} else {
			r.outrankedRun = 0
		}
		// DATA of another message at a higher priority came in the
		// last tick: our link was busy, and the bytes we wait for may be
		// queued behind it in the switch (the lowest granted message
		// waits while those granted above it flow). No RESEND: a copy
		// would queue behind them too. The first two RESENDs wait so
		// (loss recovery under load is two ResendIntervals later at
		// most), and any later one while the link has been so busy in
		// every tick of the silence (a strict-priority queue serves
		// ours in the first tick it has room), up to half the timeout;
		// the timeout runs on.
		if r.outrankedRun > 0 && (r.silentTicks < e.cfg.ResendTicks+2*e.cfg.ResendInterval ||
			r.outrankedRun >= r.silentTicks && r.silentTicks < e.cfg.TimeoutTicks/2) {
			return
		}
	}
	if r.silentTicks < e.cfg.ResendTicks || (r.silentTicks-e.cfg.ResendTicks)%e.cfg.ResendInterval != 0 {
		return
	}
	if r.state == stateIncoming || r.client {
		e.requestRetransmit(r)
	}
}

// outranked reports whether, in the last tick, DATA of another message
// at a higher priority than that of the bytes r's incoming message waits
// for arrived, and DATA kept our link at least 90% busy (so bytes of
// lower priority can have waited in the switch). Without Config.LinkBps
// the link's load is unknown: never.
func (e *Endpoint) outranked(r *rpc) bool {
	busy := e.cfg.LinkBps > 0 && e.rxBytesLast*8*10_000_000_000 >= 9*e.cfg.LinkBps*e.cfg.TickNs
	prio := e.resendPriority(r)
	if len(r.in.gaps) > 0 {
		prio = 0 // bytes granted earlier, at a priority perhaps below today's
	}
	return busy && int(e.rxPrioLast) > prio+1 && e.rxByLast != r
}

// timeout ends r after TimeoutTicks: a client RPC fails with ErrTimeout,
// a server RPC is dropped.
func (e *Endpoint) timeout(r *rpc) {
	if r.awaitsWithheldGrants() && !r.mismatch {
		e.m.VariantMismatches++ // taken whole, from a sender that waited for grants (variant.go)
	}
	e.giveUp(r, ErrTimeout, &e.m.RPCTimeouts, &e.m.ServerRPCDiscards)
}

// giveUp ends r: a client RPC fails with err, counted in *client; a
// server RPC is dropped, counted in *server.
func (e *Endpoint) giveUp(r *rpc, err error, client, server *uint64) {
	if r.client {
		*client++
		e.fail(r, err)
		return
	}
	*server++
	e.end(r)
}

// awaitAck handles a server RPC whose response is fully sent: NEED_ACK
// every RequestAckTicks until the client acknowledges, and give up after
// TimeoutTicks.
func (e *Endpoint) awaitAck(r *rpc) {
	r.doneTicks++
	r.silentTicks++
	if r.silentTicks >= e.cfg.TimeoutTicks {
		e.m.ServerRPCDiscards++
		e.end(r)
		return
	}
	if r.doneTicks%e.cfg.RequestAckTicks == 0 {
		e.sendControl(r.peer, wire.TypeNeedAck, r.common())
	}
}

// stalled ages r's stall and reports whether it has lasted
// BusyTimeoutTicks. The stall is how long an RPC waiting on its peer (a
// client RPC, or a server RPC receiving its request) has gone without
// progress: no new bytes of its incoming message, and no grant of more of
// its outgoing one. What resets its silence without being progress (BUSY,
// a GRANT repeating an offset, DATA repeating bytes) leaves the stall
// running, so a peer that answers every RESEND with BUSY for ever (kernel
// Homa's design: the client waits as long as the server says it works)
// holds the RPC, and its memory, BusyTimeoutTicks at most. Ticks where the
// ball is in our court (the link address pending, granted bytes still to
// send, every granted byte here) are no stall.
func (e *Endpoint) stalled(r *rpc) bool {
	if e.cfg.BusyTimeoutTicks < 0 || !r.client && r.state != stateIncoming {
		return false
	}
	o, in := &r.out, &r.in
	ours := r.waiting || r.state == stateOutgoing && o.next < o.granted ||
		r.state == stateIncoming && in.length != 0 && in.g.Received >= in.g.Granted
	if in.g.Received != r.stallIn || o.granted != r.stallOut || ours {
		r.stallIn, r.stallOut, r.stallTicks = in.g.Received, o.granted, 0
		return false
	}
	r.stallTicks++
	return r.stallTicks >= e.cfg.BusyTimeoutTicks
}

// ErrBusyTimeout is the error of a client RPC ended by BusyTimeoutTicks:
// errors.Is(err, ErrTimeout) holds (a worker is told timeout).
var ErrBusyTimeout = fmt.Errorf("%w: no progress for busy_timeout_ticks, though the server answered (BUSY)", ErrTimeout)

// busyTimeout ends r, stalled for BusyTimeoutTicks: a client RPC fails
// with ErrBusyTimeout (in RPCTimeouts too), a server RPC is dropped
// (in ServerRPCDiscards too).
func (e *Endpoint) busyTimeout(r *rpc) {
	e.m.BusyTimeouts++
	e.giveUp(r, ErrBusyTimeout, &e.m.RPCTimeouts, &e.m.ServerRPCDiscards)
}

// noteRxPriority records the priority of DATA frame f, of r, in rxPrio.
func (e *Endpoint) noteRxPriority(f *wire.Frame, r *rpc) {
	var prio uint8
	switch {
	case f.IPv4 != nil:
		prio = f.IPv4.Priority()
	case f.IPv6 != nil:
		prio = wire.PriorityFromTOS(f.IPv6.TrafficClass())
	}
	e.rxBytes += int64(len(f.Homa))
	switch {
	case prio+1 > e.rxPrio:
		e.rxPrio, e.rxBy = prio+1, r
	case prio+1 == e.rxPrio && e.rxBy != r:
		e.rxBy = nil
	}
}
