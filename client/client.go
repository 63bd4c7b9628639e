package client

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// DefaultMaxMessage is the largest message of a region whose daemon was
// not configured for longer ones, in bytes: the kernel Homa module's
// HOMA_MAX_MESSAGE_LENGTH (wire.MaxMessageLength). The region's own limit
// (its header's MaxMessage, up to 2^31 − 1) is Client.MaxMessage;
// completions of longer messages are treated as malformed.
const DefaultMaxMessage = shm.DefaultMaxMessage

const (
	// defaultSpin is Options.Spin when it is 0.
	defaultSpin = 50 * time.Microsecond
	// answerWait bounds the wait for the daemon to take a submission and
	// answer it, and Send's and Reply's wait for arena space.
	answerWait = 10 * time.Second
	// burst is how many completions are read from the ring at once.
	burst = 32
)

// Options tune a Client. The zero value is the default.
type Options struct {
	// Spin is how long a wait polls the completion ring before it sleeps
	// on the session's eventfd: 0 is the default, 50µs; negative never
	// spins (every wait that finds nothing sleeps at once).
	Spin time.Duration
}

// Client is one attached worker session: its region, its two rings, the
// transmit arena's allocator and the completions read but not yet taken.
// It has no locks: use it (and its Messages) from one goroutine at a time.
type Client struct {
	att   *shm.Attach
	sq    *shm.Producer
	cq    *shm.Consumer
	lim   shm.Limits
	amem  []byte // the transmit arena
	pool  []byte // the receive pool
	efd   int    // the wake-up eventfd
	ctl   int    // the control connection's descriptor (daemon.go); Attach owns it
	spin  time.Duration
	arena arena

	cookie   uint64                // the last cookie given to a submission (0 is never used)
	inflight map[uint64]sent       // cookie → arena range the engine may still read
	rpcs     map[uint64]clientRPC  // client RPC id → its Send, until its result is dispatched
	queue    []*Message            // requests and RPC results not yet taken, oldest first
	toReturn []pageRun             // pages to give back: released Messages' and those dispatch refused
	features uint32                // the header's Feature bits this client uses
	replies  map[uint64]asyncReply // cookie → ReplyAsync not yet answered

	awaiting  uint64         // cookie whose Accepted/Error a call waits for; 0: none
	awaitSend bool           // awaiting is a Send's: its Accepted starts an RPC to sendPeer
	sendPeer  Addr           // that Send's destination
	answered  bool           // the answer to awaiting arrived
	answer    shm.Completion // that answer

	slots [burst]shm.Slot
	sub   shm.Slot
	sleep sleepState
	stats Stats

	closed   bool
	gone     bool      // the daemon closed the control connection: calls fail with ErrDaemonGone
	nextLook time.Time // when a spinning or empty-handed wait may read the control connection again
}

// sent is an arena range under a submission: the range taken and the
// message's length in it, and the pages that rode on the submission
// (FeatureReturnOnSubmit), which are ours again if the daemon refuses the
// entry as malformed.
type sent struct {
	span   arenaSpan
	length uint32
	rode   pageRun
}

// clientRPC is what Send knows of an RPC it started.
type clientRPC struct {
	cookie    uint64
	peer      Addr
	abandoned bool // Call gave up on it: drop its result
}

// asyncReply is a ReplyAsync awaiting the daemon's answer (quiet: it asked
// for none; its Released, or an Error, is the answer).
type asyncReply struct {
	id    uint64
	peer  Addr
	quiet bool
}

// pageRun is a run of receive-pool pages.
type pageRun struct{ page, pages uint32 }

// Stats are a Client's counters since Dial, and two gauges.
type Stats struct {
	Sent           uint64 // requests the daemon accepted (Send, Call)
	Replies        uint64 // replies the daemon accepted
	ReplyRefused   uint64 // ReplyAsync replies the daemon refused (also in Errors; each queued as a failed Message)
	Received       uint64 // requests and responses delivered, Released or not
	Errors         uint64 // error completions: refused submissions and failed RPCs
	Sleeps         uint64 // waits on the eventfd
	Spurious       uint64 // wake-ups from the eventfd that found no completion
	ArenaWaits     uint64 // submissions that found the arena full and waited
	SQFull         uint64 // submissions that found the submission ring full and waited
	BadCompletions uint64 // completions that failed validation, skipped
	Stray          uint64 // valid completions matching nothing this client did; skipped, pages given back
	RingCorrupt    uint64 // out-of-range ring indices seen (either ring): the daemon is broken
	PagesOnSubmit  uint64 // page runs given back on a Send or Reply instead of a ReturnPages entry
	Doorbells      uint64 // submissions that found the daemon's loop asleep and rang its doorbell
	ArenaFree      uint64 // gauge: free bytes in the transmit arena
	PagesHeld      uint64 // gauge: pool pages held by Messages not yet released
}

