package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// The worker interface of one host: a control socket (shm.Server) whose
// sessions the host's polling loop serves. Each pass the loop takes new
// and departed sessions from the control goroutines, reads every
// session's submission ring, turns submissions into engine calls, and
// pushes the engine's results as completions (see shm/doc.go for the
// protocol). Everything below the channels is owned by the loop.

// workerLimits are the per-worker limits and region sizes.
type workerLimits struct {
	maxOutstanding int // client RPCs in flight plus requests not yet answered
	params         shm.Params
}

// workerHub serves one host's workers.
type workerHub struct {
	h      *hostLoop
	srv    *shm.Server
	lim    workerLimits
	attach chan *workerSess
	detach chan *workerSess
	// stopped is closed when the loop has stopped serving (its drain): a
	// control goroutine waiting for a detach then frees the region itself.
	stopped  chan struct{}
	stopOnce atomic.Bool
	sessions []*workerSess
	draining []*workerSess // gone, waiting for the packets still sending from their arenas
	slots    []shm.Slot    // PopBurst buffer

	counters workerCounters
}

// workerCounters are the hub's counters, by cause where they count
// refusals.
type workerCounters struct {
	Attached, Detached   uint64
	Submissions          uint64
	BadEntries           uint64 // refused by validation (an error completion each)
	Refused              uint64 // valid entries the engine refused (port in use, no such RPC, limit, ...)
	LimitRefusals        uint64 // of Refused: a per-worker limit
	NoRecvSpace          uint64 // messages that found no free receive-pool pages
	Completions          uint64
	CQBacklogged         uint64 // completions that waited in the daemon for CQ room
	Wakeups              uint64 // eventfd writes
	ARPWaits             uint64 // sends parked until the peer's address resolved
	CorruptRings         uint64 // sessions ended because a ring index was corrupt
	ZeroCopyMessages     uint64 // messages sent from the arena as external buffers (no copy)
	ActiveSessions       uint64
	OutstandingRPCs      uint64
	HeldPages, FreePages uint64
}

// workerSess is one attached worker, as the loop sees it.
type workerSess struct {
	hub *workerHub
	s   *shm.Session
	shm.EngineSide
	client  *engine.Port
	servers map[uint16]*engine.Port
	// sends are the cookie and arena range of each outgoing message the
	// engine holds: client RPCs by id, server responses by (peer, id).
	sends    map[rpcRef]sendRef
	requests map[rpcRef]*engine.Port // delivered requests not yet answered
	parked   []shm.Submission        // sends waiting for ARP
	backlog  []shm.Completion        // completions waiting for CQ room
	// Zero-copy sends: each message in flight holds an ExtBuf; after the
	// engine lets go (OutDone) it waits in releasing until its last
	// packet has left the port, and only then is the range Released.
	extFree   []*dpdk.ExtBuf
	extAll    []*dpdk.ExtBuf
	releasing []sendRef
	pushed    bool
	closing   bool
	outst     int           // client RPCs in flight plus unanswered requests
	gone      chan struct{} // closed when the loop has let the session go
}

type rpcRef struct {
	ip [4]byte // zero for client RPCs
	id uint64
}

type sendRef struct {
	cookie uint64
	offset uint64
	length uint32
	client bool
	ext    *dpdk.ExtBuf // zero-copy: the message's external buffer
	base   uint64       // ext.Released() when the message took it
}

func newWorkerHub(h *hostLoop, path string, allowUIDs, allowGIDs []int, lim workerLimits) (*workerHub, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("worker socket directory: %w", err)
	}
	hub := &workerHub{
		h: h, lim: lim,
		attach:  make(chan *workerSess, 64),
		detach:  make(chan *workerSess, 64),
		stopped: make(chan struct{}),
		slots:   make([]shm.Slot, 32),
	}
	srv, err := shm.Listen(shm.ServerConfig{
		Path: path, AllowUIDs: allowUIDs, AllowGIDs: allowGIDs, Params: lim.params,
		OnAttach: hub.onAttach, OnDetach: hub.onDetach,
	})
	if err != nil {
		return nil, err
	}
	hub.srv = srv
	return hub, nil
}

// onAttach runs on a control goroutine: it attaches the rings and hands
// the session to the loop.
func (hub *workerHub) onAttach(s *shm.Session) {
	side, err := s.EngineSide(uint32(min(hub.h.ep.MaxMessageLength(), shm.MaxMessage)))
	if err != nil {
		return // cannot happen for a region we just made; the worker then sees no traffic
	}
	ws := &workerSess{
		hub: hub, s: s, EngineSide: side,
		servers:  map[uint16]*engine.Port{},
		sends:    map[rpcRef]sendRef{},
		requests: map[rpcRef]*engine.Port{},
		gone:     make(chan struct{}),
	}
	s.Data = ws
	select {
	case hub.attach <- ws:
	case <-hub.stopped:
	}
}

