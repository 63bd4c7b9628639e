package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Host is what the hub needs of the host it serves. Its methods are
// called on the host's loop thread, from the hub's Poll and Flush.
type Host interface {
	// Endpoint is the host's Homa engine.
	Endpoint() *engine.Endpoint
	// HoldPayload returns a reference for a message sent from a worker's
	// memory, or false when the port copies payloads.
	HoldPayload() (engine.PayloadRef, bool)
	// LetGoPayload: the engine is done with the reference's message (or
	// refused it).
	LetGoPayload(ref engine.PayloadRef)
	// PayloadSent reports, after LetGoPayload, whether the last packet
	// sent from the message's memory has left; the reference is then
	// free and the memory the worker's again.
	PayloadSent(ref engine.PayloadRef) bool
}

// Config configures a hub.
type Config struct {
	Path                 string // the control socket
	AllowUIDs, AllowGIDs []int  // besides root, who may connect
	// MaxOutstanding bounds each worker's client RPCs in flight plus the
	// requests it has not answered yet.
	MaxOutstanding int
	Params         shm.Params // each worker's region: ring entries, arena and pool sizes
}

// Hub serves one host's workers. It is an in-loop application of its
// host (its Poll, Flush and Stop are the loop's); the control socket's
// goroutines hand it sessions through channels.
type Hub struct {
	h      Host
	ep     *engine.Endpoint
	srv    *shm.Server
	lim    Config
	attach chan *session
	detach chan *session
	// stopped is closed when the loop has stopped serving (its drain): a
	// control goroutine waiting for a detach then frees the region itself.
	stopped  chan struct{}
	stopOnce atomic.Bool
	sessions []*session
	draining []*session // gone, waiting for the packets still sending from their arenas
	slots    []shm.Slot // PopBurst buffer

	counters    Counters
	box         snapshotBox // counters published for other threads
	nextPublish int64
	now         int64
}

// snapshotBox hands the counters from the loop to other threads; the loop
// only TryLocks it.
type snapshotBox struct {
	mu   sync.Mutex
	snap Counters
}

// publishEvery is how often the loop publishes the counters (ns).
const publishEvery = 100_000_000

// Counters are the hub's counters, by cause where they count refusals,
// and its gauges (ActiveSessions and after).
type Counters struct {
	Attached, Detached   uint64
	Submissions          uint64
	BadEntries           uint64 // refused by validation (an error completion each)
	Refused              uint64 // valid entries the engine refused (port in use, no such RPC, limit, ...)
	LimitRefusals        uint64 // of Refused: a per-worker limit
	NoRecvSpace          uint64 // messages that found no free receive-pool pages
	Completions          uint64
	CQBacklogged         uint64 // completions that waited in the daemon for CQ room
	Wakeups              uint64 // eventfd writes
	CorruptRings         uint64 // sessions ended because a ring index was corrupt
	ZeroCopyMessages     uint64 // messages sent from the arena as external buffers (no copy)
	ActiveSessions       uint64
	OutstandingRPCs      uint64
	HeldPages, FreePages uint64
}

// New opens the control socket at c.Path for workers of h. Give the hub
// to its host as an in-loop application (host.AddApp) before the loop
// starts; Close it while the loop still runs.
func New(h Host, c Config) (*Hub, error) {
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return nil, fmt.Errorf("worker socket directory: %w", err)
	}
	if c.MaxOutstanding < 1 {
		return nil, fmt.Errorf("workers: max_outstanding %d, want at least 1", c.MaxOutstanding)
	}
	hub := &Hub{
		h: h, ep: h.Endpoint(), lim: c,
		attach:  make(chan *session, 64),
		detach:  make(chan *session, 64),
		stopped: make(chan struct{}),
		slots:   make([]shm.Slot, 32),
	}
	srv, err := shm.Listen(shm.ServerConfig{
		Path: c.Path, AllowUIDs: c.AllowUIDs, AllowGIDs: c.AllowGIDs, Params: c.Params,
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
func (hub *Hub) onAttach(s *shm.Session) {
	side, err := s.EngineSide(uint32(min(hub.ep.MaxMessageLength(), shm.MaxMessage)))
	if err != nil {
		return // cannot happen for a region we just made; the worker then sees no traffic
	}
	ws := &session{
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
func (hub *Hub) onDetach(s *shm.Session) {
	ws, _ := s.Data.(*session)
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

// Close stops the control socket; every session detaches first, while
// the loop still runs.
func (hub *Hub) Close() error { return hub.srv.Close() }

// Stop is the loop's drain (host.App): it lets every session go (aborting
// their RPCs) and releases waiting control goroutines.
func (hub *Hub) Stop() {
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

// Poll is the loop's step (host.App): sessions in and out, submissions,
// completions. It returns the submissions it handled (work, for the idle
// strategy).
func (hub *Hub) Poll(now int64) int {
	hub.now = now
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

// Flush pushes backlogged completions and wakes sleeping workers
// (host.App); the loop calls it after the engine ran, so completions of
// this pass go out in this pass.
func (hub *Hub) Flush() {
	for _, ws := range hub.sessions {
		ws.flush()
	}
	hub.publish()
}

// publish copies the counters, with the sessions' gauges, for Snapshot
// every publishEvery, when no reader holds the box.
func (hub *Hub) publish() {
	if hub.now < hub.nextPublish || !hub.box.mu.TryLock() {
		return
	}
	hub.nextPublish = hub.now + publishEvery
	hub.box.snap = hub.counts()
	hub.box.mu.Unlock()
}

// counts returns the counters with the sessions' gauges.
func (hub *Hub) counts() Counters {
	c := hub.counters
	c.ActiveSessions = uint64(len(hub.sessions))
	for _, ws := range hub.sessions {
		c.OutstandingRPCs += uint64(ws.outst)
		c.HeldPages += uint64(ws.Pages.Held())
		c.FreePages += uint64(ws.Pages.Free())
	}
	return c
}

// Snapshot returns the counters as the loop last published them. Any
// thread.
func (hub *Hub) Snapshot() Counters {
	hub.box.mu.Lock()
	defer hub.box.mu.Unlock()
	return hub.box.snap
}

func (hub *Hub) remove(ws *session) {
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
