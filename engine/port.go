package engine

import (
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The application's side of the endpoint: ports, their messages, and
// the calls that send, answer, wait for and end RPCs.

// Addr names a Homa port on a host. IP is an IPv4 address (an
// IPv4-mapped IPv6 one is taken as that IPv4 address).
type Addr struct {
	IP   netip.Addr
	Port uint16
}

// Message is what a port delivers: a request to a server port, or the
// result of a client RPC (its response, or the error that ended it).
type Message struct {
	ID      uint64 // local id: the server's id (client id ^ 1) for a request, the client id for a result
	Peer    Addr   // the other end of the RPC
	Request bool   // a request to answer with Reply
	Data    []byte // the message; the application owns it
	Err     error  // why the client RPC failed (Data nil)
}

// Port is a Homa socket: a server port (Bind) receives requests and may
// also send requests; a client port (OpenClient) only sends them. Owned
// by the endpoint's goroutine.
type Port struct {
	e       *Endpoint
	num     uint16
	server  bool
	closed  bool                // Shut or Close: the number is free, nothing new starts
	ended   bool                // Close: every RPC of the port has ended
	queue   []Message           // delivered, not yet taken by Receive
	head    int                 // first untaken entry of queue
	private map[uint64]*Message // results of private RPCs, by id (nil = pending)
	hooks   PortHooks
}

// PortHooks let a port's owner — the worker interface, which keeps
// messages in shared memory — take over where received messages are
// reassembled, how they are delivered, and when sent ones are let go.
// Zero fields keep the defaults (a new slice per message, Receive/Wait).
// The hooks run on the endpoint's goroutine, inside engine calls; they
// must not call back into the endpoint.
type PortHooks struct {
	// Deliver takes every message the port completes or fails, in place
	// of the Receive queue and Wait.
	Deliver func(m Message)
	// RecvBuf returns the buffer, at least n bytes, that an incoming
	// message of n bytes is reassembled into, or false when there is
	// none: a request is then dropped (its client retries after
	// RESEND/RPC_UNKNOWN); a response waits if RecvBufFits says a
	// buffer of n bytes can come free (its committing packet is dropped
	// and the RPC asks for it again by RESEND, as after a loss, so it is
	// asked again then), and otherwise ends its RPC with
	// ErrNoBufferSpace; every refusal counts DropNoRecvSpace.
	//
	// It is asked when the message is committed, with n the message's
	// length, again after a refusal, and never for a length a peer merely
	// claims. Until then the endpoint keeps the message's bytes in its
	// own staging memory (Config.MaxStagingBytes). A message is committed
	// by the packet that brings its arrived bytes to min(n, C), where C is
	// Config.UnschedBytes (at most 64 KiB) rounded up to whole packets:
	// a message of at most C bytes when its last byte arrives, so a
	// single-packet message at once; a longer one once C of its bytes
	// have arrived; either sooner, once a full packet has and n (in
	// whole RecvBufUnit) is at most 16 times the bytes that have. When
	// RecvBuf refuses, a request of the same memory (RecvPool) still
	// arriving may be ended to make room, and RecvBuf asked again
	// (recvpool.go). At that call the staged bytes are copied into the
	// buffer, the committing packet's and all later ones are written into
	// it in place, and the buffer is handed over whole (Deliver) once the
	// last byte has arrived. A peer can thus make the port commit n bytes
	// only by first sending min(n, C) bytes of the message, or 1/16 of n
	// in units.
	RecvBuf func(n int) ([]byte, bool)
	// RecvBufFits reports whether RecvBuf can ever have n bytes (the
	// owner's whole memory is that large), so that a response it refuses
	// now waits for space instead of failing. nil: never.
	RecvBufFits func(n int) bool
	// FreeRecvBuf takes back a buffer from RecvBuf whose message ended
	// before it was delivered.
	FreeRecvBuf func(buf []byte)
	// RecvBufUnit is the unit, bytes, in which RecvBuf gives memory (a
	// worker pool's 64 KB page): a message of n bytes holds n rounded up
	// to it, and the early-commit rule counts that (0 or 1: n bytes).
	// RecvPool names the memory RecvBuf takes from: ports with the same
	// non-nil RecvPool share it, so a held request of one may be evicted
	// for a message of another (recvpool.go); nil: the port's own.
	RecvBufUnit int
	RecvPool    any
	// OutDone reports that the engine no longer reads msg, the outgoing
	// message of RPC id (with peer: the other end) given to Send or
	// Reply: the client RPC ended, or the server RPC's response was
	// acknowledged or abandoned.
	OutDone func(id uint64, peer Addr, msg []byte)
}

// SetHooks installs h on the port; set them before the port is used.
func (p *Port) SetHooks(h PortHooks) { p.hooks = h }

// Bind opens server port num (1..0x7fff). On a shard with Shard.Homes the
// port is bound on this shard alone, which then takes all its RPCs; it
// fails with ErrPortInUse while another shard holds the number.
func (e *Endpoint) Bind(num uint16) (*Port, error) {
	if num == 0 || num >= clientPortMin {
		return nil, ErrBadPort
	}
	if e.ports[num] != nil {
		return nil, ErrPortInUse
	}
	if s := &e.cfg.Shard; s.Count > 1 && s.Homes != nil && !s.Homes.claim(num, s.Index) {
		return nil, ErrPortInUse // bound on another shard
	}
	p := &Port{e: e, num: num, server: true, private: make(map[uint64]*Message)}
	e.ports[num] = p
	return p, nil
}

// OpenClient opens a client port (0x8000 and up).
func (e *Endpoint) OpenClient() (*Port, error) {
	for range 0x8000 {
		num := e.nextClientPort
		e.nextClientPort++
		if e.nextClientPort < clientPortMin {
			e.nextClientPort = clientPortMin
		}
		if e.ports[num] == nil {
			p := &Port{e: e, num: num, private: make(map[uint64]*Message)}
			e.ports[num] = p
			return p, nil
		}
	}
	return nil, ErrPortInUse
}

// Num returns the port number.
func (p *Port) Num() uint16 { return p.num }

// Send starts an RPC: msg goes to dst as a request and the response
// arrives through Receive. It returns the RPC's id. msg is read while
// the RPC lives; do not change it until the result arrives.
//
// It fails with ErrPeerUnknown when there is no route to dst.IP or its
// neighbour entry has failed (LinkUnreachable). While the entry resolves
// (LinkResolving) the RPC starts and its packets wait: NeighbourReady
// sends them, NeighbourFailed fails the RPC with ErrPeerUnknown, and
// after TimeoutTicks of waiting it fails with ErrTimeout. A message of 0
// bytes or above Config.MaxMessageLength fails with ErrMessageLength, one
// above wire.MaxMessageLength to a peer Config.KernelPeer names with
// ErrPeerMessageLength.
func (p *Port) Send(dst Addr, msg []byte) (uint64, error) { return p.send(dst, msg, 0, false, -1) }

// SendRef is Send for a message whose memory the transmit side can send
// from without a copy (DataSender): ref is the owner's reference for it,
// passed with each DATA packet (0: none, the payload is copied). The owner learns from PortHooks.OutDone
// when the engine stops reading msg; the packets already handed to the
// transmit side may still read it after that, until the transmit side
// (through ref) says they are gone.
func (p *Port) SendRef(dst Addr, msg []byte, ref PayloadRef) (uint64, error) {
	return p.send(dst, msg, ref, false, -1)
}

// SendRefAt is SendRef for a request whose unscheduled packets go at
// priority prio (0 lowest to wire.NumPriorities-1) instead of the level
// its length gives under the peer's cutoffs; prio < 0 is SendRef. The
// receiver still grants the rest at priorities of its choosing (a
// sender has no say in them, in Homa). It fails with ErrPriority for a
// prio above the highest.
func (p *Port) SendRefAt(dst Addr, msg []byte, ref PayloadRef, prio int) (uint64, error) {
	if prio >= wire.NumPriorities {
		return 0, ErrPriority
	}
	return p.send(dst, msg, ref, false, prio)
}

// SendPrivate is Send for a private RPC: its result is taken only with
// Wait(id), never by Receive.
func (p *Port) SendPrivate(dst Addr, msg []byte) (uint64, error) {
	return p.send(dst, msg, 0, true, -1)
}

func (p *Port) send(dst Addr, msg []byte, ref PayloadRef, private bool, prio int) (uint64, error) {
	e := p.e
	e.now = e.cfg.Clock()
	if len(e.dead) > 0 {
		e.reap()
	}
	if p.closed {
		return 0, ErrClosed
	}
	if len(msg) < 1 || len(msg) > e.cfg.MaxMessageLength {
		return 0, ErrMessageLength
	}
	ip, ok := e.addrKey(dst.IP)
	if !ok {
		return 0, ErrAddress
	}
	pe := e.peerFor(ip)
	if pe == nil || !pe.resolvable() {
		return 0, ErrPeerUnknown
	}
	if len(msg) > pe.maxMessage {
		return 0, ErrPeerMessageLength
	}
	r := e.newRPC()
	r.id, r.port, r.peer, r.dport, r.client, r.private = e.nextID, p, pe, dst.Port, true, private
	r.startNs = e.now
	r.upstream = pe.upstream
	e.nextID += e.idStep
	if e.nextID < e.idStep {
		e.nextID = firstShardID(e.idStep, e.cfg.Shard) // wrapped: 0 means "no RPC" in an ack
	}
	e.insert(rpcKey{id: r.id}, r)
	if private {
		p.private[r.id] = nil
	}
	// Until its response starts, the RPC may bring up to our current
	// allowance unscheduled (incast control).
	r.allowance = e.incast.Allowance()
	r.incastBytes = r.allowance
	e.incast.Add(r.incastBytes)
	e.startOut(r, msg, ref, prio)
	return r.id, nil
}

// Reply sends resp as the response to req, a request from Receive.
func (p *Port) Reply(req Message, resp []byte) error { return p.ReplyRef(req, resp, 0) }

// ReplyRef is Reply for a response sent from its own memory, as SendRef.
//
// A response to a client whose address has no route or failed to resolve
// (Config.Resolve, asked again, says so) is discarded, as kernel Homa
// discards it: the RPC ends, counted in ServerResponsesUnresolved, and
// ReplyRef returns nil. One to a client whose address is resolving waits
// for it, as Send's packets do. A response too long for the client
// (ErrMessageLength, ErrPeerMessageLength as for Send) leaves the request
// in service, to be answered again.
func (p *Port) ReplyRef(req Message, resp []byte, ref PayloadRef) error {
	e := p.e
	e.now = e.cfg.Clock()
	ip, _ := e.addrKey(req.Peer.IP)
	r := e.rpcs.get(rpcKey{ip: ip, id: req.ID})
	if r == nil || r.client || r.port != p || r.state != stateInService {
		return ErrNoRPC
	}
	if len(resp) < 1 || len(resp) > e.cfg.MaxMessageLength {
		return ErrMessageLength
	}
	if len(resp) > r.peer.maxMessage {
		return ErrPeerMessageLength // still in service: a shorter reply may follow
	}
	r.state = stateOutgoing
	r.silentTicks = 0
	e.reresolve(r.peer)
	e.startOut(r, resp, ref, -1)
	return nil
}

// startOut begins sending msg (with the owner's ref, or 0) as r's
// outgoing message, its unscheduled bytes at priority prio (< 0: the
// level the peer's cutoffs give its length).
func (e *Endpoint) startOut(r *rpc, msg []byte, ref PayloadRef, prio int) {
	o := &r.out
	o.data, o.length, o.ref = msg, len(msg), ref
	// Unscheduled bytes end on a packet boundary (as in the kernel).
	u := e.unschedBytes(r.peer)
	o.unsched = min(o.length, roundUp(u, r.peer.payload))
	if r.upstream {
		o.unsched = o.length // the upstream subset never grants: the whole message goes unscheduled
	}
	o.granted = o.unsched
	o.unschedPrio = r.peer.cutoffs.Priority(o.length)
	if prio >= 0 {
		o.unschedPrio = prio
	}
	o.schedPrio = 0
	e.xmitReady(r)
}

// Receive returns the next request (server port) or non-private RPC
// result, if any.
func (p *Port) Receive() (Message, bool) {
	if p.head == len(p.queue) {
		return Message{}, false
	}
	m := p.queue[p.head]
	p.queue[p.head] = Message{}
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
	}
	return m, true
}

