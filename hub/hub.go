package hub

import (
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

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
	// CopyMark is the number of the last receive copy handed to the
	// host's copier (engine.Copier); 0 without one.
	CopyMark() uint64
	// CopiesPast reports whether the copier is past copy mark and what
	// waited for those copies is done (messages delivered, buffers given
	// back: engine.Endpoint.PollCopies); true without a copier. The hub
	// lets a worker's region go only then, so that no copy writes it
	// after; it never waits for the copier on the loop.
	CopiesPast(mark uint64) bool
}

// Config configures a hub.
type Config struct {
	Path                 string // the control socket
	SocketGroup          string // the socket's group, a name or a gid ("": the daemon's)
	AllowUIDs, AllowGIDs []int  // besides root, who may connect (gids: primary or supplementary)
	// MaxSessionsPerUID bounds the sessions (each a region) one uid may
	// hold at once, root's too (0: no bound).
	MaxSessionsPerUID int
	// OnRefuse hears of each worker refused before it attached
	// (shm.ServerConfig.OnRefuse): the daemon logs it.
	OnRefuse func(uid, gid, pid int, why string)
	// MaxOutstanding bounds each worker's client RPCs in flight plus the
	// requests it has not answered yet.
	MaxOutstanding int
	// MaxBacklog bounds the completions the daemon keeps for a worker
	// whose completion ring is full (0: DefaultMaxBacklog). At the bound
	// the worker's submission ring is left unread and requests to its
	// ports are dropped; a completion still owed beyond it ends the
	// session (session.go, "Backlog").
	MaxBacklog int
	// Params are each worker's region: ring entries, arena and pool
	// sizes, and its largest message (Params.MaxMessage; 0: the
	// endpoint's MaxMessageLength, which it may not exceed). The arena
	// bounds what a worker can send, the pool what it can receive; the
	// daemon's config checks that both hold the largest message.
	Params shm.Params
	// CloseWait bounds how long Close waits for the loop to let the
	// sessions go (0: DefaultCloseWait).
	CloseWait time.Duration
	// Linger bounds how long the replies of a worker that left (closed
	// its connection, or died) still go out: until each is acked, or
	// this long, when the rest are abandoned (linger.go). 0:
	// DefaultLinger; negative: none, its replies end with it.
	Linger time.Duration
	// Doorbell gives the hub a doorbell (doorbell.go): set it where the
	// loop sleeps when idle. Without it the regions offer none, and
	// workers never look at their submission rings' wait flags.
	Doorbell bool
	// ZeroCopyMin is the smallest message sent from a worker's arena
	// without a copy, where the port allows it (Host.HoldPayload):
	// shorter ones are copied into the frames (0: DefaultZeroCopyMin;
	// negative: every message is copied).
	ZeroCopyMin int
	// Host is what every region's header says of the host the socket
	// serves (shm.ServerConfig.Host, FeatureHostInfo): a worker learns
	// its own address and its port's link there (HostInfoOf makes it).
	// Zero: the headers say nothing.
	Host shm.HostInfo
}

// HostInfoOf is Config.Host for a host at v4 and v6 (either may be the
// zero Addr, not both), on a link of linkBps bits/s (0: unknown) and an
// IP MTU of mtu bytes (0: unknown). The speed is said in whole Mbit/s,
// rounded.
func HostInfoOf(v4, v6 netip.Addr, linkBps float64, mtu int) shm.HostInfo {
	var h shm.HostInfo
	if v4.Is4() {
		h.IPv4 = v4.As4()
	}
	if v6.Is6() && !v6.Is4In6() {
		h.IPv6 = v6.As16()
	}
	if mbps := math.Round(linkBps / 1e6); mbps > 0 {
		h.LinkMbps = uint32(min(mbps, math.MaxUint32))
	}
	if mtu > 0 {
		h.MTU = uint32(mtu)
	}
	return h
}

// DefaultCloseWait is Config.CloseWait's zero value.
const DefaultCloseWait = 5 * time.Second

// DefaultLinger is Config.Linger's zero value: 20 times the engine's
// default RPC timeout (100 ms), under DefaultCloseWait.
const DefaultLinger = 2 * time.Second

// DefaultZeroCopyMin is Config.ZeroCopyMin's zero value: a message of a
// packet or two. Sending a packet from the arena costs a second mbuf and
// an attach (a C call) where a copy costs a memcpy of the payload; host's
// BenchmarkSendPath measures both (docs/datapath.md, "Sending from the
// arena, measured").
const DefaultZeroCopyMin = 4096

// DefaultMaxBacklog is Config.MaxBacklog's zero value: room for a Response
// and a Released of every RPC the worker may have outstanding, plus a
// completion ring's worth, so that a worker that pauses while its RPCs
// end keeps its session.
func DefaultMaxBacklog(c Config) int { return 2*c.MaxOutstanding + int(c.Params.CQEntries) }