// onDetach runs on a control goroutine when the worker's connection
// closes; it returns once the loop no longer touches the region (which
// the shm server then frees).
func (hub *workerHub) onDetach(s *shm.Session) {
	ws, _ := s.Data.(*workerSess)
	if ws == nil {
		return
	}
	select {
	case hub.detach <- ws:
	case <-hub.stopped:
		return
	}
	select {
	case <-ws.gone:
	case <-hub.stopped:
	}
}

// close stops the control socket; every session detaches first, while
// the loop still runs.
func (hub *workerHub) close() error { return hub.srv.Close() }

// stop is the loop's drain: it lets every session go (aborting their
// RPCs) and releases waiting control goroutines.
func (hub *workerHub) stop() {
	if hub.stopOnce.Swap(true) {
		return
	}
	for _, ws := range hub.sessions {
		ws.release()
	}
	// The loop has stopped: queued packets were sent or freed (the host
	// drains its queues before its workers), so nothing reads the arenas.
	for _, ws := range append(hub.draining, hub.sessions...) {
		ws.finish()
	}
	hub.sessions, hub.draining = nil, nil
	close(hub.stopped)
}

// poll is the loop's step: sessions in and out, submissions, completions.
// It returns the submissions it handled (work, for the idle strategy).
func (hub *workerHub) poll() int {
	before := hub.counters.Submissions
	// len of a channel is a plain load; select would take its lock on
	// every pass.
	for len(hub.attach) > 0 || len(hub.detach) > 0 {
		select {
		case ws := <-hub.attach:
			hub.sessions = append(hub.sessions, ws)
			hub.counters.Attached++
			continue
		case ws := <-hub.detach:
			hub.remove(ws)
			continue
		default:
		}
		break
	}
	for i := 0; i < len(hub.draining); i++ {
		if ws := hub.draining[i]; ws.releases() {
			ws.finish()
			hub.draining = append(hub.draining[:i], hub.draining[i+1:]...)
			i--
		}
	}
	for i := 0; i < len(hub.sessions); i++ {
		ws := hub.sessions[i]
		ws.poll()
		if ws.SQ.Corrupt() != 0 || ws.CQ.Corrupt() != 0 {
			// A broken or hostile worker: end its session (the socket
			// closes, the control goroutine frees the region).
			hub.counters.CorruptRings++
			hub.remove(ws)
			ws.s.Close()
			i--
		}
	}
	return int(hub.counters.Submissions - before)
}

// flush pushes backlogged completions and wakes sleeping workers; the
// loop calls it after the engine ran, so completions of this pass go out
// in this pass.
func (hub *workerHub) flush() {
	for _, ws := range hub.sessions {
		ws.flush()
	}
}

// snapshot copies the counters, with the sessions' gauges, into c.
func (hub *workerHub) snapshot(c *workerCounters) {
	*c = hub.counters
	c.ActiveSessions = uint64(len(hub.sessions))
	for _, ws := range hub.sessions {
		c.OutstandingRPCs += uint64(ws.outst)
		c.HeldPages += uint64(ws.Pages.Held())
		c.FreePages += uint64(ws.Pages.Free())
	}
}

func (hub *workerHub) remove(ws *workerSess) {
	for i, s := range hub.sessions {
		if s == ws {
			hub.sessions = append(hub.sessions[:i], hub.sessions[i+1:]...)
			hub.counters.Detached++
			ws.release()
			if ws.releases() {
				ws.finish()
			} else {
				hub.draining = append(hub.draining, ws)
			}
			return
		}
	}
}

// release aborts the session's RPCs and closes its ports. The region is
// freed after finish, once no packet still sends from it.
func (ws *workerSess) release() {
	if ws.closing {
		return
	}
	ws.closing = true
	if ws.client != nil {
		ws.client.Close()
	}
	for _, p := range ws.servers {
		p.Close()
	}
}

// finish lets the control goroutine free the region.
func (ws *workerSess) finish() {
	select {
	case <-ws.gone:
		return
	default:
	}
	for _, e := range ws.extAll {
		e.Close()
	}
	ws.extAll, ws.extFree, ws.releasing = nil, nil, nil
	close(ws.gone)
}

// takeExt returns a free external buffer for a zero-copy send, or nil.
func (ws *workerSess) takeExt() *dpdk.ExtBuf {
	if n := len(ws.extFree); n > 0 {
		e := ws.extFree[n-1]
		ws.extFree = ws.extFree[:n-1]
		return e
	}
	e, err := dpdk.NewExtBuf()
	if err != nil {
		return nil // sent with a copy instead
	}
	ws.extAll = append(ws.extAll, e)
	return e
}

