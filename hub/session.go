package hub

import (
	"errors"
	"net/netip"
	"unsafe"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// session is one attached worker, as the loop sees it.
type session struct {
	hub *Hub
	s   *shm.Session
	shm.EngineSide
	client  *engine.Port
	servers map[uint16]*engine.Port
	// sends are the cookie and arena range of each outgoing message the
	// engine holds: client RPCs by id, server responses by (peer, id).
	sends    map[rpcRef]sendRef
	requests map[rpcRef]*engine.Port // delivered requests not yet answered
	backlog  []shm.Completion        // completions waiting for CQ room, at most MaxBacklog
	stalled  bool                    // the backlog is full: the SQ waits unread (counted once)
	overflow bool                    // a completion found the backlog full: the session ends at the next Poll
	// Zero-copy sends: each message in flight holds a payload reference
	// of the host's; after the engine lets go (OutDone) it waits in
	// releasing until its last packet has left the port, and only then
	// is the range Released.
	releasing []sendRef
	pushed    bool
	closing   bool          // its worker left or it is let go: nothing more goes to its completion ring
	released  bool          // release ran: its ports are closed
	replying  int           // replies the engine sends or awaits acks for (sends of server RPCs)
	lingerEnd int64         // lingering: when its replies still going are abandoned (ns, the loop's clock)
	outst     int           // client RPCs in flight plus requests committed (filling or unanswered)
	state     sessionState  // where it is in its life (lifecycle.go)
	copyMark  uint64        // let go: the host's copy mark then; the region is freed once the copier is past it
	gone      chan struct{} // closed when the loop has let the session go
}

type rpcRef struct {
	ip netip.Addr // the zero Addr for client RPCs
	id uint64
}

type sendRef struct {
	cookie uint64
	offset uint64
	length uint32
	client bool
	ref    engine.PayloadRef // zero-copy: the host's payload reference, or 0
}

// release aborts the session's RPCs and closes its ports. The region is
// freed after finish, once no packet still sends from it.
func (ws *session) release() {
	if ws.released {
		return
	}
	ws.released, ws.closing = true, true
	if ws.client != nil {
		ws.client.Close()
	}
	for _, p := range ws.servers {
		p.Close()
	}
}

// finish lets the control goroutine free the region.
func (ws *session) finish() {
	if ws.state == stateGone {
		return
	}
	ws.state = stateGone
	ws.releasing = nil // the host frees its payload buffers at its drain
	ws.hub.load.Add(-1)
	close(ws.gone)
}

// holdPayload gives s a payload reference when the port sends from
// memory and the message is long enough (Config.ZeroCopyMin); it returns
// the engine's ref (0: copy), and counts which way the message went.
func (ws *session) holdPayload(s *sendRef) engine.PayloadRef {
	c := &ws.hub.counters
	switch least := ws.hub.lim.ZeroCopyMin; {
	case least < 0:
		c.CopiedOff++
		return 0
	case int(s.length) < least:
		c.CopiedShort++
		return 0
	}
	r, ok := ws.hub.h.HoldPayload()
	if !ok {
		c.CopiedDevice++
		return 0
	}
	s.ref = r
	c.ZeroCopyMessages++
	return r
}

// dropPayload undoes holdPayload for a message the engine refused.
func (ws *session) dropPayload(s *sendRef) {
	if s.ref != 0 {
		ws.hub.h.LetGoPayload(s.ref) // nothing was attached: free at once
		ws.hub.h.PayloadSent(s.ref)
		s.ref = 0
	}
}

// releases reports Released for each zero-copy message whose last packet
// has left; it returns whether none is left waiting.
func (ws *session) releases() bool {
	for i := 0; i < len(ws.releasing); {
		r := ws.releasing[i]
		if !ws.hub.h.PayloadSent(r.ref) {
			i++
			continue
		}
		ws.complete(shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.offset, Length: r.length})
		last := len(ws.releasing) - 1
		ws.releasing[i] = ws.releasing[last]
		ws.releasing = ws.releasing[:last]
	}
	return len(ws.releasing) == 0
}

