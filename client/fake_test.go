package client

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// fakeEngine is a tiny loopback engine, only to test the client: the
// daemon's control socket (shm.Listen) and one polling goroutine that
// serves every session, as the real engine's loop does. A Send to a port
// bound by any session becomes a Request in that session's pool; its Reply
// becomes the Response in the client's pool. A request's arena range is
// released when its RPC ends (Homa may retransmit it until then), a
// reply's right after it is accepted. Ports can also be scripted: the
// engine echoes the request itself, or fails the RPC with a code.
type fakeEngine struct {
	srv  *shm.Server
	path string
	stop atomic.Bool
	done chan struct{}

	mu       sync.Mutex // held by the loop for a pass, by the hooks and the test helpers
	live     []*fakeSess
	all      []*fakeSess // every session attached, in order
	ports    map[uint16]*fakeSess
	scripted map[uint16]shm.ErrCode // ErrCodeNone: echo
	rpcs     map[uint64]fakeRPC     // by client id
	nextID   uint64
	maxRPCs  int // outstanding client RPCs per session (0: no limit)
	badSubs  int // submissions that failed validation
}

type fakeSess struct {
	s      *shm.Session
	sq     *shm.Consumer
	cq     *shm.Producer
	lim    shm.Limits
	arena  []byte
	pool   []byte
	pages  *shm.PagePool
	addr   Addr
	rpcs   int // outstanding client RPCs
	gone   bool
	in     [16]shm.Slot
	out    []shm.Slot // completions waiting for room in the CQ
	pushed bool       // completions pushed since the last wake check
}

type fakeRPC struct {
	client *fakeSess
	server *fakeSess // nil: a scripted port
	cookie uint64    // the Send's
	off    uint64    // the request in the client's arena
	n      uint32
	dst    Addr
}

func testParams() shm.Params {
	return shm.Params{SQEntries: 128, CQEntries: 256, ArenaSize: 2 << 20, PoolPages: 40}
}

// newFake starts a fake engine; the test's cleanup stops it.
func newFake(t *testing.T, p shm.Params) *fakeEngine {
	t.Helper()
	f := &fakeEngine{done: make(chan struct{}), ports: map[uint16]*fakeSess{},
		scripted: map[uint16]shm.ErrCode{}, rpcs: map[uint64]fakeRPC{}, nextID: 2}
	f.path = filepath.Join(t.TempDir(), "s")
	srv, err := shm.Listen(shm.ServerConfig{Path: f.path, Params: p,
		AllowUIDs: []int{os.Getuid()}, OnAttach: f.attach, OnDetach: f.detach})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	go f.run()
	t.Cleanup(func() {
		f.stop.Store(true)
		<-f.done
		srv.Close()
	})
	return f
}

