package daemon

import (
	"fmt"
	"slices"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/nicq"
)

// device is what the plan needs to know of a port's device: its share of
// dpdk.DevInfo.
type device struct {
	Name, Driver             string
	MaxRxQueues, MaxTxQueues int
	Socket                   int // NUMA socket; dpdk.SocketIDAny when unknown
}

// deviceOf reads p's facts for the plan.
func deviceOf(p *dpdk.Port) (device, error) {
	info, err := p.Info()
	if err != nil {
		return device{}, err
	}
	d := device{Name: p.Name, Driver: info.Driver, MaxRxQueues: int(info.MaxRxQueues), MaxTxQueues: int(info.MaxTxQueues), Socket: info.Socket}
	if d.Socket < 0 {
		d.Socket = dpdk.SocketIDAny
	}
	return d, nil
}

// plan is how the daemon runs its ports, made once from the Spec and
// what EAL found (makePlan): every phase after validate reads it.
type plan struct {
	Ports []portPlan // in the Spec's order
	Loops []loopPlan // one per distinct lcore, in the order of first use
}

// portPlan is one port: its device's queues and its shards.
type portPlan struct {
	Device             string // the DPDK port's name
	Socket             int    // the NUMA socket of its mbuf pool
	RxQueues, TxQueues int    // configured on the device: every shard's together
	Shards             []shardPlan
	// HomePorts: the port is sharded and serves workers, whose server
	// ports are bound on their own shard alone (hub.Set).
	HomePorts bool
}

// shardPlan is one shard of a port: a host, polled by the loop of its
// lcore (an unsharded port has one).
type shardPlan struct {
	Lcore uint
	// TxBase and TxQueues are its TX queues, TxBase on: its priorities'
	// (nicq's map onto TxQueues).
	TxBase, TxQueues int
	// RxQueues are the RX queues it polls, queue q by shard q mod the
	// shards; empty: its frames come from the shards that take them
	// (host.ShardSet).
	RxQueues  []uint16
	CopierCPU int // its receive copies' CPU (ports[].copier_cpus); -1: its loop copies
}

// loopPlan is one polling loop: its lcore and the shards its pass runs
// in turn (host.Pipeline), in port order.
type loopPlan struct {
	Lcore  uint
	Shards []shardRef
}

// shardRef names a shard: ports[Port], shard Shard.
type shardRef struct{ Port, Shard int }

// makePlan plans spec's ports on devs (devs[i] is ports[i]'s device) and
// EAL's worker lcores (main is its main lcore, for the messages): each port's shards from ports[].lcores (Load folds
// the top-level lcores in: config.Spec.Normalize), each shard's TX queues
// (ports[].tx_queues, or the device's share, up to 8), RX queues and
// copier CPU, and the loops. Its errors say which key to change.
func makePlan(spec *config.Spec, devs []device, workers []uint, main uint) (plan, error) {
	var pl plan
	loopOf := map[uint]int{} // lcore → index in pl.Loops
	for i, ps := range spec.Ports {
		dev := devs[i]
		n := len(ps.Lcores)
		if n == 0 {
			return plan{}, fmt.Errorf("ports[%d]: no polling lcore; give it one in ports[%d].lcores (or lcores[%d])", i, i, i)
		}
		for _, l := range ps.Lcores {
			if !slices.Contains(workers, l) {
				return plan{}, fmt.Errorf("%s: lcore %d is not an EAL worker lcore (workers: %v; the main lcore is %d); change -l or lcores",
					spec.LcoresKey(i), l, workers, main)
			}
		}
		per, err := txPerShard(spec, i, dev)
		if err != nil {
			return plan{}, err
		}
		pp := portPlan{Device: dev.Name, Socket: dev.Socket, TxQueues: per * n, RxQueues: ps.RxQueues}
		if pp.RxQueues == 0 {
			// memif pairs queues: the peer's TX queue i is our RX queue
			// i, and the link comes up only when both sides have as many
			// of each.
			pp.RxQueues = 1
			if dev.Driver == "net_memif" {
				pp.RxQueues = pp.TxQueues
			}
		}
		if pp.RxQueues > dev.MaxRxQueues {
			return plan{}, rxError(spec, i, dev, per, pp.RxQueues)
		}
		pp.HomePorts = n > 1 && workersSocket(spec, i) != ""
		for s, l := range ps.Lcores {
			sh := shardPlan{Lcore: l, TxBase: s * per, TxQueues: per, RxQueues: []uint16{}, CopierCPU: -1}
			for q := s; q < pp.RxQueues; q += n {
				sh.RxQueues = append(sh.RxQueues, uint16(q))
			}
			if s < len(ps.CopierCPUs) {
				sh.CopierCPU = int(ps.CopierCPUs[s])
			}
			pp.Shards = append(pp.Shards, sh)
			k, ok := loopOf[l]
			if !ok {
				k = len(pl.Loops)
				loopOf[l] = k
				pl.Loops = append(pl.Loops, loopPlan{Lcore: l})
			}
			pl.Loops[k].Shards = append(pl.Loops[k].Shards, shardRef{i, s})
		}
		pl.Ports = append(pl.Ports, pp)
	}
	return pl, nil
}

