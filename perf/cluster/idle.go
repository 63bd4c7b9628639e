package cluster

import (
	"sort"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The idle network's time for a message: its DATA frames through the
// links of their path, each link store-and-forward, every frame sent as
// soon as it has arrived and its link has finished the previous one;
// across racks, sprayed frames take the cores' links in turn.

const mtu = 1500

// perPacket is a DATA frame's payload at the MTU.
var perPacket = wire.PayloadPerPacket(mtu, wire.IPv4MinHeaderLen)

// dataHeaders is what a DATA frame carries besides its payload: Ethernet,
// IPv4 and the DATA header.
const dataHeaders = wire.EthernetHeaderLen + wire.IPv4MinHeaderLen + wire.DataHeaderLen

// frames returns the number of DATA frames of a message and the length of
// its last, in bytes (headers included, without Ethernet's overhead).
func frames(size int) (n, last int) {
	n = (size + perPacket - 1) / perPacket
	return n, dataHeaders + size - (n-1)*perPacket
}

// WireBytes is the link time of a message's DATA frames in bytes, with
// Ethernet's preamble, FCS and gap: what the offered load counts.
func WireBytes(size int) float64 {
	n, _ := frames(size)
	return float64(size + n*(dataHeaders+sched.WireOverhead))
}

// stage is one link of a path: its rate and what follows it before the
// next link can take the frame (propagation, the next switch's latency).
type stage struct {
	bps   float64
	after int64
}

// idle computes idle-network times, cached by size and path.
type idle struct {
	cfg   Config
	cache map[idleKey]int64
}

type idleKey struct {
	size      int
	crossRack bool
}

func newIdle(cfg Config) *idle { return &idle{cfg: cfg, cache: make(map[idleKey]int64)} }

// path returns the links from sender to receiver.
func (d *idle) path(crossRack bool) []stage {
	c := d.cfg
	hop := c.PropDelay + c.SwitchLatency
	if !crossRack {
		return []stage{{c.LinkBps, hop}, {c.LinkBps, c.PropDelay}}
	}
	return []stage{{c.LinkBps, hop}, {c.UplinkBps, hop}, {c.UplinkBps, hop}, {c.LinkBps, c.PropDelay}}
}

// ns returns the idle time of a message of size bytes, from Send to the
// receiver's handling of its last frame: the sender's HostDelay and
// NICDelay, its frames through the path, the receiver's RecvDelay.
func (d *idle) ns(size int, crossRack bool) int64 {
	k := idleKey{size, crossRack}
	if v, ok := d.cache[k]; ok {
		return v
	}
	st := d.path(crossRack)
	// When each link finishes its last frame: the fabric's stages (up to
	// a core, down from it) have a link per core, and sprayed frames take
	// the cores in turn.
	ways := 1
	if crossRack && !d.cfg.ECMP {
		ways = d.cfg.Cores
	}
	free := make([][]int64, len(st))
	for i := range free {
		free[i] = make([]int64, ways)
	}
	n, last := frames(size)
	full := dataHeaders + perPacket
	lens := make([]int, n)
	at := make([]int64, n) // when each frame reaches the last link
	for j := range n {
		lens[j] = full
		if j == n-1 {
			lens[j] = last
		}
		t := d.cfg.HostDelay + d.cfg.NICDelay
		for i, s := range st[:len(st)-1] {
			w := 0
			if i == 1 || i == 2 {
				w = j % ways
			}
			start := max(t, free[i][w])
			free[i][w] = start + txNs(lens[j]+sched.WireOverhead, s.bps)
			t = free[i][w] + s.after
		}
		at[j] = t
	}
	// The last link (toward the receiver) takes them in the order they
	// reach it: sprayed frames of different lengths can overtake.
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return at[order[a]] < at[order[b]] })
	lastStage := st[len(st)-1]
	var busy, arrive int64
	for _, j := range order {
		start := max(at[j], busy)
		busy = start + txNs(lens[j]+sched.WireOverhead, lastStage.bps)
		arrive = busy + lastStage.after
	}
	arrive += d.cfg.RecvDelay
	d.cache[k] = arrive
	return arrive
}

// txNs is memnet's serialization time: bytes at bps, rounded up to a ns.
func txNs(bytes int, bps float64) int64 {
	b := int64(bps + 0.5)
	return (int64(bytes)*8*1e9 + b - 1) / b
}

// frameBytes is the bytes of a message's DATA frames, headers included
// (no Ethernet overhead): what the network carries of it.
func frameBytes(size int) int64 {
	n, _ := frames(size)
	return int64(size + n*dataHeaders)
}
