package memnet

import "fmt"

// The fabric: with Config.Fabric set, the hosts sit in racks, each rack
// behind a top-of-rack (ToR) switch, and every ToR has a link to each of
// the fabric's core switches — the two-level tree of the Homa paper's
// simulations. A frame between hosts of one rack goes
//
//	host NIC → ToR → egress port toward the host → host
//
// and one between racks
//
//	host NIC → source ToR → uplink toward a core → core →
//	downlink toward the destination ToR → ToR → egress toward the host → host
//
// Host links run at Config.LinkBps, ToR–core links at Fabric.UplinkBps.
// Every switch is store-and-forward and adds Fabric.SwitchLatency once a
// frame has fully arrived, before it joins its egress queue; every link
// adds PropDelay. Every egress port (toward a host, a core or a ToR) has
// the strict-priority queues and the BufferBytes drop-tail buffer of the
// single switch, and reports its peak queue (FabricStats). Faults and
// routing checks apply at the source ToR's ingress, as at the single
// switch. Between racks, the core is chosen per frame, round-robin at each
// ToR (packet spraying), or, with Fabric.ECMP, by a hash of the frame's
// source and destination addresses (one path per pair of hosts).

// Fabric shapes the network as racks of hosts behind ToR switches joined
// by core switches. The zero value is the single switch.
type Fabric struct {
	Racks        int     // racks; hosts are placed in AddHost order, HostsPerRack to a rack
	HostsPerRack int     // hosts behind each ToR
	Cores        int     // core switches, each linked to every ToR
	UplinkBps    float64 // rate of every ToR–core link, bits/s (default: LinkBps)
	// SwitchLatency is what each switch adds to a frame after its last
	// bit has arrived, ns (0: none; the paper's is 250).
	SwitchLatency int64
	ECMP          bool // one core per pair of hosts (hash) instead of per frame
}

// on reports whether the fabric is in use.
func (f Fabric) on() bool { return f.Racks > 0 }

func (f Fabric) validate() error {
	if !f.on() {
		if f.HostsPerRack != 0 || f.Cores != 0 || f.UplinkBps != 0 || f.SwitchLatency != 0 || f.ECMP {
			return fmt.Errorf("%w: Fabric set without Racks", ErrConfig)
		}
		return nil
	}
	switch {
	case f.HostsPerRack < 1 || f.Racks*f.HostsPerRack > 1<<20:
		return fmt.Errorf("%w: Fabric: %d racks of %d hosts", ErrConfig, f.Racks, f.HostsPerRack)
	case f.Cores < 1 || f.Cores > 1024:
		return fmt.Errorf("%w: Fabric: %d cores; want 1..1024", ErrConfig, f.Cores)
	case f.UplinkBps < 0 || f.UplinkBps > 1e15:
		return fmt.Errorf("%w: Fabric: UplinkBps %g outside 0..1e15", ErrConfig, f.UplinkBps)
	case f.SwitchLatency < 0:
		return fmt.Errorf("%w: Fabric: SwitchLatency %d is negative", ErrConfig, f.SwitchLatency)
	}
	return nil
}

// flink is one ToR–core link's transmit side: toward a core (up) or
// toward a ToR (down).
type flink struct {
	port
	up         bool // ToR → core; else core → ToR
	rack, core int
}

// fabric is the network's racks, cores and the links between them.
type fabric struct {
	cfg  Fabric
	bps  int64
	up   [][]flink // [rack][core]: ToR → core
	down [][]flink // [core][rack]: core → ToR
	rr   []int     // per rack: the core the next sprayed frame takes
}

func newFabric(f Fabric, linkBps float64) *fabric {
	if f.UplinkBps == 0 {
		f.UplinkBps = linkBps
	}
	fb := &fabric{cfg: f, bps: int64(f.UplinkBps + 0.5), rr: make([]int, f.Racks)}
	fb.up = make([][]flink, f.Racks)
	for r := range fb.up {
		fb.up[r] = make([]flink, f.Cores)
		for c := range fb.up[r] {
			fb.up[r][c] = flink{up: true, rack: r, core: c}
		}
	}
	fb.down = make([][]flink, f.Cores)
	for c := range fb.down {
		fb.down[c] = make([]flink, f.Racks)
		for r := range fb.down[c] {
			fb.down[c][r] = flink{rack: r, core: c}
		}
	}
	return fb
}

