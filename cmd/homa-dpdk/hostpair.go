package main

import (
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// hostPair is two Homa hosts, 10.0.0.1 and 10.0.0.2, in this process on
// two DPDK ports joined back to back: by rings (rte_eth_from_rings: every
// TX queue of one port feeds the single RX queue of the other), or by a
// net_memif pair (the server and the client end of one memif socket, a
// queue pair per priority queue). The demo, the tests and the worker RTT
// measurement run the daemon's data path on it without a NIC.
type hostPair struct {
	ports [2]*dpdk.Port
	rings [2]*dpdk.Ring
	vdevs []string // memif: the vdevs to remove
	// memifPair: vdevs are the two ends of one memif connection (server,
	// then client), not two clients of outside servers.
	memifPair bool
	hosts     [2]*hostLoop
}

// hostPairConfig sets up a hostPair.
type hostPairConfig struct {
	name     string // prefix of the rings' and ports' names
	pool     *dpdk.Mempool
	txQueues int
	faults   float64 // fraction of received packets dropped; half as many duplicated and reordered
	capture  *dpdk.Capture
	clock    func() int64
	wallOff  int64
	arp      time.Duration // ARP retry timeout
	pcp      bool          // tag frames on VLAN 7 with their priority in the PCP
	// memifSocket, when set, joins the hosts by net_memif over this socket
	// path instead of rings.
	memifSocket string
	// memifPeers, when set, makes each host a memif client of a server
	// someone else runs (socket i for host i), e.g. dpdk-testpmd
	// forwarding between its two memif ports: a third-party DPDK
	// forwarder between the hosts.
	memifPeers [2]string
	// mtu is the hosts' IP MTU (0: 1500); pool's mbufs must hold a frame
	// of it (config.MempoolSpec.DataRoomFor).
	mtu int
}

func newHostPair(c hostPairConfig) (*hostPair, error) {
	rp := &hostPair{}
	var err error
	if c.memifSocket != "" || c.memifPeers[0] != "" {
		err = rp.memifPorts(c)
	} else {
		err = rp.ringPorts(c)
	}
	if err != nil {
		rp.close()
		return nil, err
	}
	return rp, rp.makeHosts(c)
}

// waitLinkDown polls p's link until it is down or timeout passes.
func waitLinkDown(p *dpdk.Port, timeout time.Duration) {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		if l, err := p.Link(); err != nil || !l.Up {
			return
		}
	}
}