// Backlog. Completions that find the CQ full wait in ws.backlog, in
// order, and Flush pushes them as the worker makes room. A worker that
// does not read its CQ must not make the daemon hold more than
// MaxBacklog of them, so:
//
//   - poll reads no more submissions than the backlog has room for, and
//     none while it is full: each submission is answered by at most one
//     completion at once, so refusals and answers alone never pass the
//     bound (the errors AbortAll brings, one per client RPC, are RPCs
//     ending, as below). The submissions wait in the worker's own SQ,
//     which fills: that is the worker's refusal, and it costs the
//     daemon nothing (no error completion, which would need room
//     itself). Counted once per episode (BacklogFull).
//   - requests to the worker's ports are dropped while the backlog is
//     full (their clients retry), counted in LimitRefusals.
//   - a completion the engine still owes when the backlog is full (a
//     response, a failure or a release of an RPC already under way)
//     ends the session at the next Poll (BacklogOverflows): the worker
//     is not reading, and its RPCs are aborted with it.

// backlogFull reports whether the backlog is at its bound.
func (ws *session) backlogFull() bool { return len(ws.backlog) >= ws.hub.lim.MaxBacklog }

// poll reads the submission ring, as far as the backlog has room.
func (ws *session) poll() {
	hub := ws.hub
	if len(ws.backlog) > 0 {
		ws.pushBacklog() // room the worker made since the last Flush
	}
	room := hub.lim.MaxBacklog - len(ws.backlog)
	if room <= 0 || ws.overflow {
		if !ws.stalled {
			ws.stalled = true
			hub.counters.BacklogFull++
		}
		return
	}
	ws.stalled = false
	n := ws.SQ.PopBurst(hub.slots[:min(len(hub.slots), room)])
	for i := range n {
		hub.counters.Submissions++
		sub, code := shm.ParseSubmission(&hub.slots[i], &ws.Limits)
		if code != shm.ErrCodeNone {
			hub.counters.BadEntries++
			ws.refuse(&sub, code, false)
			continue
		}
		ws.handle(&sub)
	}
}

// refuse answers a submission with an error completion; Send and Reply
// also release their arena range, which the engine never read.
func (ws *session) refuse(sub *shm.Submission, code shm.ErrCode, counted bool) {
	if counted {
		ws.hub.counters.Refused++
		if code == shm.ErrCodeLimit {
			ws.hub.counters.LimitRefusals++
		}
	}
	c := shm.Completion{Op: shm.CompError, Cookie: sub.Cookie, Err: code}
	if sub.Op == shm.OpSend || sub.Op == shm.OpReply {
		c.Flags = shm.CompFlagReleased
		c.RPCID = sub.RPCID
	}
	if sub.Op == shm.OpAbort {
		c.RPCID = sub.RPCID
	}
	ws.complete(c)
}

func (ws *session) handle(sub *shm.Submission) {
	// Pages riding on a Send or Reply go back first, and stay back
	// whatever becomes of the message (FeatureReturnOnSubmit).
	if sub.Pages != 0 && sub.Op != shm.OpReturnPages {
		if !ws.Pages.Return(sub.Page, sub.Pages) {
			ws.refuse(sub, shm.ErrCodeBadPage, true)
			return
		}
		ws.hub.counters.PagesOnSubmit++
	}
	switch sub.Op {
	case shm.OpBind:
		ws.bind(sub)
	case shm.OpSend:
		ws.send(sub)
	case shm.OpReply:
		ws.reply(sub)
	case shm.OpAbort:
		ws.abort(sub)
	case shm.OpAbortAll:
		if ws.client != nil {
			ws.client.AbortAll()
		}
		ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie})
	case shm.OpReturnPages:
		if !ws.Pages.Return(sub.Page, sub.Pages) {
			ws.refuse(sub, shm.ErrCodeBadPage, true)
		}
	}
}

