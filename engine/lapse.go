package engine

// Grants a sender does not use.
//
// A sender may hold what it was granted without sending it. One that
// sends a granted byte every few ticks is never silent (never asked to
// resend, never stale, and it has sent granted bytes, so evictStarving
// spares it), and kept its place among the Grant.MaxOvercommit messages
// granted to, and its granted-but-unreceived bytes under
// Grant.MaxIncoming, for as long as its RPC lived: a peer with as many
// such requests as the overcommit took every grant of the port, and a
// real client's requests waited (TestTrickle_peerKeepsNoMoreThanItsShare).
//
// So each incoming message that was granted bytes carries a mark: the
// offset it was granted at a tick when it had every byte granted before
// (lapseMark, lapseTick; lapseFrom, its bytes received then). If,
// GrantLapseTicks later, it has neither every byte up to the mark nor
// half of those it lacked at the mark, it lapses (GrantsLapsed): it
// leaves the grants (sched Suspend: out of the overcommit, its bytes out
// of MaxIncoming, granted nothing more) until the bytes up to the mark
// have arrived, and the packet that brings them puts it back. A sender
// that sends what it is granted passes its mark within a tick; one that
// sends at least half of it in GrantLapseTicks (a busy sender serving
// shorter messages first) gets a new mark; one whose packets were lost
// is asked to resend in time (ResendTicks, or two ResendIntervals more
// while our link is busy), and loses nothing but its place while it
// could not use it. While a lapsed message's bytes still come, but not
// all it holds, a GRANT repeating its offset goes to its sender every
// ResendInterval, so that a sender whose bytes are merely slow (a slow
// link, a deep queue) does not time out for want of hearing from us; a
// silent one is asked to resend, as before.
//
// The peer of a message that lapses then takes turns (GrantTurnWaits):
// while any of its messages is lapsed, and for TimeoutTicks after, one
// of its messages is in the grants at a time, its shortest (as kernel
// Homa's max_rpcs_per_peer of 1 does always); the others wait, out of
// the grants. Without turns, a peer with hundreds of such requests had
// them lapse eight at a time, each wave holding the grants for
// GrantLapseTicks. A message that ends lapsed, or holding granted bytes
// its sender has not sent, counts as lapsed: a peer that ends its
// requests (RPC_UNKNOWN) before they would lapse and opens new ones
// takes turns too. A peer's turns are per shard (each shard has its own
// peer table): over a port of n shards, n places at most.

// takesTurns reports whether p's messages take turns at the grants.
func (e *Endpoint) takesTurns(p *peer) bool { return e.ticks < p.turnsUntil }

// startTurns makes p take turns for TimeoutTicks from now.
func (e *Endpoint) startTurns(p *peer) {
	p.turnsUntil = e.ticks + uint64(e.cfg.TimeoutTicks)
}

// joinGrants adds r's incoming message to the grant scheduler (startIn).
func (e *Endpoint) joinGrants(r *rpc) {
	e.grants.Add(&r.in.g)
	r.peer.granting++
	e.markLapse(r)
	if e.takesTurns(r.peer) {
		e.checkTurn(r)
	}
}

// leaveGrants takes r's incoming message out of the grant scheduler for
// good (it completed, or r ended), and lets its peer's next message in.
// One that ends lapsed, or holding granted bytes its sender has not
// sent, counts as lapsed: a peer that ends its requests (RPC_UNKNOWN)
// before they would lapse, and opens new ones, takes turns too.
func (e *Endpoint) leaveGrants(r *rpc) {
	in, p := &r.in, r.peer
	g := &in.g
	ended := r.state == stateDead && e.cfg.GrantLapseTicks > 0
	switch {
	case in.waitsTurn:
		e.unlinkTurn(r)
	case in.lapsed:
		in.lapsed = false
		if ended {
			e.startTurns(p)
		}
	case !g.Added():
	default:
		e.outOfGrants(r)
		if ended && g.Received < g.Granted && g.Granted > g.Unsched {
			e.m.GrantsLapsed++
			e.startTurns(p)
		}
	}
	e.grants.Remove(g)
	e.nextTurn(p)
}