// dial attaches a client; the test's cleanup closes it (before anything
// registered earlier).
func dial(t *testing.T, f *fakeEngine, opt Options) *Client {
	t.Helper()
	c, err := Dial(f.path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fakeEngine) attach(s *shm.Session) {
	side, err := s.EngineSide(MaxMessage)
	if err != nil {
		panic(err) // the fake's own region: a broken test setup
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.all)
	fs := &fakeSess{s: s, sq: side.SQ, cq: side.CQ, lim: side.Limits, arena: side.Arena,
		pool: side.Pool, pages: side.Pages,
		addr: Addr{IP: [4]byte{10, 0, 0, byte(1 + n)}, Port: uint16(40000 + n)}}
	f.live = append(f.live, fs)
	f.all = append(f.all, fs)
}

// detach ends a session as the daemon does: its ports are unbound, its
// client RPCs dropped, the RPCs it served fail at their clients.
func (f *fakeEngine) detach(s *shm.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, fs := range f.live {
		if fs.s != s {
			continue
		}
		f.live = append(f.live[:i], f.live[i+1:]...)
		fs.gone = true
		for p, b := range f.ports {
			if b == fs {
				delete(f.ports, p)
			}
		}
		for id, r := range f.rpcs {
			switch {
			case r.client == fs:
				delete(f.rpcs, id)
			case r.server == fs:
				f.end(id, shm.ErrCodeTimeout)
			}
		}
		break
	}
	for _, fs := range f.live {
		f.flushOut(fs)
	}
}

func (f *fakeEngine) run() {
	defer close(f.done)
	idle := time.Now()
	for !f.stop.Load() {
		f.mu.Lock()
		busy := f.pass()
		f.mu.Unlock()
		switch {
		case busy:
			idle = time.Now()
		case time.Since(idle) < 200*time.Microsecond:
			runtime.Gosched()
		default:
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// pass reads every submission ring once, then pushes what is pending and
// wakes sleepers.
func (f *fakeEngine) pass() bool {
	busy := false
	for _, fs := range f.live {
		n := fs.sq.PopBurst(fs.in[:])
		for i := range n {
			f.handle(fs, &fs.in[i])
		}
		busy = busy || n > 0
	}
	for _, fs := range f.live {
		f.flushOut(fs)
	}
	return busy
}

func (f *fakeEngine) emit(fs *fakeSess, c shm.Completion) {
	if fs.gone {
		return
	}
	var s shm.Slot
	c.Encode(&s)
	if len(fs.out) == 0 && fs.cq.Push(&s) {
		fs.pushed = true
		return
	}
	fs.out = append(fs.out, s)
}

// flushOut pushes backlogged completions and, if anything was pushed,
// wakes the worker if it sleeps ("Waiting" in shm/doc.go).
func (f *fakeEngine) flushOut(fs *fakeSess) {
	if len(fs.out) > 0 {
		k := fs.cq.PushBurst(fs.out)
		fs.out = fs.out[:copy(fs.out, fs.out[k:])]
		fs.pushed = fs.pushed || k > 0
	}
	if fs.pushed {
		fs.pushed = false
		if fs.cq.TakeWaiter() {
			fs.s.Wake()
		}
	}
}

func (f *fakeEngine) handle(fs *fakeSess, slot *shm.Slot) {
	s, code := shm.ParseSubmission(slot, &fs.lim)
	if code != shm.ErrCodeNone {
		f.badSubs++
		c := shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: code}
		if s.Op == shm.OpSend || s.Op == shm.OpReply {
			c.Flags = shm.CompFlagReleased
		}
		f.emit(fs, c)
		return
	}
	switch s.Op {
	case shm.OpBind:
		_, bound := f.ports[s.Port]
		_, scripted := f.scripted[s.Port]
		if bound || scripted {
			f.emit(fs, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodePortInUse})
			return
		}
		f.ports[s.Port] = fs
		f.emit(fs, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, Port: s.Port})
	case shm.OpSend:
		f.send(fs, &s)
	case shm.OpReply:
		f.reply(fs, &s)
	case shm.OpAbort:
		if r, ok := f.rpcs[s.RPCID]; !ok || r.client != fs {
			f.emit(fs, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, RPCID: s.RPCID, Err: shm.ErrCodeNoRPC})
			return
		}
		f.end(s.RPCID, shm.ErrCodeAborted)
		f.emit(fs, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: s.RPCID})
	case shm.OpAbortAll:
		for id, r := range f.rpcs {
			if r.client == fs {
				f.end(id, shm.ErrCodeAborted)
			}
		}
		f.emit(fs, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie})
	case shm.OpReturnPages:
		if !fs.pages.Return(s.Page, s.Pages) {
			f.emit(fs, shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodeBadPage})
		}
	}
}

func (f *fakeEngine) send(fs *fakeSess, s *shm.Submission) {
	if f.maxRPCs > 0 && fs.rpcs >= f.maxRPCs {
		f.emit(fs, shm.Completion{Op: shm.CompError, Flags: shm.CompFlagReleased, Cookie: s.Cookie, Err: shm.ErrCodeLimit})
		return
	}
	id := f.nextID
	f.nextID += 2
	dst := Addr{IP: s.PeerIP, Port: s.PeerPort}
	r := fakeRPC{client: fs, cookie: s.Cookie, off: s.Offset, n: s.Length, dst: dst}
	f.rpcs[id] = r
	fs.rpcs++
	f.emit(fs, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: id})
	msg := fs.arena[s.Offset : s.Offset+uint64(s.Length)]
	if code, ok := f.scripted[s.PeerPort]; ok {
		if code == shm.ErrCodeNone {
			f.respond(id, msg, dst)
		} else {
			f.end(id, code)
		}
		return
	}
	srv := f.ports[s.PeerPort]
	if srv == nil {
		f.end(id, shm.ErrCodePortUnreachable)
		return
	}
	np := shm.PagesFor(len(msg))
	page, ok := srv.pages.Alloc(np)
	if !ok {
		f.end(id, shm.ErrCodeTimeout) // the request is dropped; its client would time out
		return
	}
	copy(srv.pool[page*shm.PageSize:], msg)
	srv.pages.Deliver(page, np)
	r.server = srv
	f.rpcs[id] = r
	f.emit(srv, shm.Completion{Op: shm.CompRequest, Port: s.PeerPort, RPCID: id | 1, PeerIP: fs.addr.IP,
		PeerPort: fs.addr.Port, Length: s.Length, Page: uint32(page), Pages: uint32(np)})
}

