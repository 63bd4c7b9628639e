package engine

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Errors an application sees, in Message.Err or from Port methods.
var (
	ErrTimeout         = errors.New("homa: RPC timed out")                   // peer silent for TimeoutTicks, or out of restarts (MaxRestarts)
	ErrPeerUnknown     = errors.New("homa: peer address cannot be resolved") // no route (Config.Resolve nil), or its neighbour entry failed
	ErrPeerRestarted   = errors.New("homa: peer lost the RPC (restarted)")   // RPC_UNKNOWN while the response arrived
	ErrPortUnreachable = errors.New("homa: server port unreachable")         // ICMP port unreachable
	ErrAborted         = errors.New("homa: RPC aborted")                     // Abort or AbortAll
	ErrMessageLength   = errors.New("homa: message length out of range")     // 0 or > MaxMessageLength
	ErrNoRPC           = errors.New("homa: no such RPC")                     // unknown id, or not in a state for this
	ErrPortInUse       = errors.New("homa: port in use")
	ErrBadPort         = errors.New("homa: server ports are 1..0x7fff")
	ErrAddress         = errors.New("homa: address invalid, or of a family this endpoint has no address in") // Config.IP, Config.IP6
	ErrClosed          = errors.New("homa: port closed")
	ErrNoBufferSpace   = errors.New("homa: no receive buffer space") // PortHooks.RecvBuf had none
	ErrPriority        = errors.New("homa: priority out of range")   // SendRefAt above wire.NumPriorities-1
)

// ErrPeerMessageLength: a message above wire.MaxMessageLength to a peer
// that may run kernel Homa (Config.KernelPeer), which takes no longer
// ones. errors.Is(err, ErrMessageLength) holds too.
var ErrPeerMessageLength = fmt.Errorf("%w: above kernel Homa's %d bytes, to a peer that may run it", ErrMessageLength, wire.MaxMessageLength)

// Client ports are 0x8000 and up, server ports below (kernel Homa's
// HOMA_MIN_DEFAULT_PORT).
const clientPortMin = 0x8000

// rpcState is where an RPC is in its life.
type rpcState uint8

const (
	// stateOutgoing: a client sending its request (no response bytes
	// yet), or a server sending its response (until the client acks).
	stateOutgoing rpcState = iota
	// stateIncoming: a client receiving its response, or a server
	// receiving its request.
	stateIncoming
	// stateInService: a server whose request went to the application,
	// waiting for Reply.
	stateInService
	// stateDead: ended; no longer in the endpoint's tables.
	stateDead
)

// rpc is one RPC as this endpoint sees it. Owned by the endpoint.
type rpc struct {
	id      uint64 // local id: even for a client RPC, client id ^ 1 for a server RPC
	port    *Port  // the local port (client port, or the server port bound)
	peer    *peer  // the other host
	dport   uint16 // the peer's port
	client  bool   // we sent the request
	private bool   // client: the result goes to Wait, not Receive
	state   rpcState

	out outMsg // request (client) or response (server)
	in  inMsg  // response (client) or request (server)

	silentTicks int // ticks since the peer was last heard from for this RPC
	// outrankedRun counts the consecutive silent ticks in which our link
	// was kept busy by higher-priority DATA of other messages (outranked).
	outrankedRun int
	// heard is 1 + the endpoint's tick of the last DATA, GRANT, RESEND
	// or BUSY from the peer for this RPC (0: none yet): for icmpLive.
	heard     uint64
	waiting   bool // its packets wait for the peer's link address (in peer.waiting)
	waitTicks int  // ticks spent waiting so far, while waiting
	// bufWaitFrom is 1 + the tick its response was first refused a
	// receive buffer (0: never), for Config.BufferWaitTicks.
	bufWaitFrom   uint64
	doneTicks     int // server: ticks since the response was fully sent
	incastBytes   int // bytes this RPC adds to the endpoint's expected unscheduled backlog
	allowance     int // client: unscheduled bytes the response may bring, advertised in the request
	peerAllowance int // server: the allowance its request advertised (bytes, 0: none); the response carries ours (extension)
	// upstream: it speaks the upstream subset (noteVariant, sendsUpstream); mismatch: a 36-byte RESEND came though not (mismatchResend)
	upstream, mismatch bool
	// client: times the request was restarted after RPC_UNKNOWN (at most
	// Config.MaxRestarts), and the endpoint's tick of the last restart.
	restarts    int
	lastRestart uint64
	startNs     int64 // client: Clock when the application sent the request (the round-trip histogram)
	prev, next  *rpc  // endpoint's list of live RPCs, creation order
	// client: place in its peer's list of client RPCs (peer.clients).
	peerPrev, peerNext *rpc

	// server, stateIncoming: place in the endpoint's list of incoming
	// requests (reqListed), by lastData, the tick of its last DATA.
	reqPrev, reqNext *rpc
	reqListed        bool
	lastData         uint64
	// server, committed and still arriving: place in the endpoint's list
	// of held requests (recvpool.go), and the receive memory it holds
	// (bytes; 0: not listed).
	heldPrev, heldNext *rpc
	held               int
	// in.waitsTurn: place in its peer's list of messages waiting for
	// their turn at the grants (lapse.go).
	turnPrev, turnNext *rpc

	// stallTicks: ticks since this RPC last progressed (timer.go's
	// stalled), for Config.BusyTimeoutTicks; stallIn and stallOut are its
	// incoming message's received bytes and its outgoing message's
	// granted bytes then.
	stallTicks, stallIn, stallOut int
}