// zeroCopyMin is the smallest message sent from the arena without a copy:
// attaching and chaining cost C calls per packet and per message, more
// than copying a packet or two.
const zeroCopyMin = 4096

// holdExt gives ref an external buffer when the port sends from memory
// and the message is long enough (zeroCopyMin);
// it returns the engine's ref (nil: copy).
func (ws *workerSess) holdExt(ref *sendRef) any {
	if !ws.hub.h.tx.multiSeg || ref.length < zeroCopyMin {
		return nil
	}
	e := ws.takeExt()
	if e == nil {
		return nil
	}
	e.Hold()
	ref.ext, ref.base = e, e.Released()
	ws.hub.counters.ZeroCopyMessages++
	return e
}

// dropExt undoes holdExt for a message the engine refused.
func (ws *workerSess) dropExt(ref *sendRef) {
	if ref.ext != nil {
		ref.ext.Unhold() // nothing was attached: released at once
		ws.extFree = append(ws.extFree, ref.ext)
		ref.ext = nil
	}
}

// releases reports Released for each zero-copy message whose last packet
// has left; it returns whether none is left waiting.
func (ws *workerSess) releases() bool {
	for i := 0; i < len(ws.releasing); {
		r := ws.releasing[i]
		if r.ext.Released() == r.base {
			i++
			continue
		}
		ws.complete(shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.offset, Length: r.length})
		ws.extFree = append(ws.extFree, r.ext)
		last := len(ws.releasing) - 1
		ws.releasing[i] = ws.releasing[last]
		ws.releasing = ws.releasing[:last]
	}
	return len(ws.releasing) == 0
}

// poll reads the submission ring.
func (ws *workerSess) poll() {
	ws.retryParked()
	hub := ws.hub
	n := ws.SQ.PopBurst(hub.slots)
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
func (ws *workerSess) refuse(sub *shm.Submission, code shm.ErrCode, counted bool) {
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

func (ws *workerSess) handle(sub *shm.Submission) {
	switch sub.Op {
	case shm.OpBind:
		ws.bind(sub)
	case shm.OpSend:
		ws.send(sub, false)
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

func (ws *workerSess) bind(sub *shm.Submission) {
	if _, mine := ws.servers[sub.Port]; mine {
		ws.refuse(sub, shm.ErrCodePortInUse, true)
		return
	}
	p, err := ws.hub.h.ep.Bind(sub.Port)
	if err != nil {
		ws.refuse(sub, errCode(err), true)
		return
	}
	p.SetHooks(ws.hooks(sub.Port))
	ws.servers[sub.Port] = p
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, Port: sub.Port})
}

// send starts a client RPC; parked is true when it comes back from
// waiting for ARP.
func (ws *workerSess) send(sub *shm.Submission, parked bool) {
	if !parked && ws.outst >= ws.hub.lim.maxOutstanding {
		ws.refuse(sub, shm.ErrCodeLimit, true)
		return
	}
	ready, failed := ws.hub.h.peerReady(sub.PeerIP)
	if !ready {
		if failed {
			if parked {
				ws.outst--
			}
			ws.refuse(sub, shm.ErrCodeUnreachable, true)
			return
		}
		if !parked {
			ws.outst++ // a parked send counts against the limit
			ws.hub.counters.ARPWaits++
		}
		ws.parked = append(ws.parked, *sub)
		return
	}
	if ws.client == nil {
		p, err := ws.hub.h.ep.OpenClient()
		if err != nil {
			if parked {
				ws.outst--
			}
			ws.refuse(sub, errCode(err), true)
			return
		}
		p.SetHooks(ws.hooks(0))
		ws.client = p
	}
	msg := ws.Arena[sub.Offset : sub.Offset+uint64(sub.Length)]
	sr := sendRef{cookie: sub.Cookie, offset: sub.Offset, length: sub.Length, client: true}
	id, err := ws.client.SendRef(engine.Addr{IP: sub.PeerIP, Port: sub.PeerPort}, msg, ws.holdExt(&sr))
	if err != nil {
		ws.dropExt(&sr)
		if parked {
			ws.outst--
		}
		ws.refuse(sub, errCode(err), true)
		return
	}
	if !parked {
		ws.outst++
	}
	ws.sends[rpcRef{id: id}] = sr
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, RPCID: id})
}

// retryParked retries the sends that waited for ARP.
func (ws *workerSess) retryParked() {
	if len(ws.parked) == 0 {
		return
	}
	parked := ws.parked
	ws.parked = nil
	for i := range parked {
		ws.send(&parked[i], true)
	}
}

