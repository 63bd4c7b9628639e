// Command goengine is a test peer for the Python package: the real control
// socket of shm (shm.Listen) and an engine loop built from shm's own rings,
// ParseSubmission and Completion.Encode, on a loopback "network" where
// every attached worker is on one host. A Send to a port some worker bound
// becomes a Request there, its Reply the Response; a Send to port 7 is
// answered by the engine itself with the same bytes; any other port fails
// the RPC with PortUnreachable. It exists so that python/tests can check
// the Python side byte for byte against the Go code.
//
// It lives under testdata/ so that ./... patterns of the module skip it:
//
//	go run ./python/tests/testdata/goengine -socket /tmp/goengine.sock
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

const echoPort = 7

type session struct {
	s       *shm.Session
	sq      *shm.Consumer
	cq      *shm.Producer
	lim     shm.Limits
	pool    *shm.PagePool
	out     []shm.Completion   // waiting for room in the CQ
	clients map[uint64]uint64  // client RPC id -> Send cookie
	servers map[uint64]pending // server RPC id -> who asked
	bound   []uint16
	index   int
	bad     int
}

type pending struct {
	from   *session
	id     uint64
	cookie uint64
	port   uint16
}

type engine struct {
	mu       sync.Mutex
	sessions map[*shm.Session]*session
	ports    map[uint16]*session
	ip       [4]byte
	nextC    uint64
	nextS    uint64
	n        int
}

