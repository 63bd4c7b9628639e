package memnet

// The switch: ingress (routing and fault injection), output-queued egress
// ports, and delivery at the far end of each downlink.

// dropRule is one DropNext injection.
type dropRule struct {
	left  int                     // frames still to drop
	match func(frame []byte) bool // nil matches every frame
}

// switchIn: frame p has fully arrived at the switch (store and forward).
// Checks run in this order: parseable, routable, partition, DropNext,
// loss; then duplication and reordering.
func (n *Network) switchIn(p *packet) {
	if !p.ok {
		n.drop(p, DropUnparseable)
		return
	}
	to := n.byIP[p.dst]
	if to == nil {
		n.drop(p, DropNoRoute)
		return
	}
	p.to, p.toEpoch = to, to.epoch
	switch {
	case p.from.partitioned || to.partitioned:
		n.drop(p, DropPartition)
		return
	case n.injected(p):
		n.drop(p, DropInjected)
		return
	case n.cfg.Loss > 0 && n.rng.Float64() < n.cfg.Loss:
		n.drop(p, DropLoss)
		return
	}
	if n.cfg.Duplicate > 0 && n.rng.Float64() < n.cfg.Duplicate {
		d := n.alloc(p.buf)
		d.ok, d.prio, d.typ, d.dst = p.ok, p.prio, p.typ, p.dst
		d.from, d.fromEpoch, d.to, d.toEpoch = p.from, p.fromEpoch, p.to, p.toEpoch
		n.counts.duplicated++
		n.traceFrame(d, "dup")
		n.forward(d)
	}
	n.forward(p)
}

// injected reports whether a DropNext rule takes p, consuming one count.
func (n *Network) injected(p *packet) bool {
	for i := range n.rules {
		r := &n.rules[i]
		if r.match != nil && !r.match(p.buf) {
			continue
		}
		if r.left--; r.left == 0 {
			n.rules = append(n.rules[:i], n.rules[i+1:]...)
		}
		return true
	}
	return false
}

// forward sends p to its egress port, or holds it back first if the
// reorder fault picks it.
func (n *Network) forward(p *packet) {
	if n.cfg.Reorder > 0 && n.rng.Float64() < n.cfg.Reorder {
		n.counts.reordered++
		n.traceFrame(p, "reorder")
		n.schedule(event{t: n.now + n.cfg.ReorderDelay, kind: evEgressEnter, p: p})
		return
	}
	if n.fab != nil {
		n.fabricForward(p)
		return
	}
	n.egressEnter(p)
}

// egressEnter queues p on the egress port toward p.to, tail-dropping it
// if the port's buffer cannot hold it, and starts the port if idle.
func (n *Network) egressEnter(p *packet) {
	to := p.to
	if p.toEpoch != to.epoch {
		n.drop(p, DropRestart)
		return
	}
	if n.admit(&to.egress, p) {
		n.egressStart(to)
	}
}

// admit queues p on switch port pt, or tail-drops it when pt's buffer
// cannot hold it; it reports whether p was queued on an idle port, which
// the caller then starts.
func (n *Network) admit(pt *port, p *packet) bool {
	if n.cfg.BufferBytes > 0 && pt.bytes+len(p.buf) > n.cfg.BufferBytes {
		n.drop(p, DropBufferFull)
		return false
	}
	pt.push(p, n.queueOf(p.prio))
	return pt.cur == nil
}

// egressStart puts the next frame of the port toward h on the wire.
func (n *Network) egressStart(h *Host) {
	p := h.egress.pop()
	h.egress.cur = p
	if p != nil {
		n.schedule(event{t: n.now + n.txTime(len(p.buf)), kind: evEgressDone, h: h})
	}
}

// egressDone: the port toward h has sent the last bit of its frame, which
// reaches h one propagation delay later and its software RecvDelay after
// that.
func (n *Network) egressDone(h *Host) {
	p := h.egress.cur
	h.egress.unhold(p)
	n.schedule(event{t: n.now + n.cfg.PropDelay + n.cfg.RecvDelay, kind: evDeliver, p: p})
	n.egressStart(h)
}

// deliver hands p to its receiver unless the receiver restarted or was
// partitioned while p was on its way.
func (n *Network) deliver(p *packet) {
	h := p.to
	switch {
	case p.toEpoch != h.epoch:
		n.drop(p, DropRestart)
		return
	case h.partitioned:
		n.drop(p, DropPartition)
		return
	}
	n.counts.delivered++
	n.counts.deliveredBytes += uint64(len(p.buf))
	n.traceFrame(p, "")
	if h.recv != nil {
		h.recv(p.buf)
	}
	n.release(p)
}

// drop counts p as dropped for cause c, traces it and frees it.
func (n *Network) drop(p *packet, c DropCause) {
	n.counts.dropped[c]++
	if n.trace != nil {
		n.traceFrame(p, "drop "+c.String())
	}
	n.release(p)
}

// Partition cuts the host off (on) or reconnects it (off). While cut off,
// the switch drops every frame from or to the host, including frames
// already queued toward it when they arrive (cause DropPartition). The
// host's own NIC keeps transmitting into the void.
func (n *Network) Partition(ip [4]byte, on bool) {
	if h := n.byIP[ip]; h != nil {
		h.partitioned = on
	} else {
		panic("memnet: Partition: no host " + ipString(ip))
	}
}

// Restart models a host that crashes and comes back at once: frames
// waiting in its NIC, the one its NIC is serializing, and frames routed
// toward it (queued at its switch port, held back, or on its downlink)
// are dropped with cause DropRestart. Frames it sent that already left
// its NIC still arrive. Then its OnRestart hook, if any, runs.
func (n *Network) Restart(ip [4]byte) {
	h := n.byIP[ip]
	if h == nil {
		panic("memnet: Restart: no host " + ipString(ip))
	}
	h.epoch++
	dropRestart := func(p *packet) { n.drop(p, DropRestart) }
	h.nic.drain(func(p *packet) { h.left(p); n.drop(p, DropRestart) })
	h.egress.drain(dropRestart)
	if h.onRestart != nil {
		h.onRestart()
	}
}

// DropNext makes the switch drop the next count frames for which match
// returns true (every frame if match is nil), with cause DropInjected.
// match sees the frame at the switch's ingress, after routing and the
// partition check and before the random faults; the slice is valid only
// during the call. Rules from several calls apply in order: a frame is
// taken by the oldest rule that matches it.
func (n *Network) DropNext(count int, match func(frame []byte) bool) {
	if count > 0 {
		n.rules = append(n.rules, dropRule{left: count, match: match})
	}
}
