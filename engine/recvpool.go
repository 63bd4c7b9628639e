package engine

// Receive memory held by requests still arriving.
//
// A committed request holds its buffer until its last byte arrives: the
// pages of its worker's pool (PortHooks.RecvBuf), or heap bytes within
// Config.MaxRecvHeapBytes. A stranger that sends the bytes that commit a
// request and then stops holds them until the RPC times out, and enough
// such requests leave the pool with nothing for real ones. So the
// committed, incomplete requests are listed by the tick of their last
// DATA, oldest first (heldHead; rpc.heldPrev, heldNext), each with the
// memory it holds (rpc.held: its length rounded up to whole
// PortHooks.RecvBufUnit) counted against its peer (peer.heldIn). When a
// message finds no buffer, a request of the same pool (samePool) that
// has had no DATA this tick makes room, among the maxEvictScan oldest:
//
//   - one silent for ResendTicks (its client, if real, would be asked to
//     resend by now, and retries): RecvEvictionsStale;
//   - one of another peer that holds more of the receive memory in such
//     requests than the message's peer would with this message, so that
//     no peer keeps more than a newcomer's share: RecvEvictionsShare.
//
// Its server RPC ends (the memory goes back through FreeRecvBuf) and the
// buffer is asked for again; a message that still finds none is refused
// as before (DropNoRecvSpace, DropRecvHeapFull). Requests receiving DATA
// this tick, whole requests (the application's), and responses are never
// evicted.

// maxEvictScan bounds the held requests one refused message looks at,
// and how many it may evict.
const maxEvictScan = 16

// heldSize is the receive memory a message of n bytes takes at port p:
// n rounded up to whole PortHooks.RecvBufUnit where the owner gives
// buffers in units (a worker's 64 KB pages), n bytes otherwise.
func heldSize(p *Port, n int) int {
	if u := p.hooks.RecvBufUnit; u > 1 && p.hooks.RecvBuf != nil {
		return roundUp(n, u)
	}
	return n
}

// samePool reports whether ports a and b take receive memory from the
// same place: the same port, ports with the same non-nil
// PortHooks.RecvPool, or two ports that use the endpoint's heap.
func samePool(a, b *Port) bool {
	ha, hb := &a.hooks, &b.hooks
	switch {
	case a == b:
		return true
	case ha.RecvBuf == nil || hb.RecvBuf == nil:
		return ha.RecvBuf == nil && hb.RecvBuf == nil
	}
	return ha.RecvPool != nil && ha.RecvPool == hb.RecvPool
}

// noteHeld lists request r, just committed with buf of size bytes of
// receive memory, at the tail (the freshest).
func (e *Endpoint) noteHeld(r *rpc, size int) {
	r.held = size
	r.peer.heldIn += size
	r.heldPrev, r.heldNext = e.heldTail, nil
	if e.heldTail != nil {
		e.heldTail.heldNext = r
	} else {
		e.heldHead = r
	}
	e.heldTail = r
}

// unlinkHeld takes r off the list of held requests (whole, or ended).
func (e *Endpoint) unlinkHeld(r *rpc) {
	if r.held == 0 {
		return
	}
	if r.heldPrev != nil {
		r.heldPrev.heldNext = r.heldNext
	} else {
		e.heldHead = r.heldNext
	}
	if r.heldNext != nil {
		r.heldNext.heldPrev = r.heldPrev
	} else {
		e.heldTail = r.heldPrev
	}
	r.peer.heldIn -= r.held
	r.heldPrev, r.heldNext, r.held = nil, nil, 0
}

// heldData moves held request r, which accepted DATA now, to the tail.
func (e *Endpoint) heldData(r *rpc) {
	if r.held == 0 || e.heldTail == r {
		return
	}
	size := r.held
	e.unlinkHeld(r)
	e.noteHeld(r, size)
}

// evictForBuffer ends a held request that makes room for r's message of
// n bytes (see above), and reports whether it ended one.
func (e *Endpoint) evictForBuffer(r *rpc, n int) bool {
	need := heldSize(r.port, n)
	i := 0
	for c := e.heldHead; c != nil && i < maxEvictScan; c = c.heldNext {
		i++
		if c.lastData >= e.ticks {
			return false // the rest had DATA this tick too
		}
		if c == r || !samePool(c.port, r.port) {
			continue
		}
		switch {
		case e.ticks-c.lastData >= uint64(e.cfg.ResendTicks):
			e.m.RecvEvictionsStale++
		case c.peer != r.peer && c.peer.heldIn > r.peer.heldIn+need:
			e.m.RecvEvictionsShare++
		default:
			continue
		}
		e.end(c)
		return true
	}
	return false
}