// addrKey returns a as the peer tables hold it (IPv6, IPv4 mapped), and
// whether the endpoint can reach it: a valid address of a family it has
// an address in.
func (e *Endpoint) addrKey(a netip.Addr) ([16]byte, bool) {
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() && e.speaks4 || a.Is6() && a.Zone() == "" && e.speaks6 {
		return a.As16(), true
	}
	return [16]byte{}, false
}

// addrIP returns a table address as the application sees it: IPv4
// unmapped.
func addrIP(a [16]byte) netip.Addr { return netip.AddrFrom16(a).Unmap() }

// insert adds r to the endpoint's tables.
func (e *Endpoint) insert(k rpcKey, r *rpc) {
	e.rpcs.put(k, r)
	e.usePeer(r.peer)
	r.prev = e.last
	if e.last != nil {
		e.last.next = r
	} else {
		e.first = r
	}
	e.last = r
	if p := r.peer; r.client {
		r.peerPrev = p.clientsLast
		if p.clientsLast != nil {
			p.clientsLast.peerNext = r
		} else {
			p.clients = r
		}
		p.clientsLast = r
	}
}

// key returns r's key in e.rpcs.
func (r *rpc) key() rpcKey {
	if r.client {
		return rpcKey{id: r.id}
	}
	return rpcKey{ip: r.peer.addr, id: r.id}
}

// end frees r: out of every table, scheduler and queue.
func (e *Endpoint) end(r *rpc) {
	if r.state == stateDead {
		return
	}
	r.state = stateDead
	e.rpcs.del(r.key())
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		e.first = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		e.last = r.prev
	}
	r.prev, r.next = nil, nil
	if p := r.peer; r.client {
		if r.peerPrev != nil {
			r.peerPrev.peerNext = r.peerNext
		} else {
			p.clients = r.peerNext
		}
		if r.peerNext != nil {
			r.peerNext.peerPrev = r.peerPrev
		} else {
			p.clientsLast = r.peerPrev
		}
		r.peerPrev, r.peerNext = nil, nil
	}
	e.unlinkRequest(r)
	e.unlinkHeld(r)
	e.stopWaiting(r)
	e.leaveGrants(r)
	e.sendq.Remove(&r.out.sq)
	e.incast.Add(-r.incastBytes)
	r.incastBytes = 0
	if !r.client {
		r.peer.serverRPCs--
		e.numServerRPCs--
	}
	e.releasePeer(r.peer)
	h := &r.port.hooks
	e.releaseIn(&r.in, h)
	if r.out.data != nil && h.OutDone != nil {
		h.OutDone(r.id, Addr{IP: r.peer.ip, Port: r.dport}, r.out.data)
	}
	r.out.data, r.out.ref = nil, 0
	if len(e.dead)+len(e.spare) < maxSpareRPCs {
		e.dead = append(e.dead, r)
	}
}

// Recycling. An RPC is a few hundred bytes, and two are made for each
// small RPC; the endpoint reuses ended ones instead of leaving them to the
// garbage collector. end puts one aside as dead: the code that ended it
// may still read it (fail delivers its result from it), and lists that
// keep ended RPCs until they see they are dead (owedGrants) must see it
// dead. Only at the start of the next call into the endpoint (reap, from
// ReceiveLink, Run, Send and Reply) is it cleared and made spare, for
// newRPC. Every list an RPC is on lets go of it in end; owedGrants'
// entries for a reused one are skipped (grantOwed is cleared with it).

// maxSpareRPCs bounds the ended RPCs kept for reuse.
const maxSpareRPCs = 1024

// newRPC returns a zeroed RPC, a spare one when there is one.
func (e *Endpoint) newRPC() *rpc {
	if n := len(e.spare); n > 0 {
		r := e.spare[n-1]
		e.spare[n-1] = nil
		e.spare = e.spare[:n-1]
		return r
	}
	return new(rpc)
}

// reap makes the dead RPCs spare: no call that ended one is running.
func (e *Endpoint) reap() {
	for i, r := range e.dead {
		*r = rpc{}
		e.spare = append(e.spare, r)
		e.dead[i] = nil
	}
	e.dead = e.dead[:0]
}

// fail ends client RPC r with err, delivered to the application.
func (e *Endpoint) fail(r *rpc, err error) {
	e.end(r)
	r.port.deliver(Message{ID: r.id, Peer: Addr{IP: r.peer.ip, Port: r.dport}, Err: err}, r.private)
}

// lookup returns the RPC a received packet names, or nil. A client RPC
// must also match the sender's address.
func (e *Endpoint) lookup(f *wire.Frame) *rpc {
	id := wire.LocalID(f.Homa.SenderID())
	if f.IPv4 != nil { // the common case, without 16-byte addresses
		src := f.IPv4.Src()
		if wire.IsClientID(id) {
			r := e.rpcs.get(rpcKey{id: id})
			if r == nil || r.peer.v6 || r.peer.v4 != src {
				return nil
			}
			return r
		}
		return e.rpcs.getServer4(id, src)
	}
	src := f.IPv6.Src()
	if wire.IsClientID(id) {
		r := e.rpcs.get(rpcKey{id: id})
		if r == nil || r.peer.addr != src {
			return nil
		}
		return r
	}
	return e.rpcs.get(rpcKey{ip: src, id: id})
}

// unknown counts a packet for an RPC we have no state for.
func (e *Endpoint) unknown() {
	e.m.UnknownRPCs++
	e.m.drop(DropUnknownRPC)
}
