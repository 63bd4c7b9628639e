package host

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Config is what a Host is built from: a started port (SetupPort) and the
// protocol settings.
type Config struct {
	Port *dpdk.Port
	Pool *dpdk.Mempool // the port's mbufs: the transmit side allocates from it
	IP   [4]byte
	IP6  [16]byte // the port's IPv6 address; zero: none
	MAC  wire.MAC
	// PrioMap maps the 8 Homa priorities onto the port's TX queues.
	PrioMap nicq.Map
	LinkBps float64 // the port's rate, bits/s (the pacer's and the TX scheduler's)
	// Engine holds the protocol settings; IP, MAC, Clock, Resolve, the
	// link rate, marking and checksum offload are filled in by New.
	Engine engine.Config
	// Static neighbours: addresses that need no ARP, or no neighbour
	// discovery.
	Static  map[[4]byte]wire.MAC
	Static6 map[[16]byte]wire.MAC
	ARP     ARPConfig
	Faults  Faults
	// Subnet is the port's IPv4 prefix and Gateway the next hop for
	// addresses outside it (zero: none, such addresses are unreachable).
	// An invalid Subnet puts every address on-link.
	Subnet  netip.Prefix
	Gateway [4]byte
	// Subnet6 and Gateway6 are the same for IPv6 (link-local addresses
	// are always on-link).
	Subnet6  netip.Prefix
	Gateway6 [16]byte
	// Offloads are what SetupPort enabled on the port.
	Offloads Offloads
	// PCP tags every frame with an 802.1Q header on VLAN whose PCP is the
	// packet's priority.
	PCP     bool
	VLAN    uint16
	Capture *dpdk.Capture // nil: no capture
	CapIf   int           // this port's interface in the capture
	// Redial restarts the port while its link is down, with back-off:
	// for a net_memif client, which never dials its server again by
	// itself (see link.go).
	Redial bool
	Burst  int // packets per RX and TX burst (32)
	// Shards, when set, makes the host shard ShardIndex of a port run by
	// several (shard.go): it polls RxQueues (nil: every RX queue; empty:
	// none, its frames handed over by the shard that takes them), sends on
	// the PrioMap's queues from TxQueueBase on, and its engine owns its
	// share of the RPCs.
	Shards      *ShardSet
	ShardIndex  int
	RxQueues    []uint16
	TxQueueBase uint16
	// Copier, when set, makes the host's receive copies off its loop: a
	// lane of a Copier thread (copier.go) for this host alone. Close the
	// Copier after the loop.
	Copier  *CopyLane
	Clock   func() int64 // monotonic ns (NewClock)
	WallOff int64        // Clock + WallOff is Unix ns (capture timestamps)
}

// ARPConfig configures neighbour resolution.
type ARPConfig struct {
	Timeout time.Duration // wait for a reply before asking again
	Aging   time.Duration // a learned entry's lifetime
	Retries int           // requests before giving up for a while
}

// Software TX queueing: each priority's queue holds up to txQueueCapacity
// packets, but the engine gets no buffer once txHighWater packets wait in
// all of them together (a few bursts: a port that keeps up never has more),
// which bounds the mbufs parked here well below the pool's size.
const (
	txQueueCapacity = 1024
	txHighWater     = 256
)