// Wait returns the result of private RPC id once it has one; ok is false
// while it is pending. It returns ErrNoRPC for an id that is not a
// private RPC of this port.
func (p *Port) Wait(id uint64) (m Message, ok bool, err error) {
	res, known := p.private[id]
	if !known {
		return Message{}, false, ErrNoRPC
	}
	if res == nil {
		return Message{}, false, nil
	}
	delete(p.private, id)
	return *res, true, nil
}

// Abort ends client RPC id with ErrAborted (delivered like any result).
func (p *Port) Abort(id uint64) error {
	r := p.e.rpcs.get(rpcKey{id: id})
	if r == nil || r.port != p {
		return ErrNoRPC
	}
	p.e.fail(r, ErrAborted)
	return nil
}

// AbortAll ends every client RPC of the port with ErrAborted and drops
// its server RPCs.
func (p *Port) AbortAll() {
	e := p.e
	for r := e.first; r != nil; {
		next := r.next
		if r.port == p {
			if r.client {
				e.fail(r, ErrAborted)
			} else {
				e.end(r)
			}
		}
		r = next
	}
}

// Close aborts the port's RPCs, discards undelivered messages and frees
// the port number: Shut, then the responses Shut let go on end too.
func (p *Port) Close() {
	p.Shut()
	if p.ended {
		return
	}
	p.ended = true
	p.AbortAll() // after Shut: only server RPCs sending their responses
}

