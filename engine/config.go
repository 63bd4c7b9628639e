package engine

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Config configures an Endpoint. Zero numeric fields take the defaults of
// DefaultConfig (kernel Homa's), so a Config need only name the address,
// clock and resolver.
type Config struct {
	IP  [4]byte  // this endpoint's IPv4 address (zero: none)
	IP6 [16]byte // this endpoint's IPv6 address (zero: none): peers are reached over either family
	MAC wire.MAC // this endpoint's Ethernet address

	// Resolve returns the neighbour entry of ip's next hop, starting
	// resolution if needed; nil means no route (sends fail with
	// ErrPeerUnknown). Called once per peer, when the engine creates it
	// (an RPC to it starts, or a frame from it arrives); again only for a
	// peer it returned nil for, or whose entry is LinkUnreachable, when
	// another RPC to that peer starts or a response to it is sent (so a
	// route added since, or a table that retries a failed resolution when
	// asked, brings the peer back). See Neighbour for what the host calls
	// as the entry changes. StaticNeighbours.Resolve serves tests.
	Resolve func(ip netip.Addr) *Neighbour

	// Clock returns the time in ns (monotonic). The engine reads it once
	// per call into Receive, ReceiveLink, ReceiveICMP, Run, Send, Reply,
	// NeighbourReady and NeighbourFailed (outside a batch), never
	// time.Now.
	Clock func() int64

	MTU int // bytes of IPv4 packet per frame (1500)

	// IPChecksumOffload leaves the IPv4 header checksum 0 for the NIC to
	// fill in; the transmit side marks each packet for offload.
	IPChecksumOffload bool

	// PCP tags every frame with an 802.1Q header whose PCP is the packet's
	// priority, on VLAN (priority_marking = pcp). Received frames are
	// accepted tagged or not.
	PCP              bool
	VLAN             uint16
	UnschedBytes     int // bytes a message may send before grants (40,000)
	MaxMessageLength int // largest message sent or accepted, bytes (1,000,000; see KernelPeer)

	// KernelPeer, if set, reports whether the host at ip may run kernel
	// Homa, which neither sends nor accepts a message above
	// wire.MaxMessageLength (1,000,000 bytes): messages to and from such
	// a peer are held to that — Send and Reply fail with
	// ErrPeerMessageLength, a DATA claiming more is dropped
	// (DropBadLength) — while MaxMessageLength (at most
	// wire.MaxMessageLimit) applies to the others. Asked once per peer,
	// when the endpoint creates it; it runs inside an engine call and
	// must not call back into the endpoint. nil: no peer is, and
	// MaxMessageLength applies to every peer.
	KernelPeer func(ip netip.Addr) bool

	// PeerOptions, if set, says how to frame packets to the peer at ip
	// and which kernel Homa it runs (PeerOptions). Asked once per peer,
	// when the endpoint creates it, as KernelPeer is. nil: native framing
	// (protocol 146) and VariantAuto for every peer.
	PeerOptions func(ip netip.Addr) PeerOptions

	// Upstream makes the endpoint speak the upstream Linux subset itself,
	// to every peer (VariantUpstream describes the subset): whole
	// messages without grants, no GRANT or CUTOFFS, 36-byte RESENDs, and
	// DATA's incoming, cutoff_version and pad bytes and every packet's
	// flags and urgent 0, as that module sends them. For interoperability
	// tests and for a host that must look like one. PeerOptions' Hijack
	// is ignored then: the hijack markers are those flags and urgent.
	Upstream bool

	// MessagePriorityResends makes RESENDs ask for the retransmitted
	// bytes at the message's own priority (its scheduled priority once
	// granted, else its unscheduled one), and for its first packet only
	// while none has arrived, so that recovering a long message's bytes
	// does not overtake short messages. Off (the default), RESENDs are
	// kernel Homa's: every one names priority 7, and one for a message
	// of which nothing has arrived asks for everything sent so far
	// (offset 0, length 0xFFFFFFFF).
	MessagePriorityResends bool

	// Checksum fills the Homa checksum (wire.HomaChecksum: TCP's, under a
	// pseudo-header with protocol 6) of every packet sent, as the full
	// kernel module does since March 2026; otherwise only TCP-hijacked
	// packets carry it (they must: NICs and the TCP path check it) and
	// the field is 0 on protocol 146, which kernel receivers do not check.
	// Computed in software, over header and payload.
	Checksum bool
	// VerifyChecksum says which received packets have their Homa checksum
	// checked (a wrong one is dropped, wire.DropBadHomaChecksum):
	// VerifyHijacked (the zero value) the TCP-hijacked ones, VerifyAll
	// every packet (only for peers that all fill it: homa-dpdk with
	// Checksum, or the full module since March 2026), VerifyNone none.
	VerifyChecksum ChecksumCheck

	// MaxGaps bounds the missing byte ranges an incoming message may
	// have below its highest byte received (64): a DATA packet that would
	// open one more is dropped (DropTooManyGaps) and comes again when the
	// sender answers a RESEND, once earlier gaps are filled. Kernel Homa
	// keeps any number; a sender that opens a gap per packet would make
	// every later packet and every resend check walk them all.
	MaxGaps int
	// MaxResendsPerRPC bounds the RESENDs one resend check sends for one
	// incoming message (8): its lowest gaps first, the rest at the next
	// check (ResendsDeferred).
	MaxResendsPerRPC int
	// MaxResendBytes bounds the bytes one RPC retransmits for RESENDs per
	// ResendInterval ticks (400,000, kernel Homa's max_incoming: what a
	// receiver may be missing at once); the rest of what RESENDs ask in
	// that interval is not sent (ResendsLimited).
	MaxResendBytes int

	// MaxServerRPCs bounds the server RPCs alive at once (8,192), and
	// MaxServerRPCsPerPeer those of one client address (1,024): a request
	// beyond either is dropped unanswered (DropServerRPCLimit,
	// DropPeerRPCLimit) and its client retries through RESEND and
	// RPC_UNKNOWN; at MaxServerRPCs, an incoming request silent for
	// ResendTicks is ended to make room first (RequestsEvicted). Kernel
	// Homa has no such bound.
	MaxServerRPCs        int
	MaxServerRPCsPerPeer int

	// MaxStagingBytes bounds the endpoint's staging memory, which holds
	// the first bytes of incoming messages until they are committed (16
	// MiB; DropStagingFull beyond it). See recvbuf.go.
	MaxStagingBytes int
	// MaxRecvHeapBytes bounds the heap buffers of committed incoming
	// messages not yet delivered, for ports without PortHooks.RecvBuf
	// (128 MiB): a message that would pass it ends as if RecvBuf had no
	// buffer (DropRecvHeapFull).
	MaxRecvHeapBytes int

	// Grant configures the receiver's scheduler (zero fields take the
	// defaults; FIFOFraction < 0 turns the FIFO share off); its
	// MaxSchedPrio is derived from Cutoffs.
	Grant sched.GrantConfig

	// Cutoffs are this endpoint's unscheduled priority cutoffs, sent to
	// peers in CUTOFFS packets (sched.DefaultCutoffs).
	Cutoffs sched.Cutoffs
	// PeerCutoffs are what a new peer is taken to use until its CUTOFFS
	// arrive (zero: sched.PeerDefaultCutoffs, everything at priority 6).
	// A cluster whose hosts all use one set (the simulation's) starts as
	// if it had run for a while.
	PeerCutoffs sched.Cutoffs

	TickNs         int64 // timer tick, ns (1 ms)
	ResendTicks    int   // silent ticks before the first RESEND (5)
	ResendInterval int   // ticks between RESENDs (5)
	TimeoutTicks   int   // silent ticks before an RPC fails (100)
	// ResolveTimeoutTicks bounds how long an RPC waits for its peer's
	// link address before it fails with ErrTimeout: a backstop, for the
	// neighbour table fails it first when resolution gives up
	// (NeighbourFailed), after as many requests as it makes; a host sets
	// it above that. Waiting does not count as silence. 0 takes
	// 10 × TimeoutTicks.
	ResolveTimeoutTicks int
	RequestAckTicks     int // ticks after a response is sent before NEED_ACK (2)
	// BufferWaitTicks bounds how long a response that found no receive
	// buffer, but can fit once memory comes free, waits for one (asking
	// for its bytes again) before its RPC fails with ErrNoBufferSpace: a
	// worker that never gives its pool back does not keep RPCs alive. 0
	// takes 10 × TimeoutTicks.
	BufferWaitTicks int
	// MaxRestarts bounds how often a client RPC resends its request
	// after RPC_UNKNOWN; the next RPC_UNKNOWN fails it with ErrTimeout.
	// Restarts are at least ResendInterval ticks apart and do not reset
	// the RPC's silence. 0 takes TimeoutTicks / ResendInterval (20).
	MaxRestarts int
	// BusyTimeoutTicks bounds how long an RPC waiting on its peer (a
	// client RPC, or a server RPC receiving its request) lives without
	// progress (no new bytes of its incoming message, no more of its
	// outgoing one granted) while the peer keeps answering: BUSY, GRANTs
	// repeating an offset, DATA repeating bytes. Then a client RPC fails
	// with ErrBusyTimeout (errors.Is ErrTimeout) and a server RPC is
	// dropped (BusyTimeouts). Kernel Homa has no such bound: a server
	// that answers every RESEND with BUSY keeps its client waiting for
	// ever. 0 takes 100 × TimeoutTicks (10 s at the defaults); below 0,
	// none.
	BusyTimeoutTicks int
	// GrantLapseTicks is how long an incoming message that was granted
	// bytes may go without sending them (lapse.go): when, that many ticks
	// after a tick at which it had every byte granted before, it has
	// neither the bytes granted then nor half of those it lacked then,
	// it lapses (GrantsLapsed): it gives up its place among the messages
	// granted to, its granted-but-unreceived bytes stop counting towards
	// Grant.MaxIncoming, and it is granted nothing more until they have
	// arrived; and its peer takes turns, one message granted to at a
	// time, for TimeoutTicks (GrantTurnWaits). A sender that sends a
	// granted byte every few ticks is never silent, and kept both for
	// ever (kernel Homa does). A sender whose RESEND waits (ResendTicks
	// plus two ResendIntervals while our link is busy) is in time; one
	// that lapses is back with the packet that brings what it held. 0
	// takes 4 × ResendTicks (20); below 0, never.
	GrantLapseTicks int

	LinkBps       int64 // link rate for the pacer, bits/s; 0 = unpaced
	MaxNICQueueNs int64 // pacer's NIC backlog limit, ns (5,000)
	// PacerThreshold: packets of a message with fewer unsent bytes than
	// this go at once, never deferred by the pacer (1,000, kernel Homa's
	// throttle_min_bytes; sched.ThrottleMinBytes); below 0, none do.
	PacerThreshold    int
	PacerFIFOFraction int // per thousand of link bytes to the oldest message (50; < 0 = none)
	// ScheduledDataQueue passes scheduled DATA (bytes past a message's
	// unscheduled ones) to the Transmitter at priority 0, its lowest TX
	// queue, whatever priority its receiver granted (the IPv4 header still
	// carries that one, for the switches): those packets then leave in the
	// pacer's SRPT order instead of a NIC's strict priority between its
	// queues overtaking one message's queued packets with another's for as
	// long as it sends (found in the cluster simulation; off in
	// DefaultConfig, on in the daemon's and perf cluster's defaults).
	ScheduledDataQueue bool

	// Incast configures the unscheduled allowance this endpoint
	// advertises (sched.DefaultIncastConfig; Budget 0 keeps it off).
	Incast sched.IncastConfig
	// AllowanceTicks is how long a peer's advertised allowance holds (10).
	AllowanceTicks int

	// MaxPeers bounds the peers the endpoint holds (16,384): a frame from
	// a new address when the table is full evicts the peer idle longest
	// (no live RPCs), or is dropped when none is (DropPeerTableFull).
	// Keep it above MaxServerRPCs, so that peers remote hosts keep busy
	// cannot fill it. The application's own RPCs to new addresses may
	// take it past the bound.
	MaxPeers int
	// PeerIdleTicks is how long a peer with no live RPCs is kept after it
	// was last used (10,000: 10 s).
	PeerIdleTicks int
	// Forget, if set, is called with a peer's address when the endpoint
	// drops the peer (PeersEvicted): it holds no pointer Resolve returned
	// for that address any more, so the host's neighbour table may age
	// the entry out or reuse it, unless another peer's resolution returned
	// the same entry (a gateway) or Resolve is called for the address
	// again, which a later RPC or frame from it does. It runs on the
	// endpoint's goroutine inside an engine call (a frame from a new
	// address, or Run) and must not call back into the endpoint.
	Forget func(ip netip.Addr)

	// IDSeed is the first client RPC id (made even), for tests that want
	// the same ids every run; 0, as a host should leave it, takes a
	// random one (crypto/rand, read once in New). A restarted host must not
	// reuse its old ids (servers remember recently acknowledged ones and
	// drop requests that carry them), and ids that follow one another
	// from a known start are easy to guess for whoever would send RESEND
	// or RPC_UNKNOWN for our RPCs.
	IDSeed uint64

	// ICMPRate limits the ICMP and ICMPv6 port unreachables the endpoint
	// sends, per destination and over all (icmplimit.go; Linux's limits
	// by default). A sharded endpoint shares Shard.ICMP's limiter
	// instead, when set.
	ICMPRate ICMPRate

	// Shard makes this endpoint one shard of a port served by several
	// (shard.go): it allocates, and takes packets for, only the RPCs
	// whose ids are its share. Zero: not sharded.
	Shard Shard

	// Copier, when set, takes the receive copies of message bytes into
	// committed buffers off the polling loop (copier.go): payloads of at
	// least CopyMin bytes (0: DefaultCopyMin). nil: the engine copies.
	Copier  Copier
	CopyMin int
}