// memifPorts makes the two ends of a memif pair and waits for the link.
func (rp *hostPair) memifPorts(c hostPairConfig) error {
	rp.memifPair = c.memifPeers[0] == ""
	for i, role := range []string{"server", "client"} {
		name := fmt.Sprintf("net_memif_%s%d", c.name, i)
		sock := c.memifSocket
		if c.memifPeers[0] != "" {
			role, sock = "client", c.memifPeers[i]
		}
		p, err := dpdk.NewVdev(name, fmt.Sprintf("role=%s,id=0,socket=%s,socket-abstract=no", role, sock))
		if err != nil {
			return err
		}
		rp.vdevs = append(rp.vdevs, name)
		rp.ports[i] = p
		if err := p.Configure(uint16(c.txQueues), uint16(c.txQueues), pairPortConf(p)); err != nil {
			return err
		}
		for q := range c.txQueues {
			if err := p.RxQueueSetup(uint16(q), 1024, c.pool); err != nil {
				return err
			}
			if err := p.TxQueueSetup(uint16(q), 1024); err != nil {
				return err
			}
		}
		if err := p.Start(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range rp.ports {
		for {
			if l, err := p.Link(); err == nil && l.Up {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("memif on %s%v: link of %s not up after 10 s", c.memifSocket, c.memifPeers, p.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func (rp *hostPair) ringPorts(c hostPairConfig) error {
	for i, dir := range []string{"ab", "ba"} {
		r, err := dpdk.NewRing(c.name+dir, 4096, dpdk.SocketIDAny, 0) // several TX queues enqueue: multi-producer
		if err != nil {
			return err
		}
		rp.rings[i] = r
	}
	for i := range 2 {
		tx := make([]*dpdk.Ring, c.txQueues)
		for q := range tx {
			tx[q] = rp.rings[i]
		}
		p, err := dpdk.PortFromRings(fmt.Sprintf("%s_%d", c.name, i), []*dpdk.Ring{rp.rings[1-i]}, tx, dpdk.SocketIDAny)
		if err != nil {
			return err
		}
		rp.ports[i] = p
		if err := setupRingPort(p, c.pool, c.txQueues); err != nil {
			return err
		}
	}
	return nil
}

// makeHosts builds the two hosts on the ports.
func (rp *hostPair) makeHosts(c hostPairConfig) error {
	pm, err := nicq.NewMap(c.txQueues)
	if err != nil {
		rp.close()
		return err
	}
	for i, p := range rp.ports {
		// The pacer's link rate is the port's (net_memif says 100 Gbit/s,
		// net_ring 10), as `run` takes it with link_speed auto.
		linkBps := 10e9
		if l, err := p.Link(); err == nil && l.SpeedMbps > 0 && l.SpeedMbps != ^uint32(0) {
			linkBps = float64(l.SpeedMbps) * 1e6
		}
		hc := hostConfig{
			port: p, pool: c.pool, ip: [4]byte{10, 0, 0, byte(i + 1)}, mac: wire.MAC{2, 0, 10, 0, 0, byte(i + 1)},
			txQueues: c.txQueues, prioMap: pm, linkBps: linkBps, engine: engine.DefaultConfig(),
			capture: c.capture, capIf: i, clock: c.clock, wallOff: c.wallOff, burst: 32,
			pcp: c.pcp, vlan: 7, multiSeg: pairPortConf(p).TxOffloads&dpdk.TxOffloadMultiSegs != 0,
		}
		if c.mtu > 0 {
			hc.engine.MTU = c.mtu
		}
		hc.arp.timeout, hc.arp.aging, hc.arp.retries = c.arp, time.Hour, 5
		hc.faults.drop, hc.faults.dup, hc.faults.reorder, hc.faults.seed = c.faults, c.faults/2, c.faults/2, int64(i+1)
		h, err := newHostLoop(hc)
		if err != nil {
			rp.close()
			return err
		}
		rp.hosts[i] = h
	}
	return nil
}

// pairPortConf asks for chained-mbuf TX where the port can (zeroCopyPort).
func pairPortConf(p *dpdk.Port) dpdk.PortConf {
	if info, err := p.Info(); err == nil && zeroCopyPort(info) {
		return dpdk.PortConf{TxOffloads: dpdk.TxOffloadMultiSegs}
	}
	return dpdk.PortConf{}
}

func setupRingPort(p *dpdk.Port, pool *dpdk.Mempool, txQueues int) error {
	if err := p.Configure(1, uint16(txQueues), pairPortConf(p)); err != nil {
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
func (rp *hostPair) pass() int {
	now := rp.hosts[0].clock() // one clock read for both
	return rp.hosts[0].passAt(now) + rp.hosts[1].passAt(now)
}

// drain frees what the hosts hold; call it on the loop's thread (or after
// the loop stopped).
func (rp *hostPair) drain() {
	for _, h := range rp.hosts {
		if h != nil {
			h.drain()
		}
	}
}

// close empties and closes the ports and frees the rings.
func (rp *hostPair) close() {
	bufs := make([]*dpdk.Mbuf, 64)
	for i, p := range rp.ports {
		if p == nil {
			continue
		}
		if i > 0 && rp.memifPair {
			// Stopping the server disconnects the client, which EAL's
			// interrupt thread then tears down, freeing its regions;
			// stopping the client while it does freed them twice ("EAL:
			// Error: Invalid memory" from memif's stop). The link goes
			// down as the teardown starts: give it time to finish.
			waitLinkDown(p, time.Second)
			time.Sleep(20 * time.Millisecond)
		}
		for q := range max(p.RxQueues(), 1) {
			for n := p.RxBurst(uint16(q), bufs); n > 0; n = p.RxBurst(uint16(q), bufs) {
				dpdk.FreeBulk(bufs[:n])
			}
		}
		if len(rp.vdevs) == 0 {
			p.Close()
		} else {
			p.Stop() // the memif server first, then its client
		}
	}
	for _, name := range rp.vdevs {
		dpdk.RemoveVdev(name)
	}
	for _, r := range rp.rings {
		if r != nil {
			r.Free()
		}
	}
}