func (ws *session) bind(sub *shm.Submission) {
	if _, mine := ws.servers[sub.Port]; mine {
		ws.refuse(sub, shm.ErrCodePortInUse, true)
		return
	}
	p, err := ws.hub.ep.Bind(sub.Port)
	if err != nil {
		ws.refuse(sub, errCode(err), true)
		return
	}
	p.SetHooks(ws.hooks(sub.Port))
	ws.servers[sub.Port] = p
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, Port: sub.Port})
}

// send starts a client RPC. A peer whose address is still being
// resolved is the engine's business: it keeps the RPC until the address
// is known (or fails it).
func (ws *session) send(sub *shm.Submission) {
	if ws.outst >= ws.hub.lim.MaxOutstanding {
		ws.refuse(sub, shm.ErrCodeLimit, true)
		return
	}
	if ws.client == nil {
		p, err := ws.hub.ep.OpenClient()
		if err != nil {
			ws.refuse(sub, errCode(err), true)
			return
		}
		p.SetHooks(ws.hooks(0))
		ws.client = p
	}
	msg := ws.Arena[sub.Offset : sub.Offset+uint64(sub.Length)]
	sr := sendRef{cookie: sub.Cookie, offset: sub.Offset, length: sub.Length, client: true}
	prio := sub.Priority()
	id, err := ws.client.SendRefAt(engine.Addr{IP: shm.PeerAddr(sub.PeerIP, sub.PeerIP6), Port: sub.PeerPort}, msg, ws.holdPayload(&sr), prio)
	if err != nil {
		ws.dropPayload(&sr)
		ws.refuse(sub, errCode(err), true)
		return
	}
	ws.outst++
	if prio >= 0 {
		ws.hub.counters.PrioritySends++
	}
	ws.sends[rpcRef{id: id}] = sr
	ws.accept(sub, id)
}

func (ws *session) reply(sub *shm.Submission) {
	ref := rpcRef{ip: shm.PeerAddr(sub.PeerIP, sub.PeerIP6), id: sub.RPCID}
	p := ws.requests[ref]
	if p == nil {
		ws.refuse(sub, shm.ErrCodeNoRPC, true)
		return
	}
	msg := ws.Arena[sub.Offset : sub.Offset+uint64(sub.Length)]
	sr := sendRef{cookie: sub.Cookie, offset: sub.Offset, length: sub.Length}
	err := p.ReplyRef(engine.Message{ID: sub.RPCID, Peer: engine.Addr{IP: shm.PeerAddr(sub.PeerIP, sub.PeerIP6), Port: sub.PeerPort}, Request: true}, msg, ws.holdPayload(&sr))
	if errors.Is(err, engine.ErrMessageLength) {
		// Too long for the client (a peer that may run kernel Homa):
		// the request is still in service, for a shorter reply.
		ws.dropPayload(&sr)
		ws.refuse(sub, errCode(err), true)
		return
	}
	delete(ws.requests, ref)
	ws.outst--
	if err != nil {
		ws.dropPayload(&sr)
		ws.refuse(sub, errCode(err), true)
		return
	}
	ws.sends[ref] = sr
	ws.replying++
	ws.accept(sub, sub.RPCID)
}

// accept answers an accepted Send or Reply, unless it asked to be quiet.
func (ws *session) accept(sub *shm.Submission, id uint64) {
	if sub.Flags&shm.SubFlagQuiet != 0 {
		ws.hub.counters.QuietAccepts++
		return
	}
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, RPCID: id})
}

func (ws *session) abort(sub *shm.Submission) {
	if ws.client == nil || ws.client.Abort(sub.RPCID) != nil {
		ws.refuse(sub, shm.ErrCodeNoRPC, true)
		return
	}
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, RPCID: sub.RPCID})
}