// Shut closes the port as a TCP close does, delivering what was
// written: the responses it is sending (or whose acks it awaits) go on,
// and everything else ends. Its client RPCs fail with ErrAborted
// (delivered), its requests still arriving or waiting for Reply are
// dropped, undelivered messages are discarded and the port number is
// freed, so a request to it now is answered ICMP port unreachable, as is
// a RESEND for an RPC of it the endpoint no longer has (handleResend):
// its clients learn that the server closed (ErrPortUnreachable), not
// that it restarted. Send then fails with ErrClosed, and Reply to a
// request it dropped with ErrNoRPC. Close ends the responses still
// going, and must follow Shut in any case; the owner learns of each
// response's end from PortHooks.OutDone.
func (p *Port) Shut() {
	if p.closed {
		return
	}
	e := p.e
	for r := e.first; r != nil; {
		next := r.next
		if r.port == p {
			switch {
			case r.client:
				e.fail(r, ErrAborted)
			case r.state != stateOutgoing:
				e.end(r)
			}
		}
		r = next
	}
	p.closed = true
	p.queue, p.head, p.private = nil, 0, nil
	if e.ports[p.num] == p { // another port may hold the number by now
		delete(e.ports, p.num)
		if s := &e.cfg.Shard; p.server && s.Count > 1 && s.Homes != nil {
			s.Homes.release(p.num, s.Index)
		}
	}
}

// deliver hands m to the application: to Wait for a private RPC, else to
// Receive.
func (p *Port) deliver(m Message, private bool) {
	if p.closed {
		return
	}
	if p.hooks.Deliver != nil {
		p.hooks.Deliver(m)
		return
	}
	if private {
		res := new(Message) // here only: taking m's address would move every m to the heap
		*res = m
		p.private[m.ID] = res
		return
	}
	p.queue = append(p.queue, m)
}
