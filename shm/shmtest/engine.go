package shmtest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Release says when the engine tells a worker that an arena range it
// submitted is free again (see "Memory ownership" in shm/doc.go).
type Release int

const (
	// ReleaseAtEnd releases a request's range when its RPC ends (Homa may
	// retransmit it until then), just before the RPC's Response or Error;
	// a reply's right after its Accepted. This is what the daemon does.
	ReleaseAtEnd Release = iota
	// ReleaseAfterAccept sends a Released right after every Accepted of a
	// Send or a Reply.
	ReleaseAfterAccept
	// ReleaseWithAccept sets CompFlagReleased on every Accepted of a Send
	// or a Reply.
	ReleaseWithAccept
)

// ParseRelease reads a Release by its name: "end", "separate" or "flag".
func ParseRelease(s string) (Release, error) {
	switch s {
	case "end":
		return ReleaseAtEnd, nil
	case "separate":
		return ReleaseAfterAccept, nil
	case "flag":
		return ReleaseWithAccept, nil
	}
	return 0, fmt.Errorf("release %q: want end, separate or flag", s)
}

// Config is the fake engine's set-up; Start checks it.
type Config struct {
	Path   string     // control socket; created by Start, removed by Close
	Params shm.Params // every worker's region
	// Host is the address of the one host every worker is on; a Send to
	// another address fails with Unreachable. Zero: 127.0.0.1, or
	// HostInfo's IPv4 address when it has one.
	Host [4]byte
	// HostInfo, when set, is what every region's header says of the host
	// (shm.FeatureHostInfo, shm.ServerConfig.Host), as the daemon's
	// headers say it of the port a socket serves: a test sees what a
	// worker learns. Its IPv4 address, if any, is Host (Start refuses
	// two). Zero: the headers say nothing, as an older daemon's.
	HostInfo shm.HostInfo
	// MaxMessage is the longest message a submission may name (the limit
	// ParseSubmission checks), if below the region's (Params.MaxMessage).
	// Zero: the region's.
	MaxMessage uint32
	// RingStart is where both rings' free-running indices begin: near
	// 1<<64, a test sees them wrap.
	RingStart uint64
	// Release is when arena ranges are released.
	Release Release
	// AbortEndsServer makes a client's abort (or its leaving) end the RPC
	// at its server too: the server's Reply is then refused with NoRPC.
	// Without it the server keeps the RPC, as in Homa, and its Reply is
	// accepted and dropped.
	AbortEndsServer bool
	// IdleSleep is how long a pass that found nothing sleeps, once passes
	// have found nothing for 200 µs (until then the loop spins, yielding).
	// Zero: 100 µs; negative: the loop never sleeps.
	IdleSleep time.Duration
	// Doorbell gives each session a doorbell (shm.FeatureDoorbell): the
	// engine's idle sleeps raise the submission rings' wait flags and end
	// when a worker rings its own, as the daemon's adaptive loop does.
	Doorbell bool
	// Logf, when set, is told of every malformed submission.
	Logf func(format string, args ...any)
}

// Engine is a running fake engine: the control socket and one polling
// goroutine that serves every session, as the daemon's loop does.
type Engine struct {
	cfg    Config
	srv    *shm.Server
	stop   atomic.Bool
	done   chan struct{} // closed when the loop has returned
	refuse atomic.Bool   // refuse attaches (Refuse)

	mu       sync.Mutex // held by the loop for a pass, by attach and detach, and by every method
	paused   bool       // no pass runs and no ring is touched (Pause)
	live     []*session
	all      []*session             // every session ever attached, in order: the indices of the methods
	ports    map[uint16]*session    // bound ports
	scripted map[uint16]shm.ErrCode // ports the engine answers itself; ErrCodeNone: echo
	rpcs     map[uint64]rpc         // client RPCs by id (even); the server's id is id|1
	nextID   uint64                 // the next client RPC id
	maxRPCs  int                    // outstanding client RPCs per session; 0: no limit
	bad      int                    // malformed submissions, all sessions
	bells    *shm.Bells             // the sessions' doorbells (Config.Doorbell); nil without
	rung     atomic.Uint64          // idle sleeps a doorbell ended
	armed    bool                   // the loop sleeps with the wait flags raised
}