func main() {
	path := flag.String("socket", "/tmp/goengine.sock", "control socket")
	ipArg := flag.String("ip", "127.0.0.1", "this host's address")
	idle := flag.Duration("idle", 20*time.Microsecond, "sleep of an idle engine pass (0: busy-poll, as the daemon does)")
	flag.Parse()
	ip, err := netip.ParseAddr(*ipArg)
	if err != nil || !ip.Is4() {
		fmt.Fprintln(os.Stderr, "goengine: bad -ip")
		os.Exit(2)
	}
	e := &engine{sessions: map[*shm.Session]*session{}, ports: map[uint16]*session{}, ip: ip.As4(), nextC: 2, nextS: 1}
	srv, err := shm.Listen(shm.ServerConfig{
		Path:     *path,
		Params:   shm.Params{SQEntries: 256, CQEntries: 1024, ArenaSize: 4 << 20, PoolPages: 128},
		OnAttach: e.attach,
		OnDetach: e.detach,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goengine:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go e.loop(done, *idle)
	<-stop
	close(done)
	srv.Close()
}

func (e *engine) attach(s *shm.Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sq, err := shm.NewConsumer(s.Layout.SQ(s.Region), s.Layout.SQEntries)
	if err != nil {
		panic(err)
	}
	cq, err := shm.NewProducer(s.Layout.CQ(s.Region), s.Layout.CQEntries)
	if err != nil {
		panic(err)
	}
	e.n++
	e.sessions[s] = &session{s: s, sq: sq, cq: cq, lim: s.Layout.Limits(1_000_000),
		pool: shm.NewPagePool(int(s.Layout.PoolPages)), clients: map[uint64]uint64{},
		servers: map[uint64]pending{}, index: e.n}
}

func (e *engine) detach(s *shm.Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.sessions[s]
	delete(e.sessions, s)
	for _, p := range w.bound {
		delete(e.ports, p)
	}
	for _, p := range w.servers {
		e.fail(p.from, p.id, p.cookie, shm.ErrCodeClosed)
	}
}

func (e *engine) loop(done chan struct{}, idle time.Duration) {
	var slot shm.Slot
	for {
		select {
		case <-done:
			return
		default:
		}
		busy := false
		e.mu.Lock()
		for _, w := range e.sessions {
			for range 64 {
				if !w.sq.Pop(&slot) {
					break
				}
				busy = true
				e.handle(w, &slot)
			}
		}
		for _, w := range e.sessions {
			if w.flush() {
				busy = true
			}
		}
		e.mu.Unlock()
		if !busy {
			if idle > 0 {
				time.Sleep(idle)
			} else {
				runtime.Gosched()
			}
		}
	}
}

func (w *session) complete(c shm.Completion) { w.out = append(w.out, c) }

func (w *session) flush() bool {
	var slot shm.Slot
	n := 0
	for n < len(w.out) {
		w.out[n].Encode(&slot)
		if !w.cq.Push(&slot) {
			break
		}
		n++
	}
	w.out = w.out[n:]
	if n > 0 && w.cq.TakeWaiter() {
		w.s.Wake()
	}
	return n > 0
}

func (e *engine) fail(w *session, id, cookie uint64, code shm.ErrCode) {
	if c, ok := w.clients[id]; !ok || c != cookie {
		return
	}
	delete(w.clients, id)
	w.complete(shm.Completion{Op: shm.CompError, Cookie: cookie, RPCID: id, Err: code})
}

// deliver puts msg into w's pool and completes it; false if no pages.
func (w *session) deliver(c shm.Completion, msg []byte) bool {
	n := shm.PagesFor(len(msg))
	page, ok := w.pool.Alloc(n)
	if !ok {
		return false
	}
	pool := w.s.Layout.Pool(w.s.Region)
	copy(pool[page*shm.PageSize:], msg)
	w.pool.Deliver(page, n)
	c.Length, c.Page, c.Pages = uint32(len(msg)), uint32(page), uint32(n)
	w.complete(c)
	return true
}

func (e *engine) handle(w *session, slot *shm.Slot) {
	s, code := shm.ParseSubmission(slot, &w.lim)
	if code != shm.ErrCodeNone {
		w.bad++
		var flags uint8
		if s.Op == shm.OpSend || s.Op == shm.OpReply {
			flags = shm.CompFlagReleased
		}
		w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: code, Flags: flags})
		fmt.Fprintf(os.Stderr, "goengine: worker %d: bad submission %+v: %v\n", w.index, s, code)
		return
	}
	arena := w.s.Layout.Arena(w.s.Region)
	switch s.Op {
	case shm.OpBind:
		if _, taken := e.ports[s.Port]; taken || s.Port == echoPort {
			w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodePortInUse})
			return
		}
		e.ports[s.Port] = w
		w.bound = append(w.bound, s.Port)
		w.complete(shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, Port: s.Port})
	case shm.OpSend:
		msg := append([]byte(nil), arena[s.Offset:s.Offset+uint64(s.Length)]...)
		id := e.nextC
		e.nextC += 2
		w.clients[id] = s.Cookie
		w.complete(shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: id})
		w.complete(shm.Completion{Op: shm.CompReleased, Cookie: s.Cookie, Offset: s.Offset, Length: s.Length})
		switch srv := e.ports[s.PeerPort]; {
		case s.PeerIP != e.ip:
			e.fail(w, id, s.Cookie, shm.ErrCodeUnreachable)
		case s.PeerPort == echoPort:
			delete(w.clients, id)
			c := shm.Completion{Op: shm.CompResponse, Cookie: s.Cookie, RPCID: id, PeerIP: e.ip, PeerPort: echoPort}
			if !w.deliver(c, msg) {
				w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, RPCID: id, Err: shm.ErrCodeNoBufferSpace})
			}
		case srv == nil:
			e.fail(w, id, s.Cookie, shm.ErrCodePortUnreachable)
		default:
			sid := e.nextS
			e.nextS += 2
			srv.servers[sid] = pending{from: w, id: id, cookie: s.Cookie, port: s.PeerPort}
			c := shm.Completion{Op: shm.CompRequest, Port: s.PeerPort, RPCID: sid, PeerIP: e.ip,
				PeerPort: uint16(0x8000 + w.index)}
			if !srv.deliver(c, msg) {
				delete(srv.servers, sid) // dropped, as a request without pages is
				e.fail(w, id, s.Cookie, shm.ErrCodeNoBufferSpace)
			}
		}
	case shm.OpReply:
		p, ok := w.servers[s.RPCID]
		if !ok || s.PeerIP != e.ip || s.PeerPort != uint16(0x8000+p.from.index) {
			w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, RPCID: s.RPCID, Err: shm.ErrCodeNoRPC,
				Flags: shm.CompFlagReleased})
			return
		}
		delete(w.servers, s.RPCID)
		msg := append([]byte(nil), arena[s.Offset:s.Offset+uint64(s.Length)]...)
		w.complete(shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: s.RPCID, Flags: shm.CompFlagReleased})
		c := p.from
		if cookie, ok := c.clients[p.id]; !ok || cookie != p.cookie {
			return
		}
		delete(c.clients, p.id)
		r := shm.Completion{Op: shm.CompResponse, Cookie: p.cookie, RPCID: p.id, PeerIP: e.ip, PeerPort: p.port}
		if !c.deliver(r, msg) {
			c.complete(shm.Completion{Op: shm.CompError, Cookie: p.cookie, RPCID: p.id, Err: shm.ErrCodeNoBufferSpace})
		}
	case shm.OpAbort:
		cookie, ok := w.clients[s.RPCID]
		if !ok {
			w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, RPCID: s.RPCID, Err: shm.ErrCodeNoRPC})
			return
		}
		delete(w.clients, s.RPCID)
		w.complete(shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie, RPCID: s.RPCID})
		w.complete(shm.Completion{Op: shm.CompError, Cookie: cookie, RPCID: s.RPCID, Err: shm.ErrCodeAborted})
	case shm.OpAbortAll:
		for id, cookie := range w.clients {
			w.complete(shm.Completion{Op: shm.CompError, Cookie: cookie, RPCID: id, Err: shm.ErrCodeAborted})
		}
		clear(w.clients)
		w.complete(shm.Completion{Op: shm.CompAccepted, Cookie: s.Cookie})
	case shm.OpReturnPages:
		if !w.pool.Return(s.Page, s.Pages) {
			w.complete(shm.Completion{Op: shm.CompError, Cookie: s.Cookie, Err: shm.ErrCodeBadPage})
		}
	}
}
