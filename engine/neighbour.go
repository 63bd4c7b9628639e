package engine

import (
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// LinkState is the state of a next hop's link-layer address.
type LinkState uint8

const (
	LinkResolving   LinkState = iota // a request is out; sends to it wait
	LinkReachable                    // MAC is valid
	LinkUnreachable                  // resolution failed (or no route); sends to it fail
)

var linkStateNames = [...]string{"resolving", "reachable", "unreachable"}

// String returns the state's name.
func (s LinkState) String() string {
	if int(s) < len(linkStateNames) {
		return linkStateNames[s]
	}
	return "unknown"
}

// Neighbour is a next hop's link-layer address as the host's neighbour
// table holds it. The table owns it and updates it in place (learned,
// refreshed, aged out, failed); the engine keeps the pointer Resolve
// returned for the life of the peer and reads it for every frame it
// sends to that peer, so the table must keep an entry at the same
// address while an endpoint may hold it (age it out in place, never
// free or replace it). Peers reached through a gateway share the
// gateway's entry.
//
// What the host does when its table changes:
//
//   - resolved (LinkResolving → LinkReachable): set MAC, then State, and
//     call NeighbourReady; the sends that waited go out.
//   - failed (→ LinkUnreachable): set State and call NeighbourFailed;
//     the RPCs that waited fail or are dropped. The next RPC started to
//     the peer asks Resolve again, which may start a new resolution.
//   - MAC changed (a refresh, a gratuitous ARP): write MAC in place,
//     State staying LinkReachable; the next frame uses it. Nothing to
//     call.
//   - aged out: keep the entry LinkReachable while it is re-verified
//     (as Linux's STALE and PROBE states do) if frames may still go to
//     the old MAC; set it to LinkResolving to hold them until
//     NeighbourReady (or NeighbourFailed). Nothing to call on the way
//     down: the engine reads State for every frame.
type Neighbour struct {
	MAC   wire.MAC
	State LinkState
}

// StaticNeighbours is a neighbour table whose entries are set by hand:
// every address added is LinkReachable until the owner changes its entry
// in place. It serves tests and simulations (memnet hosts), where every
// MAC is known up front; its Resolve is a Config.Resolve. The zero value
// is an empty table. Not safe for concurrent use.
type StaticNeighbours struct {
	entries map[netip.Addr]*Neighbour
}

// Add makes ip reachable at mac and returns its entry: a new one, or the
// existing one updated in place (so endpoints holding it see the change).
func (t *StaticNeighbours) Add(ip netip.Addr, mac wire.MAC) *Neighbour {
	ip = ip.Unmap()
	if t.entries == nil {
		t.entries = make(map[netip.Addr]*Neighbour)
	}
	n := t.entries[ip]
	if n == nil {
		n = &Neighbour{}
		t.entries[ip] = n
	}
	n.MAC, n.State = mac, LinkReachable
	return n
}

// Resolve returns ip's entry, or nil (no route) for an address never
// added.
func (t *StaticNeighbours) Resolve(ip netip.Addr) *Neighbour { return t.entries[ip.Unmap()] }

// NeighbourReady tells the endpoint that the host's neighbour entry for
// ip (a peer's address, or the gateway's through which peers are reached)
// became LinkReachable: every RPC whose packets waited for its peer's
// entry to resolve sends them now (at EndBatch when called inside a
// batch), and GRANTs dropped while it was unresolved are repeated. The
// engine rechecks every waiting peer's entry, so one call covers all the
// peers behind a gateway; Run also picks up an entry that became
// reachable without a call.
func (e *Endpoint) NeighbourReady(ip netip.Addr) { e.neighbourChanged() }

// NeighbourFailed tells the endpoint that the host's neighbour entry for
// ip became LinkUnreachable: client RPCs waiting for it fail with
// ErrPeerUnknown (delivered through their port like any failure) and
// server RPCs waiting to send a response to it are dropped, counted in
// ServerResponsesUnresolved, as kernel Homa discards a response it cannot
// route. Like NeighbourReady it may be called inside a batch and covers
// every peer that shares the entry; Run also picks up an entry that
// failed without a call.
func (e *Endpoint) NeighbourFailed(ip netip.Addr) { e.neighbourChanged() }

// NumWaitingResolution returns the number of RPCs whose packets wait for
// their peer's link address now (a gauge; RPCsWaitingResolution counts
// the waits).
func (e *Endpoint) NumWaitingResolution() int { return e.numWaiting }

func (e *Endpoint) neighbourChanged() {
	if e.batch {
		e.neighDue = true // EndBatch
		return
	}
	e.now = e.cfg.Clock()
	e.checkNeighbours()
}

// reachable reports whether frames to p may go now: its entry resolved.
// This is the check made for every frame sent.
func (p *peer) reachable() bool { n := p.neigh; return n != nil && n.State == LinkReachable }

// resolvable reports whether p's address may still resolve: a route, and
// an entry that has not failed.
func (p *peer) resolvable() bool { n := p.neigh; return n != nil && n.State != LinkUnreachable }

// resolve asks the host's table for ip's next hop (nil: no route).
func (e *Endpoint) resolve(ip netip.Addr) *Neighbour {
	if e.cfg.Resolve == nil {
		return nil
	}
	return e.cfg.Resolve(ip)
}

// awaitNeighbour handles r, which has packets to send to a peer whose
// entry is not reachable: while the entry resolves, r waits (out of the
// sender queue) until NeighbourReady; when there is no route or the
// entry failed, r ends as unresolved.
func (e *Endpoint) awaitNeighbour(r *rpc) {
	p := r.peer
	if !p.resolvable() {
		e.unresolved(r)
		return
	}
	e.sendq.Remove(&r.out.sq)
	if r.waiting {
		return
	}
	r.waiting, r.waitTicks = true, 0
	p.waiting = append(p.waiting, r)
	e.numWaiting++
	e.m.RPCsWaitingResolution++
	e.listWaiting(p)
}

// unresolved ends r, whose peer's address has no route or failed to
// resolve: a client RPC fails with ErrPeerUnknown, a server RPC's
// response is discarded.
func (e *Endpoint) unresolved(r *rpc) {
	e.giveUp(r, ErrPeerUnknown, &e.m.ClientRPCsUnresolved, &e.m.ServerResponsesUnresolved)
}

// stopWaiting takes r (ending, or released) off its peer's waiting list.
func (e *Endpoint) stopWaiting(r *rpc) {
	if !r.waiting {
		return
	}
	r.waiting = false
	e.numWaiting--
	w := r.peer.waiting
	for i, x := range w {
		if x == r {
			copy(w[i:], w[i+1:])
			w[len(w)-1] = nil
			r.peer.waiting = w[:len(w)-1]
			return
		}
	}
}

// lostGrant records that a GRANT to p was dropped because p's entry is
// not reachable: the grants are repeated when it is.
func (e *Endpoint) lostGrant(p *peer) {
	p.lostGrants = true
	e.listWaiting(p)
}

// listWaiting puts p on the endpoint's list of peers waiting for
// resolution, once.
func (e *Endpoint) listWaiting(p *peer) {
	if !p.listed {
		p.listed = true
		e.waitingPeers = append(e.waitingPeers, p)
	}
}

// checkNeighbours looks at the entry of every waiting peer: a reachable
// one is released, a failed one fails its RPCs, one still resolving stays
// listed. Run calls it while any peer waits; NeighbourReady and
// NeighbourFailed at once.
func (e *Endpoint) checkNeighbours() {
	e.neighDue = false
	ps := e.waitingPeers
	e.waitingPeers = e.sparePeers[:0]
	for i, p := range ps {
		ps[i] = nil
		p.listed = false
		switch {
		case p.reachable():
			e.release(p)
		case !p.resolvable():
			e.failWaiting(p)
		case len(p.waiting) > 0 || p.lostGrants:
			e.listWaiting(p)
		}
	}
	e.sparePeers = ps[:0]
}

// release sends what waited for p's entry, which is now reachable: the
// waiting RPCs' packets in the order they began to wait, then the GRANTs
// dropped meanwhile.
func (e *Endpoint) release(p *peer) {
	e.eachWaiting(p, e.xmitReady)
	if p.lostGrants {
		p.lostGrants = false
		e.regrant(p)
	}
}

// regrant repeats the latest GRANT of every message from p still being
// granted bytes it has not sent.
func (e *Endpoint) regrant(p *peer) {
	for r := e.first; r != nil; r = r.next {
		in := &r.in
		if r.peer == p && r.state == stateIncoming && in.length != 0 &&
			in.g.Granted > in.unsched && in.g.Received < in.g.Granted {
			e.sendGrant(r, in.g.Granted, in.g.Priority)
		}
	}
}

// failWaiting ends the RPCs waiting for p's entry, which failed.
func (e *Endpoint) failWaiting(p *peer) {
	p.lostGrants = false
	e.eachWaiting(p, e.unresolved)
}

// eachWaiting takes every RPC off p's waiting list, then calls f for each
// that is still alive, in the order they began to wait (f may make an RPC
// wait again, or end others).
func (e *Endpoint) eachWaiting(p *peer, f func(*rpc)) {
	w := p.waiting
	p.waiting = nil
	for _, r := range w {
		r.waiting = false
		e.numWaiting--
	}
	for i, r := range w {
		if r.state != stateDead {
			f(r)
		}
		w[i] = nil
	}
	if p.waiting == nil {
		p.waiting = w[:0] // keep the storage
	}
}