// Rack returns the rack of the host (0 without a fabric).
func (h *Host) Rack() int { return h.rack }

// fabricForward queues p, routed and past the faults at its source ToR:
// on the egress port toward its host if it stays in the rack, else on an
// uplink toward a core.
func (n *Network) fabricForward(p *packet) {
	if p.from.rack == p.to.rack {
		n.egressEnter(p)
		return
	}
	fb := n.fab
	r := p.from.rack
	var c int
	if fb.cfg.ECMP {
		c = int(pairHash(p.from.ip, p.to.ip) % uint32(fb.cfg.Cores))
	} else {
		c = fb.rr[r]
		fb.rr[r] = (c + 1) % fb.cfg.Cores
	}
	n.flinkEnter(&fb.up[r][c], p)
}

// pairHash mixes two addresses (FNV-1a) for ECMP.
func pairHash(a, b [4]byte) uint32 {
	h := uint32(2166136261)
	for _, x := range a {
		h = (h ^ uint32(x)) * 16777619
	}
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	return h
}

// flinkEnter queues p on fabric link l, tail-dropping it if l's buffer
// cannot hold it, and starts l if idle.
func (n *Network) flinkEnter(l *flink, p *packet) {
	if n.admit(&l.port, p) {
		n.flinkStart(l)
	}
}

func (n *Network) flinkStart(l *flink) {
	p := l.pop()
	l.cur = p
	if p != nil {
		n.schedule(event{t: n.now + txTimeAt(len(p.buf)+n.cfg.FrameOverhead, n.fab.bps), kind: evFabricDone, l: l})
	}
}

// flinkDone: l has sent its frame's last bit; the frame reaches the next
// switch one propagation delay later and leaves its ingress a switch
// latency after that.
func (n *Network) flinkDone(l *flink) {
	p := l.cur
	l.unhold(p)
	kind := evCoreIn
	if !l.up {
		kind = evTorIn
	}
	n.schedule(event{t: n.now + n.cfg.PropDelay + n.fab.cfg.SwitchLatency, kind: kind, p: p, l: l})
	n.flinkStart(l)
}

// coreIn: p has crossed core l.core: on to the destination's ToR.
func (n *Network) coreIn(p *packet, from *flink) {
	n.flinkEnter(&n.fab.down[from.core][p.to.rack], p)
}

// torIn: p has crossed its destination's ToR: on to the host.
func (n *Network) torIn(p *packet) { n.egressEnter(p) }

// txTimeAt is the serialization time of bytes at bps, rounded up to a ns.
func txTimeAt(bytes int, bps int64) int64 {
	bits := int64(bytes) * 8 * 1e9
	return (bits + bps - 1) / bps
}

// FabricStats are the peak queues of the fabric's links.
type FabricStats struct {
	// Up[r][c], Down[c][r]: the peak bytes held by the egress port of
	// rack r's ToR toward core c, and of core c toward rack r's ToR.
	Up, Down [][]int
}

// FabricStats returns the fabric links' peak queues (nil slices without
// a fabric).
func (n *Network) FabricStats() FabricStats {
	var s FabricStats
	if n.fab == nil {
		return s
	}
	for r := range n.fab.up {
		row := make([]int, len(n.fab.up[r]))
		for c := range row {
			row[c] = n.fab.up[r][c].maxBytes
		}
		s.Up = append(s.Up, row)
	}
	for c := range n.fab.down {
		row := make([]int, len(n.fab.down[c]))
		for r := range row {
			row[r] = n.fab.down[c][r].maxBytes
		}
		s.Down = append(s.Down, row)
	}
	return s
}