// txPerShard is each shard's TX queues on port i: ports[i].tx_queues, or
// with 0 the device's TX queues shared out among the shards, up to 8. It
// says which keys to change when the device has too few.
func txPerShard(spec *config.Spec, i int, dev device) (int, error) {
	ps := spec.Ports[i]
	n := len(ps.Lcores)
	per := ps.TxQueues
	if per == 0 {
		per = min(dev.MaxTxQueues/n, nicq.NumPriorities)
		if per < 1 {
			return 0, fmt.Errorf("ports[%d] (%s): %d shards need a TX queue each, the device allows at most %s: give the port fewer shards (%s)",
				i, dev.Name, n, queues(dev.MaxTxQueues, "TX"), spec.LcoresKey(i))
		}
		return per, nil
	}
	if total := per * n; total > dev.MaxTxQueues {
		if n == 1 {
			return 0, fmt.Errorf("ports[%d] (%s): tx_queues %d, the device allows at most %s: lower ports[%d].tx_queues (0 takes as many as the device allows, up to 8)",
				i, dev.Name, per, queues(dev.MaxTxQueues, "TX"), i)
		}
		return 0, fmt.Errorf("ports[%d] (%s): %d shards × %d tx_queues = %d TX queues (each shard has tx_queues of its own), the device allows at most %d: "+
			"lower ports[%d].tx_queues (0 shares the device's out) or the shards (%s)", i, dev.Name, n, per, total, dev.MaxTxQueues, i, spec.LcoresKey(i))
	}
	return per, nil
}

// rxError says why port i's rx RX queues are more than its device
// allows, and what to change.
func rxError(spec *config.Spec, i int, dev device, per, rx int) error {
	ps := spec.Ports[i]
	n := len(ps.Lcores)
	if ps.RxQueues != 0 {
		return fmt.Errorf("ports[%d] (%s): rx_queues %d, the device allows at most %s: lower ports[%d].rx_queues (0 takes 1)",
			i, dev.Name, rx, queues(dev.MaxRxQueues, "RX"), i)
	}
	// Only net_memif's RX queues follow its TX queues.
	if n == 1 {
		return fmt.Errorf("ports[%d] (%s): net_memif pairs each of its %d TX queues with an RX queue, the device allows at most %s: lower ports[%d].tx_queues",
			i, dev.Name, rx, queues(dev.MaxRxQueues, "RX"), i)
	}
	return fmt.Errorf("ports[%d] (%s): net_memif pairs each TX queue with an RX queue: %d shards × %d TX queues = %d RX queues, the device allows at most %d: "+
		"lower ports[%d].tx_queues or the shards (%s)", i, dev.Name, n, per, rx, dev.MaxRxQueues, i, spec.LcoresKey(i))
}

// queues is "1 TX queue", "2 TX queues".
func queues(n int, kind string) string {
	if n == 1 {
		return "1 " + kind + " queue"
	}
	return fmt.Sprintf("%d %s queues", n, kind)
}
