package host

import (
	"cmp"
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Pair is two Homa hosts, 10.0.0.1 and 10.0.0.2, in this process on
// two DPDK ports joined back to back: by rings (rte_eth_from_rings: every
// TX queue of one port feeds the single RX queue of the other), or by a
// net_memif pair (the server and the client end of one memif socket, a
// queue pair per priority queue). The demo, the tests and the perf
// harness run the daemon's data path on it without a NIC; its ports are
// set up by SetupPort, as the daemon's are.
type Pair struct {
	Hosts [2]*Host
	ports [2]*dpdk.Port
	setup [2]StartedPort
	rings [2]*dpdk.Ring
	vdevs []string // memif: the vdevs to remove
	// memifPair: vdevs are the two ends of one memif connection (server,
	// then client), not two clients of outside servers.
	memifPair bool
	pipe      *Pipeline // Pass's
}

// PairConfig sets up a Pair.
type PairConfig struct {
	Name     string // prefix of the rings' and ports' names
	Pool     *dpdk.Mempool
	TxQueues int
	Faults   float64 // fraction of received packets dropped; half as many duplicated and reordered
	Capture  *dpdk.Capture
	Clock    func() int64
	WallOff  int64
	ARP      time.Duration // ARP retry timeout
	PCP      bool          // tag frames on VLAN 7 with their priority in the PCP
	// MemifSocket, when set, joins the hosts by net_memif over this socket
	// path instead of rings.
	MemifSocket string
	// MemifPeers, when set, makes each host a memif client of a server
	// someone else runs (socket i for host i), e.g. dpdk-testpmd
	// forwarding between its two memif ports: a third-party DPDK
	// forwarder between the hosts.
	MemifPeers [2]string
	// MTU is the hosts' IP MTU (0: 1500); Pool's mbufs must hold a frame
	// of it (config.MempoolSpec.DataRoomFor).
	MTU int
	// LinkBps is the link rate the hosts pace to (0: the port's, or
	// 10 Gbit/s when it says none).
	LinkBps float64
}

// NewPair makes the ports and the hosts.
func NewPair(c PairConfig) (*Pair, error) {
	rp := &Pair{}
	var err error
	if c.MemifSocket != "" || c.MemifPeers[0] != "" {
		err = rp.memifPorts(c)
	} else {
		err = rp.ringPorts(c)
	}
	if err == nil {
		err = rp.makeHosts(c)
	}
	if err != nil {
		rp.Close()
		return nil, err
	}
	return rp, nil
}

// memifPorts makes the two ends of a memif pair and waits for the link.
func (rp *Pair) memifPorts(c PairConfig) error {
	rp.memifPair = c.MemifPeers[0] == ""
	for i, role := range []string{"server", "client"} {
		name := fmt.Sprintf("net_memif_%s%d", c.Name, i)
		sock := c.MemifSocket
		if c.MemifPeers[0] != "" {
			role, sock = "client", c.MemifPeers[i]
		}
		p, err := dpdk.NewVdev(name, MemifDevargs(role, sock, c.MTU))
		if err != nil {
			return err
		}
		rp.vdevs = append(rp.vdevs, name)
		rp.ports[i] = p
		if rp.setup[i], err = SetupPort(p, PortSetup{TxQueues: c.TxQueues, RxQueues: c.TxQueues, Pool: c.Pool, MTU: c.MTU}); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := WaitLinks(rp.ports[:], 10*time.Second, nil); err != nil {
		return fmt.Errorf("memif on %s%v: %w", c.MemifSocket, c.MemifPeers, err)
	}
	return nil
}

func (rp *Pair) ringPorts(c PairConfig) error {
	ports, rings, err := NewRingPorts(c.Name, c.TxQueues)
	rp.ports, rp.rings = ports, rings
	if err != nil {
		return err
	}
	for i, p := range rp.ports {
		if rp.setup[i], err = SetupPort(p, PortSetup{TxQueues: c.TxQueues, RxQueues: 1, Pool: c.Pool, MTU: c.MTU}); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return nil
}

// emptyPort frees what waits in p's RX queues.
func emptyPort(p *dpdk.Port, bufs []*dpdk.Mbuf) {
	for q := range max(p.RxQueues(), 1) {
		for n := p.RxBurst(uint16(q), bufs); n > 0; n = p.RxBurst(uint16(q), bufs) {
			dpdk.FreeBulk(bufs[:n])
		}
	}
}

// CloseRingPorts empties and closes ports made by NewRingPorts (stopped
// ones) and frees their rings; nil entries are skipped.
func CloseRingPorts(ports [2]*dpdk.Port, rings [2]*dpdk.Ring) {
	bufs := make([]*dpdk.Mbuf, 64)
	for _, p := range ports {
		if p != nil {
			emptyPort(p, bufs)
			p.Close()
		}
	}
	for _, r := range rings {
		if r != nil {
			r.Free()
		}
	}
}

// NewRingPorts makes two ports joined back to back by two rings
// (rte_eth_from_rings), named net_ring_ + name + "0" and "1": every one of the
// txQueues TX queues of one port feeds the single RX queue of the other.
// The ports still need SetupPort (with one RX queue). On error the
// ports and rings made so far are returned too: free them.
func NewRingPorts(name string, txQueues int) ([2]*dpdk.Port, [2]*dpdk.Ring, error) {
	var ports [2]*dpdk.Port
	var rings [2]*dpdk.Ring
	for i, dir := range []string{"ab", "ba"} {
		r, err := dpdk.NewRing(name+dir, 4096, dpdk.SocketIDAny, 0) // several TX queues enqueue: multi-producer
		if err != nil {
			return ports, rings, err
		}
		rings[i] = r
	}
	for i := range 2 {
		tx := make([]*dpdk.Ring, txQueues)
		for q := range tx {
			tx[q] = rings[i]
		}
		p, err := dpdk.PortFromRings(fmt.Sprintf("%s%d", name, i), []*dpdk.Ring{rings[1-i]}, tx, dpdk.SocketIDAny)
		if err != nil {
			return ports, rings, err
		}
		ports[i] = p
	}
	return ports, rings, nil
}

// NewShardRingPorts is NewRingPorts for two ports of shards shards: a
// ring per shard and direction, the txPerShard TX queues of shard s of
// one port feeding RX queue s of the other, as a NIC that steers each
// shard's packets to its queue would; hosts sharded alike then never hand
// a frame over. The ports still need SetupPort (shards RX queues).
func NewShardRingPorts(name string, txPerShard, shards int) ([2]*dpdk.Port, [][]*dpdk.Ring, error) {
	var ports [2]*dpdk.Port
	rings := make([][]*dpdk.Ring, 2)
	for d := range 2 {
		for s := range shards {
			r, err := dpdk.NewRing(fmt.Sprintf("%s%d%d", name, d, s), 4096, dpdk.SocketIDAny, 0)
			if err != nil {
				return ports, rings, err
			}
			rings[d] = append(rings[d], r)
		}
	}
	for i := range 2 {
		var tx []*dpdk.Ring
		for q := range shards * txPerShard {
			tx = append(tx, rings[i][q/txPerShard])
		}
		p, err := dpdk.PortFromRings(fmt.Sprintf("%s%d", name, i), rings[1-i], tx, dpdk.SocketIDAny)
		if err != nil {
			return ports, rings, err
		}
		ports[i] = p
	}
	return ports, rings, nil
}

// CloseShardRingPorts is CloseRingPorts for NewShardRingPorts's ports.
func CloseShardRingPorts(ports [2]*dpdk.Port, rings [][]*dpdk.Ring) {
	CloseRingPorts(ports, [2]*dpdk.Ring{})
	for _, rs := range rings {
		for _, r := range rs {
			r.Free()
		}
	}
}

// makeHosts builds the two hosts on the ports.
func (rp *Pair) makeHosts(c PairConfig) error {
	pm, err := nicq.NewMap(c.TxQueues)
	if err != nil {
		return err
	}
	for i, p := range rp.ports {
		hc := Config{
			Port: p, Pool: c.Pool, IP: [4]byte{10, 0, 0, byte(i + 1)}, MAC: wire.MAC{2, 0, 10, 0, 0, byte(i + 1)},
			IP6:     [16]byte{0xfd, 15: byte(i + 1)}, // fd00::<i+1>, on-link
			PrioMap: pm, LinkBps: cmp.Or(c.LinkBps, LinkRate(p, 10e9)), Engine: engine.DefaultConfig(),
			Capture: c.Capture, CapIf: i, Clock: c.Clock, WallOff: c.WallOff, Burst: 32,
			PCP: c.PCP, VLAN: 7, Offloads: rp.setup[i].Offloads,
			ARP:    ARPConfig{Timeout: c.ARP, Aging: time.Hour, Retries: 5},
			Faults: Faults{Drop: c.Faults, Duplicate: c.Faults / 2, Reorder: c.Faults / 2, Seed: int64(i + 1)},
			// A memif client dials again when its server comes back.
			Redial: len(rp.vdevs) > 0 && (i == 1 || !rp.memifPair),
		}
		if c.MTU > 0 {
			hc.Engine.MTU = c.MTU
		}
		h, err := New(hc)
		if err != nil {
			return err
		}
		rp.Hosts[i] = h
	}
	rp.pipe = NewPipeline(rp.Hosts[0], rp.Hosts[1])
	return nil
}

// Pass runs one pass of both hosts, pipelined (see Pipeline): one clock
// read and one crossing into C per host; what 10.0.0.1 sends in its pass
// reaches 10.0.0.2 in the pass right after it, and what 10.0.0.2 sends
// goes out at the start of the next Pass.
func (rp *Pair) Pass() int {
	return rp.pipe.Pass()
}

// Doorbell is the doorbell of the pair's Sleeper applications
// (Pipeline.Doorbell), for a loop that sleeps between passes.
func (rp *Pair) Doorbell() *lcore.Doorbell { return rp.pipe.Doorbell() }

// Flush sends what 10.0.0.2 prepared in the last Pass (Pipeline.Flush):
// for a loop that sleeps between passes (lcore.Config.Flush).
func (rp *Pair) Flush() int { return rp.pipe.Flush() }

// Drain frees what the hosts hold; call it on the loop's thread (or after
// the loop stopped).
func (rp *Pair) Drain() {
	for _, h := range rp.Hosts {
		if h != nil {
			h.Drain()
		}
	}
}

// Close empties and closes the ports and frees the rings.
func (rp *Pair) Close() {
	bufs := make([]*dpdk.Mbuf, 64)
	for _, p := range rp.ports {
		if p == nil {
			continue
		}
		// Stopping the memif server disconnects the client, which EAL's
		// interrupt thread then tears down; the client's Stop runs on
		// that thread too, after it (dpdk/intr.go).
		emptyPort(p, bufs)
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
