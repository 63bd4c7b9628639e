package main

import (
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ringPair is two Homa hosts, 10.0.0.1 and 10.0.0.2, on two DPDK ports
// joined back to back by rings (rte_eth_from_rings): every TX queue of one
// port feeds the single RX queue of the other. The demo and the tests run
// the daemon's data path on it without a NIC.
type ringPair struct {
	ports [2]*dpdk.Port
	rings [2]*dpdk.Ring
	hosts [2]*hostLoop
}

// ringPairConfig sets up a ringPair.
type ringPairConfig struct {
	name     string // prefix of the rings' and ports' names
	pool     *dpdk.Mempool
	txQueues int
	faults   float64 // fraction of received packets dropped; half as many duplicated and reordered
	capture  *dpdk.Capture
	clock    func() int64
	wallOff  int64
	arp      time.Duration // ARP retry timeout
	pcp      bool          // tag frames on VLAN 7 with their priority in the PCP
}

func newRingPair(c ringPairConfig) (*ringPair, error) {
	rp := &ringPair{}
	for i, dir := range []string{"ab", "ba"} {
		r, err := dpdk.NewRing(c.name+dir, 4096, dpdk.SocketIDAny, 0) // several TX queues enqueue: multi-producer
		if err != nil {
			rp.close()
			return nil, err
		}
		rp.rings[i] = r
	}
	for i := range 2 {
		tx := make([]*dpdk.Ring, c.txQueues)
		for q := range tx {
			tx[q] = rp.rings[i]
		}
		p, err := dpdk.PortFromRings(fmt.Sprintf("%s_%d", c.name, i), []*dpdk.Ring{rp.rings[1-i]}, tx, dpdk.SocketIDAny)
		if err == nil {
			rp.ports[i] = p
			err = setupRingPort(p, c.pool, c.txQueues)
		}
		if err != nil {
			rp.close()
			return nil, err
		}
	}
	pm, err := nicq.NewMap(c.txQueues)
	if err != nil {
		rp.close()
		return nil, err
	}
	for i, p := range rp.ports {
		hc := hostConfig{
			port: p, pool: c.pool, ip: [4]byte{10, 0, 0, byte(i + 1)}, mac: wire.MAC{2, 0, 10, 0, 0, byte(i + 1)},
			txQueues: c.txQueues, prioMap: pm, linkBps: 10e9, engine: engine.DefaultConfig(),
			capture: c.capture, capIf: i, clock: c.clock, wallOff: c.wallOff, burst: 32,
			pcp: c.pcp, vlan: 7,
		}
		hc.arp.timeout, hc.arp.aging, hc.arp.retries = c.arp, time.Hour, 5
		hc.faults.drop, hc.faults.dup, hc.faults.reorder, hc.faults.seed = c.faults, c.faults/2, c.faults/2, int64(i+1)
		h, err := newHostLoop(hc)
		if err != nil {
			rp.close()
			return nil, err
		}
		rp.hosts[i] = h
	}
	return rp, nil
}

func setupRingPort(p *dpdk.Port, pool *dpdk.Mempool, txQueues int) error {
	if err := p.Configure(1, uint16(txQueues), dpdk.PortConf{}); err != nil {
		return err
	}
	if err := p.RxQueueSetup(0, 1024, pool); err != nil {
		return err
	}
	for q := range txQueues {
		if err := p.TxQueueSetup(uint16(q), 1024); err != nil {
			return err
		}
	}
	return p.Start()
}

// pass runs one pass of both hosts.
func (rp *ringPair) pass() int { return rp.hosts[0].pass() + rp.hosts[1].pass() }

// drain frees what the hosts hold; call it on the loop's thread (or after
// the loop stopped).
func (rp *ringPair) drain() {
	for _, h := range rp.hosts {
		if h != nil {
			h.drain()
		}
	}
}

// close empties and closes the ports and frees the rings.
func (rp *ringPair) close() {
	bufs := make([]*dpdk.Mbuf, 64)
	for _, p := range rp.ports {
		if p == nil {
			continue
		}
		for n := p.RxBurst(0, bufs); n > 0; n = p.RxBurst(0, bufs) {
			dpdk.FreeBulk(bufs[:n])
		}
		p.Close()
	}
	for _, r := range rp.rings {
		if r != nil {
			r.Free()
		}
	}
}