// DefaultConfig returns kernel Homa's defaults
// (docs/wire.md#kernel-homas-defaults) with no address, clock or resolver.
func DefaultConfig() Config {
	return Config{
		MTU: 1500, UnschedBytes: 40_000, MaxMessageLength: wire.MaxMessageLength,
		MaxGaps: 64, MaxResendsPerRPC: 8, MaxResendBytes: 400_000,
		MaxServerRPCs: 8192, MaxServerRPCsPerPeer: 1024,
		MaxStagingBytes: 16 << 20, MaxRecvHeapBytes: 128 << 20,
		MaxPeers: 16384, PeerIdleTicks: 10_000,
		Grant: sched.DefaultGrantConfig(), Cutoffs: sched.DefaultCutoffs(),
		TickNs: 1_000_000, ResendTicks: 5, ResendInterval: 5, TimeoutTicks: 100,
		RequestAckTicks: 2, MaxNICQueueNs: 5_000, PacerFIFOFraction: 50, PacerThreshold: sched.ThrottleMinBytes,
		Incast: sched.DefaultIncastConfig(), AllowanceTicks: 10,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&c.MTU, d.MTU)
	setInt(&c.UnschedBytes, d.UnschedBytes)
	setInt(&c.MaxMessageLength, d.MaxMessageLength)
	setInt(&c.MaxGaps, d.MaxGaps)
	setInt(&c.MaxResendsPerRPC, d.MaxResendsPerRPC)
	setInt(&c.MaxResendBytes, d.MaxResendBytes)
	setInt(&c.MaxServerRPCs, d.MaxServerRPCs)
	setInt(&c.MaxServerRPCsPerPeer, d.MaxServerRPCsPerPeer)
	setInt(&c.MaxStagingBytes, d.MaxStagingBytes)
	setInt(&c.MaxRecvHeapBytes, d.MaxRecvHeapBytes)
	setInt(&c.MaxPeers, d.MaxPeers)
	setInt(&c.PeerIdleTicks, d.PeerIdleTicks)
	setInt(&c.ResendTicks, d.ResendTicks)
	setInt(&c.ResendInterval, d.ResendInterval)
	setInt(&c.TimeoutTicks, d.TimeoutTicks)
	setInt(&c.ResolveTimeoutTicks, 10*c.TimeoutTicks)
	setInt(&c.BufferWaitTicks, 10*c.TimeoutTicks)
	setInt(&c.RequestAckTicks, d.RequestAckTicks)
	setInt(&c.MaxRestarts, max(c.TimeoutTicks/c.ResendInterval, 1))
	setInt(&c.BusyTimeoutTicks, 100*c.TimeoutTicks)
	setInt(&c.GrantLapseTicks, 4*c.ResendTicks)
	setInt(&c.PacerFIFOFraction, d.PacerFIFOFraction)
	setInt(&c.PacerThreshold, d.PacerThreshold)
	setInt(&c.AllowanceTicks, d.AllowanceTicks)
	c.PacerFIFOFraction = max(c.PacerFIFOFraction, 0)
	setInt(&c.Grant.MaxIncoming, d.Grant.MaxIncoming)
	setInt(&c.Grant.MaxOvercommit, d.Grant.MaxOvercommit)
	setInt(&c.Grant.FIFOFraction, d.Grant.FIFOFraction)
	setInt(&c.Grant.FIFOIncrement, d.Grant.FIFOIncrement)
	setInt(&c.Grant.Increment, d.Grant.Increment)
	c.Grant.FIFOFraction = max(c.Grant.FIFOFraction, 0)
	if c.Cutoffs == (sched.Cutoffs{}) {
		c.Cutoffs = d.Cutoffs
	}
	if c.Incast.UnschedBytes == 0 {
		c.Incast.UnschedBytes = c.UnschedBytes
	}
	if c.TickNs == 0 {
		c.TickNs = d.TickNs
	}
	if c.MaxNICQueueNs == 0 {
		c.MaxNICQueueNs = d.MaxNICQueueNs
	}
	c.Grant.MaxSchedPrio = c.Cutoffs.MaxSchedPrio()
	return c
}