// Dial attaches to the daemon's control socket at path, maps the region
// and attaches to both rings (producer of submissions, consumer of
// completions). The connection stays open: its end is how the Client
// learns that the daemon has gone (ErrDaemonGone).
func Dial(path string, opt Options) (*Client, error) {
	a, err := shm.Dial(path)
	if err != nil {
		return nil, err
	}
	if a.Layout.Features&shm.FeatureDoorbell != 0 {
		if err := a.AskDoorbell(); err != nil { // the daemon offered it: not getting it is a broken daemon
			a.Close()
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	l := &a.Layout
	sq, err := shm.NewProducer(l.SQ(a.Region), l.SQEntries)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("client: submission ring: %w", err)
	}
	cq, err := shm.NewConsumer(l.CQ(a.Region), l.CQEntries)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("client: completion ring: %w", err)
	}
	ctl, err := controlFD(a)
	if err != nil {
		a.Close()
		return nil, err
	}
	spin := opt.Spin
	if spin == 0 {
		spin = defaultSpin
	}
	return &Client{
		att: a, sq: sq, cq: cq, lim: l.Limits(0),
		amem: l.Arena(a.Region), pool: l.Pool(a.Region), efd: a.EventFD, ctl: ctl, spin: spin,
		arena:    newArena(l.ArenaSize),
		inflight: make(map[uint64]sent),
		rpcs:     make(map[uint64]clientRPC),
		replies:  make(map[uint64]asyncReply),
		queue:    make([]*Message, 0, 64),
		features: l.Features & (shm.FeatureQuietAccept | shm.FeatureReturnOnSubmit),
	}, nil
}

// Close detaches: the daemon aborts this worker's RPCs, unbinds its ports
// and frees the region. The replies it accepted, or that Reply and
// ReplyAsync left on the submission ring, still go out, as a TCP close
// delivers what was written: the daemon keeps them until each is acked,
// for its workers.linger at most (their clients then fail with
// ErrPortUnreachable). The region is unmapped, so the Data of every
// Message not yet released becomes invalid. Later calls return ErrClosed;
// Release becomes a no-op. Closing twice, or after the daemon has gone,
// is not an error.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	for _, m := range c.queue {
		m.Data = nil
	}
	c.queue = nil
	return c.att.Close()
}

// MaxMessage is the largest message this session sends or receives, in
// bytes: the region's (DefaultMaxMessage unless the daemon's
// protocol.max_message is higher and its regions are sized for it). A
// message above DefaultMaxMessage goes only to peers the daemon knows to
// run homa-dpdk; to others Send and Reply fail with ErrPeerMessageLength.
func (c *Client) MaxMessage() int { return int(c.lim.MaxMessage) }

// HostInfo is what the daemon says of the host whose socket a Client
// attached to: the port's addresses (a peer reaches this worker at one of
// them) and its link.
type HostInfo struct {
	IPv4     netip.Addr // the host's IPv4 address; the zero Addr when it has none
	IPv6     netip.Addr // the host's IPv6 address; the zero Addr when it has none
	LinkMbps uint32     // the port's link speed, Mbit/s; 0: unknown
	MTU      uint32     // the port's IP MTU, bytes; 0: unknown
}

// Host is the host this session's daemon serves it on, read from the
// region's header at Dial; false when the daemon did not say (one from
// before shm.FeatureHostInfo, or a server not told its host). At least
// one address of a HostInfo returned with true is valid.
func (c *Client) Host() (HostInfo, bool) {
	l := &c.att.Layout
	if l.Features&shm.FeatureHostInfo == 0 {
		return HostInfo{}, false
	}
	var h HostInfo
	if l.Host.IPv4 != [4]byte{} {
		h.IPv4 = netip.AddrFrom4(l.Host.IPv4)
	}
	if l.Host.IPv6 != [16]byte{} {
		h.IPv6 = netip.AddrFrom16(l.Host.IPv6)
	}
	h.LinkMbps, h.MTU = l.Host.LinkMbps, l.Host.MTU
	return h, true
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	s := c.stats
	s.RingCorrupt = c.sq.Corrupt() + c.cq.Corrupt()
	s.ArenaFree = c.arena.avail
	return s
}
