package shmtest

import "github.com/homa-dpdk/homa-dpdk/shm"

// The test hooks. Each takes the engine's lock, so it runs between two
// passes of the loop. Sessions are named by their index in the order they
// attached (0 first); a negative index counts from the last (-1).

// SessionInfo is what the engine knows of one session.
type SessionInfo struct {
	Index   int
	PID     int    // the worker's, from its credentials
	Port    uint16 // the port its client RPCs come from, at Config.Host
	Live    bool   // attached still
	Layout  shm.Layout
	Hugetlb bool // the region is on 2 MB pages
	// PagesFree and PagesHeld are the engine's account of the receive
	// pool: free pages, and pages handed to the worker and not returned.
	PagesFree, PagesHeld int
	RPCs                 int    // client RPCs outstanding
	Submissions          uint64 // submissions read
	BadSubmissions       uint64 // of which malformed (answered with an Error)
	Wakeups              uint64 // eventfd writes: times the worker was asleep on the CQ
	Quiet                uint64 // Sends and Replies accepted without an Accepted (SubFlagQuiet)
	PrioritySends        uint64 // Sends that named a priority (SubFlagPriority); LastPriority is the last one named
	LastPriority         int
	PagesOnSubmit        uint64 // page runs given back on a Send or Reply
	SQCorrupt, CQCorrupt uint64 // bad index loads seen by the engine's ends of the rings
}

// session returns session i (see above); nil when there is none.
func (e *Engine) session(i int) *session {
	if i < 0 {
		i += len(e.all)
	}
	if i < 0 || i >= len(e.all) {
		return nil
	}
	return e.all[i]
}

// Session reports on session i; ok is false when there is no such session.
func (e *Engine) Session(i int) (info SessionInfo, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.session(i)
	if ws == nil {
		return SessionInfo{}, false
	}
	return SessionInfo{Index: ws.index, PID: ws.s.PID, Port: ws.port, Live: !ws.gone, Layout: ws.layout,
		Hugetlb: ws.s.Hugetlb, PagesFree: ws.side.Pages.Free(), PagesHeld: ws.side.Pages.Held(), RPCs: ws.rpcs,
		Submissions: ws.submissions, BadSubmissions: ws.badSubmissions, Wakeups: ws.wakeups,
		Quiet: ws.quiet, PrioritySends: ws.prioritySends, LastPriority: ws.lastPriority, PagesOnSubmit: ws.pagesOnSubmit, SQCorrupt: ws.side.SQ.Corrupt(), CQCorrupt: ws.side.CQ.Corrupt()}, true
}

// Sessions is the number of sessions attached now.
func (e *Engine) Sessions() int { return e.srv.Sessions() }

// BadSubmissions is the number of malformed submissions of all sessions.
func (e *Engine) BadSubmissions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bad
}

// Script makes port one the engine answers itself: code ErrCodeNone
// echoes each request, another code fails each RPC to the port with it.
// A scripted port cannot be bound.
func (e *Engine) Script(port uint16, code shm.ErrCode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scripted[port] = code
}

// SetMaxRPCs limits every session to n outstanding client RPCs (0: no
// limit); a Send beyond it fails with Limit.
func (e *Engine) SetMaxRPCs(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.maxRPCs = n
}

// Pause stops the loop: when it returns, the engine reads and writes no
// ring until Resume (completions a test injects or a detach causes wait).
func (e *Engine) Pause() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused = true
}

// Resume restarts the loop after Pause.
func (e *Engine) Resume() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused = false
	for _, ws := range e.live {
		e.flushOut(ws)
	}
}

// Refuse makes the control socket refuse ("refused\n") every worker that
// attaches while on is true.
func (e *Engine) Refuse(on bool) { e.refuse.Store(on) }

// Kill ends session i from the daemon's side, as when the daemon ends a
// worker that broke the protocol: its connection closes and it detaches.
// It returns once the session has detached; false if it was not live.
func (e *Engine) Kill(i int) bool {
	e.mu.Lock()
	ws := e.session(i)
	if ws == nil || ws.gone {
		e.mu.Unlock()
		return false
	}
	e.mu.Unlock()
	ws.s.Close()
	<-ws.left
	return true
}

// Inject queues a raw completion slot for session i, pushed at once
// unless the engine is paused; false if the session is not live.
func (e *Engine) Inject(i int, s shm.Slot) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.session(i)
	if ws == nil || ws.gone {
		return false
	}
	e.emitSlot(ws, &s)
	e.flushOut(ws)
	return true
}

// Hold hands a run of pages of session i's pool to its worker, as a
// delivered message would, without a completion: a test then injects one
// that names them. It returns the run's first page; ok is false if the
// session is not live or has no such run free.
func (e *Engine) Hold(i, pages int) (page int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.session(i)
	if ws == nil || ws.gone {
		return 0, false
	}
	if page, ok = ws.side.Pages.Alloc(pages); ok {
		ws.side.Pages.Deliver(page, pages)
	}
	return page, ok
}
