package shmtest

import "github.com/homa-dpdk/homa-dpdk/shm"

// rpc is one client RPC, from its Send until its Response or Error (and,
// when its client aborted, until its server replies).
type rpc struct {
	client *session
	server *session // the worker that bound the destination port; nil for a scripted port
	cookie uint64   // the Send's
	off    uint64   // the request's range in the client's arena
	n      uint32
	port   uint16 // the destination port
	msg    []byte // a copy of the request while it waits for pages at its server; nil once delivered
	ended  bool   // ended at its client (aborted, or the client left); its server still holds it
}

// handle serves one submission, copied out of its slot.
func (e *Engine) handle(ws *session, slot *shm.Slot) {
	ws.submissions++
	s, code := shm.ParseSubmission(slot, &ws.side.Limits)
	if code != shm.ErrCodeNone {
		e.bad++
		ws.badSubmissions++
		if e.cfg.Logf != nil {
			e.cfg.Logf("session %d: bad submission %+v: %v", ws.index, s, code)
		}
		c := shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: code}
		if s.Op == shm.OpSend || s.Op == shm.OpReply {
			c.Flags = shm.CompFlagReleased // the engine never read its range
		}
		e.emit(ws, c)
		return
	}
	if s.Pages != 0 && s.Op != shm.OpReturnPages { // pages riding on a Send or Reply
		if !ws.side.Pages.Return(s.Page, s.Pages) {
			e.emit(ws, shm.Completion{Op: shm.CompError, Flags: shm.CompFlagReleased, Cookie: s.Cookie,
				RPCID: s.RPCID, Err: shm.ErrCodeBadPage})
			return
		}
		ws.pagesOnSubmit++
	}
	switch s.Op {
	case shm.OpBind:
		e.bind(ws, &s)
	case shm.OpSend:
		e.send(ws, &s)
	case shm.OpReply:
		e.reply(ws, &s)
	case shm.OpAbort:
		if r, ok := e.rpcs[s.RPCID]; !ok || r.client != ws || r.ended {
			e.emit(ws, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, RPCID: s.RPCID, Err: shm.ErrCodeNoRPC})
			return
		}
		e.end(s.RPCID, shm.ErrCodeAborted, !e.cfg.AbortEndsServer)
		e.emit(ws, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: s.RPCID})
	case shm.OpAbortAll:
		for id, r := range e.rpcs {
			if r.client == ws && !r.ended {
				e.end(id, shm.ErrCodeAborted, !e.cfg.AbortEndsServer)
			}
		}
		e.emit(ws, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie})
	case shm.OpReturnPages:
		if !ws.side.Pages.Return(s.Page, s.Pages) {
			e.emit(ws, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodeBadPage})
		}
	}
}

func (e *Engine) bind(ws *session, s *shm.Submission) {
	_, bound := e.ports[s.Port]
	_, scripted := e.scripted[s.Port]
	if bound || scripted {
		e.emit(ws, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodePortInUse})
		return
	}
	e.ports[s.Port] = ws
	e.emit(ws, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, Port: s.Port})
}

// send starts a client RPC. Whatever reads the request from the arena
// runs before the worker can hear that its range is free (accept).
func (e *Engine) send(ws *session, s *shm.Submission) {
	if e.maxRPCs > 0 && ws.rpcs >= e.maxRPCs {
		e.emit(ws, shm.Completion{Op: shm.CompError, Flags: shm.CompFlagReleased, Cookie: s.Cookie,
			Err: shm.ErrCodeLimit})
		return
	}
	id := e.nextID
	e.nextID += 2
	r := rpc{client: ws, cookie: s.Cookie, off: s.Offset, n: s.Length, port: s.PeerPort}
	msg := ws.side.Arena[s.Offset : s.Offset+uint64(s.Length)]
	code, scripted := e.scripted[s.PeerPort]
	srv := e.ports[s.PeerPort]
	ws.rpcs++
	switch {
	case s.PeerIP != e.cfg.Host:
		e.rpcs[id] = r
		e.accept(ws, s, id, true)
		e.end(id, shm.ErrCodeUnreachable, false)
	case scripted && code != shm.ErrCodeNone:
		e.rpcs[id] = r
		e.accept(ws, s, id, true)
		e.end(id, code, false)
	case scripted: // the engine echoes
		e.rpcs[id] = r
		page, np, ok := place(ws, msg)
		e.accept(ws, s, id, true)
		e.respond(id, page, np, ok, len(msg))
	case srv == nil:
		e.rpcs[id] = r
		e.accept(ws, s, id, true)
		e.end(id, shm.ErrCodePortUnreachable, false)
	default:
		r.server = srv
		page, np, ok := place(srv, msg)
		if !ok {
			r.msg = append([]byte(nil), msg...)
			srv.waiting = append(srv.waiting, id)
		}
		e.rpcs[id] = r
		e.accept(ws, s, id, true)
		if ok {
			e.request(id, page, np, len(msg))
		}
	}
}