// New builds a host on a started port.
func New(c Config) (*Host, error) {
	if c.Burst == 0 {
		c.Burst = 32
	}
	if c.Clock == nil {
		return nil, fmt.Errorf("host %v: no clock", c.addr())
	}
	sched, err := nicq.NewScheduler[*dpdk.Mbuf](nicq.Config{
		Map: c.PrioMap, Capacity: txQueueCapacity, Burst: c.Burst, LinkBps: c.LinkBps, MaxNICQueue: int64(time.Millisecond),
		TrackCompletions: true, // the crossing holds each frame sent (txb.HoldSent): reapTx
	}, func(m *dpdk.Mbuf) int { return m.PktLen() })
	if err != nil {
		return nil, err
	}
	h := &Host{
		port:    c.Port,
		me:      hostAddr{ip: c.IP, ip6: c.IP6, mac: c.MAC},
		neigh:   newNeighbourTable[[4]byte](c.ARP.Timeout.Nanoseconds(), c.ARP.Aging.Nanoseconds(), c.ARP.Retries),
		neigh6:  newNeighbourTable[[16]byte](c.ARP.Timeout.Nanoseconds(), c.ARP.Aging.Nanoseconds(), c.ARP.Retries),
		sched:   sched,
		tx:      newMbufTx(c.Pool, sched, c.Burst, txHighWater),
		cap:     c.Capture,
		capIf:   c.CapIf,
		fault:   newFaultInjector(c.Faults),
		clock:   c.Clock,
		wallOff: c.WallOff,
		free:    make([]*dpdk.Mbuf, 0, 2*c.Burst+c.PrioMap.Queues()*c.Burst),
	}
	h.portLink.Up, h.portLink.redial = c.Port.LinkUp(), c.Redial
	h.subnet, h.gateway = c.Subnet, c.Gateway
	h.subnet6, h.gateway6 = c.Subnet6, c.Gateway6
	h.pcp, h.vlan = c.PCP, c.VLAN
	h.tx.ipCksum, h.tx.l2Len = c.Offloads.IPv4Checksum, wire.EthernetHeaderLen
	h.tx.multiSeg = c.Offloads.MultiSeg
	if c.PCP {
		h.tx.l2Len += wire.VLANTagLen
	}
	for ip, mac := range c.Static {
		h.neigh.AddStatic(ip, mac)
	}
	for ip, mac := range c.Static6 {
		h.neigh6.AddStatic(ip, mac)
	}
	h.neigh.maxEntries = neighbourBound(c.Engine)
	h.neigh6.maxEntries = h.neigh.maxEntries
	rxq := c.RxQueues
	if rxq == nil {
		for q := range max(c.Port.RxQueues(), 1) {
			rxq = append(rxq, uint16(q))
		}
	}
	h.rxBufs = make([][]*dpdk.Mbuf, len(rxq))
	for i, q := range rxq {
		h.rxBufs[i] = make([]*dpdk.Mbuf, c.Burst)
		if _, err := h.rx.Add(c.Port, q, h.rxBufs[i]); err != nil {
			return nil, err
		}
	}
	h.txBufs = make([][]*dpdk.Mbuf, c.PrioMap.Queues())
	h.txb.HoldSent = true
	h.txQueueBase = c.TxQueueBase
	for q := range h.txBufs {
		h.txBufs[q] = make([]*dpdk.Mbuf, c.Burst)
		if _, err := h.txb.Add(c.Port, c.TxQueueBase+uint16(q), h.txBufs[q]); err != nil {
			return nil, err
		}
	}
	ec := c.Engine
	ec.IP, ec.IP6, ec.MAC = c.IP, c.IP6, c.MAC
	ec.IPChecksumOffload = c.Offloads.IPv4Checksum
	ec.PCP, ec.VLAN = c.PCP, c.VLAN
	ec.Clock = func() int64 { return h.now }
	ec.Resolve = h.resolve
	ec.Forget = h.forget
	if ec.LinkBps == 0 {
		ec.LinkBps = int64(c.LinkBps)
	}
	if ec.ResolveTimeoutTicks == 0 {
		ec.ResolveTimeoutTicks = resolveTimeoutTicks(c.ARP, ec)
	}
	if s := c.Shards; s != nil {
		if c.ShardIndex < 0 || c.ShardIndex >= s.n {
			return nil, fmt.Errorf("host %v: shard %d of %d", c.addr(), c.ShardIndex, s.n)
		}
		h.shards, h.shardIdx = s, c.ShardIndex
		if s.n > 1 {
			ec.Shard = s.engineShard(c.ShardIndex, h, ec.ICMPRate)
		}
	}
	if c.Copier != nil {
		h.copier = c.Copier
		ec.Copier = hostCopier{h}
	}
	h.now = c.Clock()
	if h.ep, err = engine.New(ec, h.tx); err != nil {
		return nil, fmt.Errorf("engine for %v: %w", c.addr(), err)
	}
	h.neigh.onReady = func(ip [4]byte) { h.ep.NeighbourReady(netip.AddrFrom4(ip)) }
	h.neigh.onFailed = func(ip [4]byte) { h.ep.NeighbourFailed(netip.AddrFrom4(ip)) }
	h.neigh6.onReady = func(ip [16]byte) { h.ep.NeighbourReady(netip.AddrFrom16(ip)) }
	h.neigh6.onFailed = func(ip [16]byte) { h.ep.NeighbourFailed(netip.AddrFrom16(ip)) }
	return h, nil
}

// neighbourBound is the most dynamic entries each neighbour table holds:
// what the engine's peers hold (stranger's peers at most MaxPeers, the
// application's own beyond them), and as many again for entries heard
// from requests aimed at us, which make room for held ones (evicted).
func neighbourBound(ec engine.Config) int {
	return 2 * max(ec.MaxPeers, engine.DefaultConfig().MaxPeers)
}

// resolveTimeoutTicks is the engine's backstop for an RPC waiting on ARP:
// past the table's own schedule (a request, then Retries more, Timeout
// apart, before it fails the entry), plus the RPC timeout.
func resolveTimeoutTicks(arp ARPConfig, ec engine.Config) int {
	d := engine.DefaultConfig()
	tick, timeout := ec.TickNs, ec.TimeoutTicks
	if tick <= 0 {
		tick = d.TickNs
	}
	if timeout <= 0 {
		timeout = d.TimeoutTicks
	}
	return int(arp.Timeout.Nanoseconds()*int64(arp.Retries+1)/tick) + timeout
}

// addr is the host's address for messages: IPv4, or IPv6 on an
// IPv6-only port.
func (c *Config) addr() netip.Addr {
	if c.IP == [4]byte{} && c.IP6 != [16]byte{} {
		return netip.AddrFrom16(c.IP6)
	}
	return netip.AddrFrom4(c.IP)
}

// NewClock returns the data path's monotonic clock (ns) and the offset
// that turns its readings into Unix time (for capture timestamps). It
// starts at 1 s, not 0: the engine treats a zero time as "never".
func NewClock() (start time.Time, clock func() int64, wallOff int64) {
	start = time.Now()
	const origin = int64(time.Second)
	return start, func() int64 { return int64(time.Since(start)) + origin }, start.UnixNano() - origin
}