// Hub serves one host's workers. It is an in-loop application of its
// host (its Poll, Flush and Stop are the loop's); the control socket's
// goroutines hand it each session's attach and detach, in order, on one
// channel (lifecycle.go).
type Hub struct {
	h   Host
	ep  *engine.Endpoint
	srv *shm.Server
	set *Set // the hubs behind srv: this one, or a port's shards' (NewSet)
	lim Config
	// load is how many sessions the hub serves or will (attached, not
	// gone yet): the set gives a new worker to the least loaded.
	load atomic.Int32
	// events are the sessions' attaches and detaches, in the order their
	// control goroutines made them (lifecycle.go).
	events chan event
	// stopped is closed when the loop has stopped serving (its drain): a
	// control goroutine waiting for a detach then frees the region itself.
	stopped  chan struct{}
	stopOnce atomic.Bool
	sessions []*session
	draining []*session // gone, waiting for the packets still sending from their arenas
	slots    []shm.Slot // PopBurst buffer
	// lingering are the sessions whose workers left while their replies
	// still go out (linger.go).
	lingering []*session

	// bells are what the loop sleeps on (doorbell.go): the doorbell of
	// each session it serves, which its worker rings when it finds its
	// submission ring's wait flag raised, and bell, the hub's own, which
	// its control goroutines and Stop ring.
	bells       *shm.Bells
	bell        *shm.Doorbell
	bellUsers   atomic.Int32 // Close and Stop still to come (letGoBell)
	bellMu      sync.RWMutex // closeBells' against ring's
	bellsClosed bool         // closeBells ran (bellMu)
	closeOnce   atomic.Bool

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
	CredentialRefusals   uint64 // connections refused by the allow-lists
	SessionLimitRefusals uint64 // connections refused by MaxSessionsPerUID
	Submissions          uint64
	BadEntries           uint64 // refused by validation (an error completion each)
	Refused              uint64 // valid entries the engine refused (port in use, no such RPC, limit, ...)
	LimitRefusals        uint64 // of Refused: a per-worker limit; and requests dropped for one (outstanding, backlog)
	NoRecvSpace          uint64 // messages that found no free receive-pool pages
	Completions          uint64
	CQBacklogged         uint64 // completions that waited in the daemon for CQ room
	BacklogFull          uint64 // times a worker's backlog reached MaxBacklog: its SQ then waits unread
	BacklogOverflows     uint64 // sessions ended: a completion owed to them found the backlog at MaxBacklog
	Wakeups              uint64 // eventfd writes
	CorruptRings         uint64 // sessions ended because a ring index was corrupt
	ZeroCopyMessages     uint64 // messages sent from the arena as external buffers (no copy)
	// Messages whose payload was copied into the frames instead, by
	// why: shorter than Config.ZeroCopyMin; zero-copy turned off
	// (ZeroCopyMin negative); the port cannot send from memory (a
	// physical NIC, a device without chained mbufs).
	CopiedShort, CopiedOff, CopiedDevice uint64
	QuietAccepts                         uint64 // Sends and Replies accepted without an Accepted completion (SubFlagQuiet)
	PrioritySends                        uint64 // Sends that named the priority of their unscheduled packets (SubFlagPriority)
	PagesOnSubmit                        uint64 // page runs given back on a Send or Reply (FeatureReturnOnSubmit)
	ActiveSessions                       uint64
	OutstandingRPCs                      uint64
	HeldPages, FreePages                 uint64
	Backlogged                           uint64 // completions waiting in the daemon for CQ room now
	// Closing workers (linger.go): replies taken from a worker's ring
	// after it left; replies still going when it left, kept until acked
	// (lingered); and of those, the ones ended at Config.Linger
	// (abandoned). LingeringSessions is a gauge: sessions whose replies
	// still go out after their workers left.
	RepliesAfterClose, LingeredReplies, AbandonedReplies uint64
	LingeringSessions                                    uint64
}

// New opens the control socket at c.Path for workers of h. Give the hub
// to its host as an in-loop application (host.AddApp) before the loop
// starts; Close it while the loop still runs, or after its Stop. A port of
// several shards has a hub on each, behind one socket (NewSet).
func New(h Host, c Config) (*Hub, error) {
	set, err := NewSet([]Host{h}, c)
	if err != nil {
		return nil, err
	}
	return set.hubs[0], nil
}

// Poll is the loop's step (host.App): sessions in and out, submissions,
// completions. It returns the submissions it handled (work, for the idle
// strategy).
func (hub *Hub) Poll(now int64) int {
	hub.now = now
	before := hub.counters.Submissions
	hub.takeEvents()
	if len(hub.lingering) > 0 {
		hub.linger()
	}
	hub.drain()
	for i := 0; i < len(hub.sessions); i++ {
		ws := hub.sessions[i]
		ws.poll()
		// A broken or hostile worker, or one that does not read its
		// completions: end its session (the socket closes, the control
		// goroutine frees the region).
		switch {
		case ws.SQ.Corrupt() != 0 || ws.CQ.Corrupt() != 0:
			hub.counters.CorruptRings++
		case ws.overflow:
			hub.counters.BacklogOverflows++
		default:
			continue
		}
		hub.remove(ws)
		ws.s.Close()
		i--
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
	if hub == hub.set.hubs[0] { // the socket's, counted once for the set
		c.CredentialRefusals = hub.srv.Refused()
		c.SessionLimitRefusals = hub.srv.SessionLimitRefusals()
	}
	c.ActiveSessions = uint64(len(hub.sessions))
	c.LingeringSessions = uint64(len(hub.lingering))
	for _, ws := range hub.sessions {
		c.OutstandingRPCs += uint64(ws.outst)
		c.HeldPages += uint64(ws.Pages.Held())
		c.FreePages += uint64(ws.Pages.Free())
		c.Backlogged += uint64(len(ws.backlog))
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