// accept acknowledges a Send (atEnd: its range is released when its RPC
// ends) or a Reply, releasing the range as the Release mode says. A quiet
// one (SubFlagQuiet) is not acknowledged: only its range is released, on
// its own, where the Release mode would have flagged the Accepted.
func (e *Engine) accept(ws *session, s *shm.Submission, id uint64, atEnd bool) {
	c := shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: id}
	released := shm.Completion{Op: shm.CompReleased, Cookie: s.Cookie, Offset: s.Offset, Length: s.Length}
	if p := s.Priority(); p >= 0 { // no wire here: counted, for the tests of the workers that name one
		ws.prioritySends++
		ws.lastPriority = p
	}
	if s.Flags&shm.SubFlagQuiet != 0 {
		ws.quiet++
		if e.cfg.Release != ReleaseAtEnd || !atEnd {
			e.emit(ws, released)
		}
		return
	}
	switch {
	case e.cfg.Release == ReleaseWithAccept:
		c.Flags = shm.CompFlagReleased
		e.emit(ws, c)
	case e.cfg.Release == ReleaseAtEnd && atEnd:
		e.emit(ws, c)
	default:
		e.emit(ws, c)
		e.emit(ws, released)
	}
}

func (e *Engine) reply(ws *session, s *shm.Submission) {
	id := s.RPCID &^ 1
	r, ok := e.rpcs[id]
	if !ok || r.server != ws || r.msg != nil || s.PeerIP != e.cfg.Host || s.PeerPort != r.client.port {
		e.emit(ws, shm.Completion{Op: shm.CompError, Flags: shm.CompFlagReleased, Cookie: s.Cookie,
			RPCID: s.RPCID, Err: shm.ErrCodeNoRPC})
		return
	}
	if r.ended { // its client gave up: the reply goes nowhere
		delete(e.rpcs, id)
		e.accept(ws, s, s.RPCID, false)
		return
	}
	msg := ws.side.Arena[s.Offset : s.Offset+uint64(s.Length)]
	page, np, okp := place(r.client, msg)
	e.accept(ws, s, s.RPCID, false)
	e.respond(id, page, np, okp, len(msg))
}

// place copies msg into a run of free pages of ws's pool and marks them
// held by the worker; ok is false when no run is free.
func place(ws *session, msg []byte) (page, np int, ok bool) {
	np = shm.PagesFor(len(msg))
	page, ok = ws.side.Pages.Alloc(np)
	if !ok {
		return 0, 0, false
	}
	copy(ws.side.Pool[page*shm.PageSize:], msg)
	ws.side.Pages.Deliver(page, np)
	return page, np, true
}

// request hands client RPC id's request, placed at page, to its server.
func (e *Engine) request(id uint64, page, np, n int) {
	r := e.rpcs[id]
	e.emit(r.server, shm.Completion{Op: shm.CompRequest, Port: r.port, RPCID: id | 1, PeerIP: e.cfg.Host,
		PeerPort: r.client.port, Length: uint32(n), Page: uint32(page), Pages: uint32(np)})
}

// deliverWaiting hands ws the requests that wait for its pages, in order,
// while pages are free.
func (e *Engine) deliverWaiting(ws *session) {
	for len(ws.waiting) > 0 {
		id := ws.waiting[0]
		r, ok := e.rpcs[id]
		if !ok || r.server != ws || r.msg == nil || r.ended {
			ws.waiting = ws.waiting[1:]
			continue
		}
		page, np, ok := place(ws, r.msg)
		if !ok {
			return
		}
		ws.waiting = ws.waiting[1:]
		n := len(r.msg)
		r.msg = nil
		e.rpcs[id] = r
		e.request(id, page, np, n)
	}
}

// respond ends client RPC id with the response placed at page in its
// client's pool (ok false: there was no room, the RPC fails).
func (e *Engine) respond(id uint64, page, np int, ok bool, n int) {
	r := e.rpcs[id]
	delete(e.rpcs, id)
	c := r.client
	c.rpcs--
	if e.cfg.Release == ReleaseAtEnd {
		e.emit(c, shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.off, Length: r.n})
	}
	if !ok {
		e.emit(c, shm.Completion{Op: shm.CompError, Cookie: r.cookie, RPCID: id, Err: shm.ErrCodeNoBufferSpace})
		return
	}
	e.emit(c, shm.Completion{Op: shm.CompResponse, Cookie: r.cookie, RPCID: id, PeerIP: e.cfg.Host,
		PeerPort: r.port, Length: uint32(n), Page: uint32(page), Pages: uint32(np)})
}

// end fails client RPC id with code. keep: its server holds the request
// and keeps the RPC (a Reply is accepted and dropped); otherwise the RPC
// is gone everywhere.
func (e *Engine) end(id uint64, code shm.ErrCode, keep bool) {
	r := e.rpcs[id]
	r.client.rpcs--
	if e.cfg.Release == ReleaseAtEnd {
		e.emit(r.client, shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.off, Length: r.n})
	}
	e.emit(r.client, shm.Completion{Op: shm.CompError, Cookie: r.cookie, RPCID: id, Err: code})
	if keep && r.server != nil && r.msg == nil {
		r.ended = true
		e.rpcs[id] = r
		return
	}
	delete(e.rpcs, id)
}

// clientLeft drops client RPC id of a worker that detached: nothing is
// said to it; its server keeps the request unless AbortEndsServer.
func (e *Engine) clientLeft(id uint64, r rpc) {
	if !r.ended {
		r.client.rpcs--
	}
	if !e.cfg.AbortEndsServer && r.server != nil && r.msg == nil && !r.server.gone {
		r.ended = true
		e.rpcs[id] = r
		return
	}
	delete(e.rpcs, id)
}
