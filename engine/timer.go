package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// tick runs once per Config.TickNs: it ages every live RPC and asks for
// retransmission, keeps senders alive, requests acks, and times RPCs
// out (kernel homa_timer).
func (e *Endpoint) tick() {
	e.ticks++
	for r := e.first; r != nil; {
		next := r.next // r may end
		e.checkRPC(r)
		r = next
	}
	e.agePeers()
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
	o, in := &r.out, &r.in
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
	if r.silentTicks < e.cfg.ResendTicks || (r.silentTicks-e.cfg.ResendTicks)%e.cfg.ResendInterval != 0 {
		return
	}
	if r.state == stateIncoming || r.client {
		e.requestRetransmit(r)
	}
}

// timeout ends r after TimeoutTicks: a client RPC fails with ErrTimeout,
// a server RPC is dropped.
func (e *Endpoint) timeout(r *rpc) {
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