// hooks are the engine's view of the session's memory: messages are
// reassembled straight into the receive pool and delivered as
// completions; sent messages are read from the arena until OutDone.
// A server port's hooks carry its number (server); a client port's, 0.
//
// The engine asks RecvBuf only when a message is committed (its first
// min(length, unscheduled bytes) have arrived, or 1/16 of the pages it
// takes: RecvBufUnit), never for a length a packet merely claims; and a
// request counts toward MaxOutstanding from that moment, filling or
// delivered, until it is answered or ends. So a stranger's packets
// reserve no pages until it has sent real bytes, at most 16 times them
// in pages (25.4 times for a 1 MB request: 16 pages once its 41,296
// unscheduled bytes are in), and at most MaxOutstanding requests'
// worth; when the pool is short, its requests that have gone silent, or
// that hold more of the pool than a newcomer's peer, give their pages
// up (RecvPool: every port of the session shares the pool).
func (ws *session) hooks(server uint16) engine.PortHooks {
	return engine.PortHooks{
		RecvBufUnit: shm.PageSize,
		RecvPool:    ws,
		Deliver:     func(m engine.Message) { ws.deliver(m, server) },
		RecvBuf: func(n int) ([]byte, bool) {
			if server != 0 && (ws.outst >= ws.hub.lim.MaxOutstanding || ws.backlogFull()) {
				ws.hub.counters.LimitRefusals++
				return nil, false // the request is dropped; its client retries
			}
			pages := shm.PagesFor(n)
			page, ok := ws.Pages.Alloc(pages)
			if !ok {
				ws.hub.counters.NoRecvSpace++
				return nil, false
			}
			if server != 0 {
				ws.outst++ // a request counts from its commit, not its delivery
			}
			off := page * shm.PageSize
			return ws.Pool[off : off+n], true
		},
		// A response that fits in the whole pool waits for pages (the
		// engine asks again) instead of failing its RPC.
		RecvBufFits: func(n int) bool { return shm.PagesFor(n) <= ws.Pages.Pages() },
		FreeRecvBuf: func(buf []byte) { // a message that ended before delivery
			ws.Pages.Release(ws.pageOf(buf), shm.PagesFor(len(buf)))
			if server != 0 {
				ws.outst--
			}
		},
		OutDone: ws.outDone,
	}
}

// pageOf is the pool page a receive buffer starts on.
func (ws *session) pageOf(buf []byte) int {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - uintptr(unsafe.Pointer(unsafe.SliceData(ws.Pool)))
	return int(off / shm.PageSize)
}

func (ws *session) deliver(m engine.Message, port uint16) {
	if m.Err != nil { // a client RPC failed
		ws.outst--
		c := shm.Completion{Op: shm.CompError, RPCID: m.ID, Err: errCode(m.Err), PeerPort: m.Peer.Port}
		c.PeerIP, c.PeerIP6 = shm.PeerFields(m.Peer.IP)
		if ref, ok := ws.sends[rpcRef{id: m.ID}]; ok { // OutDone already released the range
			c.Cookie = ref.cookie
			delete(ws.sends, rpcRef{id: m.ID})
		}
		ws.complete(c)
		return
	}
	page, pages := ws.pageOf(m.Data), shm.PagesFor(len(m.Data))
	ws.Pages.Deliver(page, pages)
	c := shm.Completion{RPCID: m.ID, PeerPort: m.Peer.Port,
		Length: uint32(len(m.Data)), Page: uint32(page), Pages: uint32(pages)}
	c.PeerIP, c.PeerIP6 = shm.PeerFields(m.Peer.IP)
	if m.Request {
		c.Op = shm.CompRequest
		c.Port = port
		ws.requests[rpcRef{ip: m.Peer.IP.Unmap(), id: m.ID}] = ws.servers[port] // counted in outst since RecvBuf
	} else {
		c.Op = shm.CompResponse
		ws.outst--
		if ref, ok := ws.sends[rpcRef{id: m.ID}]; ok {
			c.Cookie = ref.cookie
			delete(ws.sends, rpcRef{id: m.ID})
		}
	}
	ws.complete(c)
}