// checkGrants applies the lapse rule and the peer's turns to r's
// incoming message, which is in the grant scheduler, at a tick.
func (e *Endpoint) checkGrants(r *rpc) {
	in, p := &r.in, r.peer
	g := &in.g
	switch {
	case in.lapsed:
		e.resumeLapsed(r) // its bytes came (a packet resumes it first)
		if in.lapsed {
			e.startTurns(p) // turns last while it stays lapsed
		}
	case in.waitsTurn:
		switch q := p.turn; {
		case !e.takesTurns(p), q == nil:
			e.takeTurn(r)
		case g.Remaining() < q.in.g.Remaining():
			e.waitTurn(q) // the peer's shortest goes first
			e.takeTurn(r)
		}
	case g.Received >= in.lapseMark:
		e.markLapse(r)
		e.checkTurn(r)
	case g.Granted > g.Unsched && e.cfg.GrantLapseTicks > 0 && e.ticks-in.lapseTick >= uint64(e.cfg.GrantLapseTicks):
		if 2*(g.Received-in.lapseFrom) >= in.lapseMark-in.lapseFrom {
			e.markLapse(r) // slow, but it sends what it holds
			e.checkTurn(r)
			break
		}
		e.lapse(r)
	default:
		e.checkTurn(r)
	}
	if (in.lapsed || in.waitsTurn) && g.Received < g.Granted && g.Granted > g.Unsched &&
		r.silentTicks < e.cfg.ResendTicks && e.ticks%uint64(e.cfg.ResendInterval) == 0 {
		e.grantKeepalive(r) // bytes still come, and we withhold: keep its sender from timing out
	}
}

// checkTurn: r's message is in the grants. If its peer takes turns and
// has another in, the longer of the two waits.
func (e *Endpoint) checkTurn(r *rpc) {
	p := r.peer
	switch q := p.turn; {
	case !e.takesTurns(p), q == r:
	case q == nil:
		p.turn = r
	case r.in.g.Remaining() < q.in.g.Remaining():
		e.waitTurn(q)
		p.turn = r
	default:
		e.waitTurn(r)
	}
}

// outOfGrants notes that r's message, in the grants, leaves them.
func (e *Endpoint) outOfGrants(r *rpc) {
	p := r.peer
	p.granting--
	if p.turn == r {
		p.turn = nil
	}
}

// lapse takes r's message, whose granted bytes are overdue, out of the
// grants, and makes its peer take turns.
func (e *Endpoint) lapse(r *rpc) {
	e.m.GrantsLapsed++
	e.grants.Suspend(&r.in.g)
	r.in.lapsed = true
	e.outOfGrants(r)
	e.startTurns(r.peer)
	e.nextTurn(r.peer)
}

// resumeLapsed puts r's lapsed message back once every byte up to its
// mark has arrived.
func (e *Endpoint) resumeLapsed(r *rpc) {
	in := &r.in
	if in.g.Received < in.lapseMark {
		return
	}
	in.lapsed = false
	e.enter(r)
}

// enter puts r's suspended message back into the grants, with a fresh
// mark, unless its peer takes turns and has a shorter one in.
func (e *Endpoint) enter(r *rpc) {
	e.grants.Resume(&r.in.g)
	r.peer.granting++
	e.markLapse(r)
	e.checkTurn(r)
}

// markLapse sets r's mark: its granted offset now.
func (e *Endpoint) markLapse(r *rpc) {
	in := &r.in
	in.lapseMark, in.lapseTick, in.lapseFrom = in.g.Granted, e.ticks, in.g.Received
}

// waitTurn takes r's message out of the grants until its peer's turn
// comes to it.
func (e *Endpoint) waitTurn(r *rpc) {
	p := r.peer
	e.m.GrantTurnWaits++
	e.grants.Suspend(&r.in.g)
	e.outOfGrants(r)
	r.in.waitsTurn = true
	r.turnPrev, r.turnNext = p.turnTail, nil
	if p.turnTail != nil {
		p.turnTail.turnNext = r
	} else {
		p.turnHead = r
	}
	p.turnTail = r
}

// takeTurn puts r's waiting message into the grants.
func (e *Endpoint) takeTurn(r *rpc) {
	e.unlinkTurn(r)
	e.enter(r)
}

// nextTurn lets p's shortest waiting message in when none of p's is.
func (e *Endpoint) nextTurn(p *peer) {
	if p.granting != 0 || p.turnHead == nil {
		return
	}
	best := p.turnHead
	for r := best.turnNext; r != nil; r = r.turnNext {
		if r.in.g.Remaining() < best.in.g.Remaining() {
			best = r
		}
	}
	e.takeTurn(best)
}

// unlinkTurn takes r off its peer's list of messages waiting their turn.
func (e *Endpoint) unlinkTurn(r *rpc) {
	p := r.peer
	if r.turnPrev != nil {
		r.turnPrev.turnNext = r.turnNext
	} else {
		p.turnHead = r.turnNext
	}
	if r.turnNext != nil {
		r.turnNext.turnPrev = r.turnPrev
	} else {
		p.turnTail = r.turnPrev
	}
	r.turnPrev, r.turnNext, r.in.waitsTurn = nil, nil, false
}