// session is one attached worker, as the engine sees it. The loop owns
// it (under Engine.mu); its region is the shm server's and is freed once
// detach returns.
type session struct {
	s       *shm.Session
	side    shm.EngineSide
	layout  shm.Layout // kept for Session after the region is freed
	index   int        // in Engine.all
	port    uint16     // the port its client RPCs come from, at Host
	rpcs    int        // client RPCs outstanding (for maxRPCs)
	gone    bool       // detached: nothing is read from or written to its region
	left    chan struct{}
	in      [16]shm.Slot
	out     []shm.Slot // completions waiting for room in the CQ (or for Resume)
	pushed  bool       // completions pushed since the last wake check
	waiting []uint64   // client RPCs whose requests wait here for free pages, oldest first

	submissions, badSubmissions, wakeups uint64
	quiet, pagesOnSubmit                 uint64 // see SessionInfo
	prioritySends                        uint64
	lastPriority                         int
}

// defaultHost is Config.Host's zero value: 127.0.0.1.
var defaultHost = [4]byte{127, 0, 0, 1}

// Start listens on cfg.Path and starts the engine's loop. Close stops
// both.
func Start(cfg Config) (*Engine, error) {
	if cfg.Path == "" {
		return nil, errors.New("shmtest: no control socket path")
	}
	if v4 := cfg.HostInfo.IPv4; v4 != [4]byte{} {
		if cfg.Host != [4]byte{} && cfg.Host != v4 {
			return nil, fmt.Errorf("shmtest: HostInfo's IPv4 address %v is not Host %v", v4, cfg.Host)
		}
		cfg.Host = v4
	}
	if cfg.Host == [4]byte{} {
		cfg.Host = defaultHost
	}
	if cfg.IdleSleep == 0 {
		cfg.IdleSleep = 100 * time.Microsecond
	}
	if cfg.Release < ReleaseAtEnd || cfg.Release > ReleaseWithAccept {
		return nil, fmt.Errorf("shmtest: release mode %d", cfg.Release)
	}
	e := &Engine{cfg: cfg, done: make(chan struct{}), ports: map[uint16]*session{},
		scripted: map[uint16]shm.ErrCode{}, rpcs: map[uint64]rpc{}, nextID: 2}
	if cfg.Doorbell {
		b, err := shm.NewBells()
		if err != nil {
			return nil, fmt.Errorf("shmtest: %w", err)
		}
		e.bells = b
	}
	srv, err := shm.Listen(shm.ServerConfig{Path: cfg.Path, Params: cfg.Params, Doorbell: cfg.Doorbell, Host: cfg.HostInfo,
		AllowUIDs: []int{os.Getuid()}, AllowGIDs: []int{os.Getgid()},
		Admit:    func(int, int, int) bool { return !e.refuse.Load() },
		OnAttach: e.attach, OnDetach: e.detach})
	if err != nil {
		if e.bells != nil {
			e.bells.Close()
		}
		return nil, fmt.Errorf("shmtest: %w", err)
	}
	e.srv = srv
	go e.run()
	return e, nil
}

// Path is the control socket's path.
func (e *Engine) Path() string { return e.cfg.Path }

// Host is the address every worker is at.
func (e *Engine) Host() [4]byte { return e.cfg.Host }

// Close stops the loop, ends every session and removes the socket.
func (e *Engine) Close() error {
	if e.stop.Swap(true) {
		return nil
	}
	<-e.done
	err := e.srv.Close()
	if e.bells != nil {
		e.bells.Close() // the loop and the control goroutines are done with it
	}
	return err
}