// outDone: the engine no longer reads an outgoing message.
func (ws *session) outDone(id uint64, peer engine.Addr, _ []byte) {
	ref := rpcRef{id: id}
	if id&1 == 1 { // a server RPC is named by its client too
		ref.ip = peer.IP.Unmap()
	}
	s, ok := ws.sends[ref]
	if !ok {
		return
	}
	if !s.client {
		delete(ws.sends, ref) // a client's entry stays for its result's cookie
		ws.replying--
	}
	if s.ref != 0 { // packets may still be sending from the arena
		ws.hub.h.LetGoPayload(s.ref)
		ws.releasing = append(ws.releasing, s)
		ws.releases() // all gone already: Released now
		return
	}
	ws.complete(shm.Completion{Op: shm.CompReleased, Cookie: s.cookie, Offset: s.offset, Length: s.length})
}

// complete pushes c, or keeps it (in order) until the ring has room; one
// that finds the backlog full ends the session instead ("Backlog").
func (ws *session) complete(c shm.Completion) {
	if ws.closing || ws.overflow {
		return
	}
	if ws.backlogFull() {
		ws.pushBacklog() // the worker may have made room since the last Flush
		if ws.backlogFull() {
			ws.overflow = true // the loop ends the session; nothing more is kept for it
			return
		}
	}
	ws.hub.counters.Completions++
	if len(ws.backlog) == 0 {
		var slot shm.Slot
		c.Encode(&slot)
		if ws.CQ.Push(&slot) {
			ws.pushed = true
			return
		}
	}
	ws.hub.counters.CQBacklogged++
	ws.backlog = append(ws.backlog, c)
}

func (ws *session) flush() {
	if len(ws.releasing) > 0 {
		ws.releases()
	}
	ws.pushBacklog()
	if ws.pushed {
		ws.pushed = false
		if ws.CQ.TakeWaiter() {
			ws.hub.counters.Wakeups++
			ws.s.Wake()
		}
	}
}

// pushBacklog moves backlogged completions into the CQ while it has room.
func (ws *session) pushBacklog() {
	k := 0
	for ; k < len(ws.backlog); k++ {
		var slot shm.Slot
		ws.backlog[k].Encode(&slot)
		if !ws.CQ.Push(&slot) {
			break
		}
	}
	if k > 0 {
		ws.backlog = ws.backlog[:copy(ws.backlog, ws.backlog[k:])]
		ws.pushed = true
	}
}

// errCode maps an engine error to the code a worker sees.
func errCode(err error) shm.ErrCode {
	switch {
	case errors.Is(err, engine.ErrTimeout):
		return shm.ErrCodeTimeout
	case errors.Is(err, engine.ErrPeerUnknown):
		return shm.ErrCodeUnreachable
	case errors.Is(err, engine.ErrPortUnreachable):
		return shm.ErrCodePortUnreachable
	case errors.Is(err, engine.ErrAborted):
		return shm.ErrCodeAborted
	case errors.Is(err, engine.ErrNoBufferSpace):
		return shm.ErrCodeNoBufferSpace
	case errors.Is(err, engine.ErrNoRPC):
		return shm.ErrCodeNoRPC
	case errors.Is(err, engine.ErrPortInUse):
		return shm.ErrCodePortInUse
	case errors.Is(err, engine.ErrPeerRestarted):
		return shm.ErrCodePeerRestarted
	case errors.Is(err, engine.ErrClosed):
		return shm.ErrCodeClosed
	case errors.Is(err, engine.ErrPeerMessageLength):
		return shm.ErrCodePeerMessageLength
	case errors.Is(err, engine.ErrMessageLength):
		return shm.ErrCodeBadLength
	}
	return shm.ErrCodeClosed
}
