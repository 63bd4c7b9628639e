package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// hostConfig is what a hostLoop is built from: a started port and the
// protocol settings.
type hostConfig struct {
	port     *dpdk.Port
	pool     *dpdk.Mempool
	ip       [4]byte
	mac      wire.MAC
	txQueues int // TX queues configured on the port
	prioMap  nicq.Map
	linkBps  float64
	engine   engine.Config // IP, MAC, Clock, Resolve and Transmitter are filled in here
	static   map[[4]byte]wire.MAC
	arp      struct {
		timeout, aging time.Duration
		retries        int
	}
	faults struct {
		drop, dup, reorder float64
		seed               int64
	}
	// subnet is the port's IPv4 prefix and gateway the next hop for
	// addresses outside it (zero: none, such addresses are unreachable).
	subnet  netip.Prefix
	gateway [4]byte
	// ipCksumOffload: the port computes IPv4 header checksums.
	ipCksumOffload bool
	// multiSeg: the port is configured to send chained mbufs and needs no
	// DMA mapping (see zeroCopyPort): workers' payloads go without a copy.
	multiSeg bool
	// pcp: tag every frame with an 802.1Q header on vlan whose PCP is the
	// packet's priority.
	pcp     bool
	vlan    uint16
	capture *dpdk.Capture
	capIf   int
	burst   int
	clock   func() int64
	wallOff int64
}

// Software TX queueing: each priority's queue holds up to txQueueCapacity
// packets, but the engine gets no buffer once txHighWater packets wait in
// all of them together (a few bursts: a port that keeps up never has more),
// which bounds the mbufs parked here well below the pool's size.
const (
	txQueueCapacity = 1024
	txHighWater     = 256
)

func newHostLoop(c hostConfig) (*hostLoop, error) {
	if c.burst == 0 {
		c.burst = 32
	}
	sched, err := nicq.NewScheduler[*dpdk.Mbuf](nicq.Config{
		Map: c.prioMap, Capacity: txQueueCapacity, Burst: c.burst, LinkBps: c.linkBps, MaxNICQueue: int64(time.Millisecond),
	}, func(m *dpdk.Mbuf) int { return m.PktLen() })
	if err != nil {
		return nil, err
	}
	l := &hostLoop{
		port:    c.port,
		me:      hostAddr{ip: c.ip, mac: c.mac},
		neigh:   newNeighbourTable(c.arp.timeout.Nanoseconds(), c.arp.aging.Nanoseconds(), c.arp.retries),
		sched:   sched,
		tx:      newMbufTx(c.pool, sched, c.burst, txHighWater),
		cap:     c.capture,
		capIf:   c.capIf,
		fault:   newFaultInjector(c.faults.drop, c.faults.dup, c.faults.reorder, c.faults.seed),
		clock:   c.clock,
		wallOff: c.wallOff,
		free:    make([]*dpdk.Mbuf, 0, 2*c.burst+c.prioMap.Queues()*c.burst),
	}
	l.subnet, l.gateway = c.subnet, c.gateway
	l.pcp, l.vlan = c.pcp, c.vlan
	l.tx.ipCksum, l.tx.l2Len = c.ipCksumOffload, wire.EthernetHeaderLen
	l.tx.multiSeg = c.multiSeg
	if c.pcp {
		l.tx.l2Len += wire.VLANTagLen
	}
	for ip, mac := range c.static {
		l.neigh.AddStatic(ip, mac)
	}
	l.rxBufs = make([][]*dpdk.Mbuf, max(c.port.RxQueues(), 1))
	for q := range l.rxBufs {
		l.rxBufs[q] = make([]*dpdk.Mbuf, c.burst)
		if _, err := l.rx.Add(c.port, uint16(q), l.rxBufs[q]); err != nil {
			return nil, err
		}
	}
	l.txBufs = make([][]*dpdk.Mbuf, c.prioMap.Queues())
	for q := range l.txBufs {
		l.txBufs[q] = make([]*dpdk.Mbuf, c.burst)
		if _, err := l.txb.Add(c.port, uint16(q), l.txBufs[q]); err != nil {
			return nil, err
		}
	}
	ec := c.engine
	ec.IP, ec.MAC = c.ip, c.mac
	ec.IPChecksumOffload = c.ipCksumOffload
	ec.PCP, ec.VLAN = c.pcp, c.vlan
	ec.Clock = func() int64 { return l.now }
	ec.Resolve = l.resolve
	if ec.LinkBps == 0 {
		ec.LinkBps = int64(c.linkBps)
	}
	l.now = c.clock()
	if l.ep, err = engine.New(ec, l.tx); err != nil {
		return nil, fmt.Errorf("engine for %v: %w", c.ip, err)
	}
	return l, nil
}

// peerReady reports whether ip's next hop is resolved, so that the engine
// can send to it; otherwise it has ARP ask (rate-limited by the table) and
// reports whether resolution has failed for now (or there is no route).
// The engine fails an RPC to an unresolved address at once, so
// applications in the loop wait for this.
func (l *hostLoop) peerReady(ip [4]byte) (ready, failed bool) {
	hop, route := l.nextHop(ip)
	if !route {
		return false, true
	}
	_, ok := l.resolve(ip)
	return ok, !ok && l.neigh.Failed(hop)
}

// zeroCopyPort reports whether DATA payloads can be sent from workers'
// shared memory on a port (chained external-buffer mbufs): it must send
// chains (TxOffloadMultiSegs), and be a software device, which reads the
// memory with the CPU. A physical NIC would need the worker regions
// registered with DPDK and DMA-mapped first (rte_extmem_register,
// rte_dev_dma_map), which the daemon does not do yet: on a NIC, payloads
// are copied once into the mbuf.
func zeroCopyPort(info dpdk.DevInfo) bool {
	if info.TxOffloadCapa&dpdk.TxOffloadMultiSegs == 0 {
		return false
	}
	switch info.Driver {
	case "net_ring", "net_memif", "net_af_packet", "net_tap":
		return true
	}
	return false
}