// attach runs on the shm server's goroutine before the worker gets its
// region: it sets the rings' start and takes the engine's ends.
func (e *Engine) attach(s *shm.Session) error {
	if e.cfg.RingStart != 0 {
		l := &s.Layout
		if shm.InitRing(l.SQ(s.Region), l.SQEntries, e.cfg.RingStart) != nil ||
			shm.InitRing(l.CQ(s.Region), l.CQEntries, e.cfg.RingStart) != nil {
			panic("shmtest: cannot initialise the rings of a fresh region")
		}
	}
	side, err := s.EngineSide(e.cfg.MaxMessage)
	if err != nil {
		panic(fmt.Sprintf("shmtest: the engine's side of a fresh region: %v", err))
	}
	if e.bells != nil {
		if err := e.bells.Add(s.DoorbellFD()); err != nil {
			return err // refused: the server frees the session without detach
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.all)
	ws := &session{s: s, side: side, layout: s.Layout, index: n, port: clientPort(n), left: make(chan struct{})}
	e.live = append(e.live, ws)
	e.all = append(e.all, ws)
	if e.armed {
		ws.side.SQ.SetWaiting(true) // the loop sleeps: the worker's first push rings
	}
	return nil
}

// clientPort is the port the client RPCs of session i come from.
func clientPort(i int) uint16 { return 0x8000 | uint16(1+i%0x7fff) }

// detach ends a session as the daemon does: its ports are unbound, its
// client RPCs dropped, the RPCs it served fail at their clients.
func (e *Engine) detach(s *shm.Session) {
	if e.bells != nil {
		e.bells.Remove(s.DoorbellFD()) // before the server closes it
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var ws *session
	for i, w := range e.live {
		if w.s == s {
			ws = w
			e.live = append(e.live[:i], e.live[i+1:]...)
			break
		}
	}
	if ws == nil {
		return
	}
	ws.gone = true
	ws.out, ws.waiting = nil, nil
	for p, b := range e.ports {
		if b == ws {
			delete(e.ports, p)
		}
	}
	for id, r := range e.rpcs {
		switch {
		case r.client == ws:
			e.clientLeft(id, r)
		case r.server == ws && r.ended:
			delete(e.rpcs, id)
		case r.server == ws:
			e.end(id, shm.ErrCodeClosed, false)
		}
	}
	for _, w := range e.live {
		e.flushOut(w)
	}
	close(ws.left)
}

func (e *Engine) run() {
	defer close(e.done)
	idle := time.Now()
	for !e.stop.Load() {
		e.mu.Lock()
		busy := !e.paused && e.pass()
		e.mu.Unlock()
		switch {
		case busy:
			idle = time.Now()
		case e.cfg.IdleSleep < 0 || time.Since(idle) < 200*time.Microsecond:
			runtime.Gosched()
		case e.bells != nil:
			e.sleepArmed()
		default:
			time.Sleep(e.cfg.IdleSleep)
		}
	}
}

// sleepArmed is an idle sleep that a worker's doorbell ends: the wait
// flags of the submission rings raised, a last look at them, the sleep,
// the flags lowered (shm/doc.go, "Waiting").
func (e *Engine) sleepArmed() {
	e.mu.Lock()
	if e.paused {
		e.mu.Unlock()
		time.Sleep(e.cfg.IdleSleep)
		return
	}
	work := false
	e.armed = true
	for _, ws := range e.live {
		ws.side.SQ.SetWaiting(true)
		work = work || ws.side.SQ.Len() > 0
	}
	e.mu.Unlock()
	if !work && e.bells.Wait(e.cfg.IdleSleep) {
		e.rung.Add(1)
	}
	e.mu.Lock()
	e.armed = false
	for _, ws := range e.live {
		ws.side.SQ.SetWaiting(false)
	}
	e.mu.Unlock()
}

// DoorbellWakeups counts the idle sleeps a worker's doorbell ended.
func (e *Engine) DoorbellWakeups() uint64 { return e.rung.Load() }

// pass reads every submission ring once, hands waiting requests the
// pages that came back, then pushes what is pending and wakes sleepers.
func (e *Engine) pass() bool {
	busy := false
	for _, ws := range e.live {
		n := ws.side.SQ.PopBurst(ws.in[:])
		for i := range n {
			e.handle(ws, &ws.in[i])
		}
		busy = busy || n > 0
	}
	for _, ws := range e.live {
		e.deliverWaiting(ws)
	}
	for _, ws := range e.live {
		busy = e.flushOut(ws) || busy
	}
	return busy
}

// emit queues c for ws, pushing it at once when nothing waits before it.
func (e *Engine) emit(ws *session, c shm.Completion) {
	if ws.gone {
		return
	}
	var s shm.Slot
	c.Encode(&s)
	e.emitSlot(ws, &s)
}

func (e *Engine) emitSlot(ws *session, s *shm.Slot) {
	if len(ws.out) == 0 && !e.paused && ws.side.CQ.Push(s) {
		ws.pushed = true
		return
	}
	ws.out = append(ws.out, *s)
}

// flushOut pushes backlogged completions and, if anything was pushed,
// wakes the worker if it sleeps ("Waiting" in shm/doc.go). It reports
// whether it pushed anything.
func (e *Engine) flushOut(ws *session) bool {
	if ws.gone || e.paused {
		return false
	}
	flushed := false
	if len(ws.out) > 0 {
		k := ws.side.CQ.PushBurst(ws.out)
		ws.out = ws.out[:copy(ws.out, ws.out[k:])]
		ws.pushed = ws.pushed || k > 0
		flushed = k > 0
	}
	if ws.pushed {
		ws.pushed = false
		if ws.side.CQ.TakeWaiter() {
			ws.wakeups++
			ws.s.Wake()
		}
	}
	return flushed
}