func (f *fakeEngine) reply(fs *fakeSess, s *shm.Submission) {
	id := s.RPCID &^ 1
	r, ok := f.rpcs[id]
	if !ok || r.server != fs || s.PeerIP != r.client.addr.IP || s.PeerPort != r.client.addr.Port {
		f.emit(fs, shm.Completion{Op: shm.CompError, Flags: shm.CompFlagReleased, Cookie: s.Cookie,
			RPCID: s.RPCID, Err: shm.ErrCodeNoRPC})
		return
	}
	// The reply is copied out of the arena before its range is released:
	// the worker may write there as soon as it reads Released.
	f.respond(id, fs.arena[s.Offset:s.Offset+uint64(s.Length)], r.dst)
	f.emit(fs, shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: s.RPCID})
	f.emit(fs, shm.Completion{Op: shm.CompReleased, Cookie: s.Cookie, Offset: s.Offset, Length: s.Length})
}

// respond ends client RPC id with resp, from the server at from. resp is
// copied before the request's range is released (an echo reads it there).
func (f *fakeEngine) respond(id uint64, resp []byte, from Addr) {
	r := f.rpcs[id]
	delete(f.rpcs, id)
	c := r.client
	c.rpcs--
	np := shm.PagesFor(len(resp))
	page, ok := c.pages.Alloc(np)
	if ok {
		copy(c.pool[page*shm.PageSize:], resp)
		c.pages.Deliver(page, np)
	}
	f.emit(c, shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.off, Length: r.n})
	if !ok {
		f.emit(c, shm.Completion{Op: shm.CompError, Cookie: r.cookie, RPCID: id, Err: shm.ErrCodeNoBufferSpace})
		return
	}
	f.emit(c, shm.Completion{Op: shm.CompResponse, Cookie: r.cookie, RPCID: id, PeerIP: from.IP,
		PeerPort: from.Port, Length: uint32(len(resp)), Page: uint32(page), Pages: uint32(np)})
}

// end fails client RPC id with code.
func (f *fakeEngine) end(id uint64, code shm.ErrCode) {
	r := f.rpcs[id]
	delete(f.rpcs, id)
	r.client.rpcs--
	f.emit(r.client, shm.Completion{Op: shm.CompReleased, Cookie: r.cookie, Offset: r.off, Length: r.n})
	f.emit(r.client, shm.Completion{Op: shm.CompError, Cookie: r.cookie, RPCID: id, Err: code})
}

// Test hooks.

// script makes port an engine-served port: ErrCodeNone echoes, another
// code fails each RPC to it with that code.
func (f *fakeEngine) script(port uint16, code shm.ErrCode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripted[port] = code
}

func (f *fakeEngine) setMaxRPCs(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxRPCs = n
}

// inject pushes a raw completion to session i.
func (f *fakeEngine) inject(i int, s shm.Slot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fs := f.all[i]
	fs.out = append(fs.out, s)
	f.flushOut(fs)
}

// strayResponse hands session i a valid Response of n bytes for an RPC it
// never sent.
func (f *fakeEngine) strayResponse(i, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fs := f.all[i]
	np := shm.PagesFor(n)
	page, ok := fs.pages.Alloc(np)
	if !ok {
		panic("no pages for a stray response")
	}
	fs.pages.Deliver(page, np)
	f.emit(fs, shm.Completion{Op: shm.CompResponse, Cookie: 0xdead, RPCID: 1 << 40, PeerIP: [4]byte{10, 9, 9, 9},
		PeerPort: 7, Length: uint32(n), Page: uint32(page), Pages: uint32(np)})
	f.flushOut(fs)
}

// poolFree returns session i's free and held pool pages.
func (f *fakeEngine) poolFree(i int) (free, held int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all[i].pages.Free(), f.all[i].pages.Held()
}

func (f *fakeEngine) badSubmissions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.badSubs
}