func (ws *workerSess) reply(sub *shm.Submission) {
	ref := rpcRef{ip: sub.PeerIP, id: sub.RPCID}
	p := ws.requests[ref]
	if p == nil {
		ws.refuse(sub, shm.ErrCodeNoRPC, true)
		return
	}
	msg := ws.Arena[sub.Offset : sub.Offset+uint64(sub.Length)]
	sr := sendRef{cookie: sub.Cookie, offset: sub.Offset, length: sub.Length}
	err := p.ReplyRef(engine.Message{ID: sub.RPCID, Peer: engine.Addr{IP: sub.PeerIP, Port: sub.PeerPort}, Request: true}, msg, ws.holdExt(&sr))
	delete(ws.requests, ref)
	ws.outst--
	if err != nil {
		ws.dropExt(&sr)
		ws.refuse(sub, errCode(err), true)
		return
	}
	ws.sends[ref] = sr
	ws.complete(shm.Completion{Op: shm.CompAccepted, Cookie: sub.Cookie, RPCID: sub.RPCID})
}

func (ws *workerSess) abort(sub *shm.Submission) {
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
func (ws *workerSess) hooks(server uint16) engine.PortHooks {
	return engine.PortHooks{
		Deliver: func(m engine.Message) { ws.deliver(m, server) },
		RecvBuf: func(n int) ([]byte, bool) {
			if server != 0 && ws.outst >= ws.hub.lim.maxOutstanding {
				ws.hub.counters.LimitRefusals++
				return nil, false // the request is dropped; its client retries
			}
			pages := shm.PagesFor(n)
			page, ok := ws.Pages.Alloc(pages)
			if !ok {
				ws.hub.counters.NoRecvSpace++
				return nil, false
			}
			off := page * shm.PageSize
			return ws.Pool[off : off+n], true
		},
		FreeRecvBuf: func(buf []byte) {
			ws.Pages.Release(ws.pageOf(buf), shm.PagesFor(len(buf)))
		},
		OutDone: ws.outDone,
	}
}

// pageOf is the pool page a receive buffer starts on.
func (ws *workerSess) pageOf(buf []byte) int {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - uintptr(unsafe.Pointer(unsafe.SliceData(ws.Pool)))
	return int(off / shm.PageSize)
}

func (ws *workerSess) deliver(m engine.Message, port uint16) {
	if m.Err != nil { // a client RPC failed
		ws.outst--
		c := shm.Completion{Op: shm.CompError, RPCID: m.ID, Err: errCode(m.Err), PeerIP: m.Peer.IP, PeerPort: m.Peer.Port}
		if ref, ok := ws.sends[rpcRef{id: m.ID}]; ok { // OutDone already released the range
			c.Cookie = ref.cookie
			delete(ws.sends, rpcRef{id: m.ID})
		}
		ws.complete(c)
		return
	}
	page, pages := ws.pageOf(m.Data), shm.PagesFor(len(m.Data))
	ws.Pages.Deliver(page, pages)
	c := shm.Completion{RPCID: m.ID, PeerIP: m.Peer.IP, PeerPort: m.Peer.Port,
		Length: uint32(len(m.Data)), Page: uint32(page), Pages: uint32(pages)}
	if m.Request {
		c.Op = shm.CompRequest
		c.Port = port
		ws.requests[rpcRef{ip: m.Peer.IP, id: m.ID}] = ws.servers[port]
		ws.outst++
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
func (ws *workerSess) outDone(id uint64, peer engine.Addr, _ []byte) {
	ref := rpcRef{id: id}
	if id&1 == 1 { // a server RPC is named by its client too
		ref.ip = peer.IP
	}
	s, ok := ws.sends[ref]
	if !ok {
		return
	}
	if !s.client {
		delete(ws.sends, ref) // a client's entry stays for its result's cookie
	}
	if s.ext != nil { // packets may still be sending from the arena
		s.ext.Unhold()
		ws.releasing = append(ws.releasing, s)
		ws.releases() // all gone already: Released now
		return
	}
	ws.complete(shm.Completion{Op: shm.CompReleased, Cookie: s.cookie, Offset: s.offset, Length: s.length})
}

// complete pushes c, or keeps it (in order) until the ring has room.
func (ws *workerSess) complete(c shm.Completion) {
	if ws.closing {
		return
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

func (ws *workerSess) flush() {
	if len(ws.releasing) > 0 {
		ws.releases()
	}
	for len(ws.backlog) > 0 {
		var slot shm.Slot
		ws.backlog[0].Encode(&slot)
		if !ws.CQ.Push(&slot) {
			break
		}
		ws.backlog = ws.backlog[1:]
		ws.pushed = true
	}
	if ws.pushed {
		ws.pushed = false
		if ws.CQ.TakeWaiter() {
			ws.hub.counters.Wakeups++
			ws.s.Wake()
		}
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
	case errors.Is(err, engine.ErrMessageLength):
		return shm.ErrCodeBadLength
	}
	return shm.ErrCodeClosed
}