func (c *Config) validate() error {
	switch {
	case c.Clock == nil:
		return errors.New("engine: Config.Clock is nil")
	case wire.PayloadPerPacket(c.MTU, wire.IPv4MinHeaderLen) < 1:
		return fmt.Errorf("engine: MTU %d leaves no room for data", c.MTU)
	case c.MaxMessageLength < 1 || c.MaxMessageLength > wire.MaxMessageLimit:
		return fmt.Errorf("engine: MaxMessageLength %d out of range 1..%d", c.MaxMessageLength, wire.MaxMessageLimit)
	case c.VLAN > 4094:
		return fmt.Errorf("engine: VLAN %d out of range 0..4094", c.VLAN)
	case c.Shard.Count < 0 || c.Shard.Count > 1 && (c.Shard.Index < 0 || c.Shard.Index >= c.Shard.Count):
		return fmt.Errorf("engine: Shard %d of %d: want 0 <= Index < Count", c.Shard.Index, c.Shard.Count)
	case c.Shard.Count > 1 && c.Shard.ForwardAck == nil:
		return errors.New("engine: a sharded endpoint needs Shard.ForwardAck")
	case c.VerifyChecksum > VerifyNone:
		return fmt.Errorf("engine: VerifyChecksum %d unknown", c.VerifyChecksum)
	case c.Grant.MaxIncoming < 1:
		return fmt.Errorf("engine: Grant.MaxIncoming %d", c.Grant.MaxIncoming)
	case c.MaxStagingBytes < stageChunkSize:
		return fmt.Errorf("engine: MaxStagingBytes %d below one staging chunk (%d)", c.MaxStagingBytes, stageChunkSize)
	}
	for _, b := range []struct {
		name string
		v    int
	}{
		{"MaxGaps", c.MaxGaps}, {"MaxResendsPerRPC", c.MaxResendsPerRPC}, {"MaxResendBytes", c.MaxResendBytes},
		{"MaxServerRPCs", c.MaxServerRPCs}, {"MaxServerRPCsPerPeer", c.MaxServerRPCsPerPeer},
		{"MaxRecvHeapBytes", c.MaxRecvHeapBytes}, {"MaxPeers", c.MaxPeers}, {"PeerIdleTicks", c.PeerIdleTicks},
		{"MaxRestarts", c.MaxRestarts},
	} {
		if b.v < 1 {
			return fmt.Errorf("engine: %s %d, want at least 1", b.name, b.v)
		}
	}
	return nil
}
