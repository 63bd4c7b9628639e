package main

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// hostLoop is one Homa host on one DPDK port, run by a polling loop: the
// shape of DPDK's l3fwd — RX burst, process, run timers and the pacer, TX
// burst per priority queue, free or count what the NIC did not take.
// Everything here is owned by the loop's thread.
type hostLoop struct {
	port  *dpdk.Port
	me    hostAddr
	ep    *engine.Endpoint
	neigh *neighbourTable
	tx    *mbufTx
	sched *nicq.Scheduler[*dpdk.Mbuf]
	cap   *dpdk.Capture // nil when capture is off
	capIf int           // this port's interface in the capture
	fault faultInjector

	rx      dpdk.Batch     // every RX queue of the port, polled in one cgo call
	rxBufs  [][]*dpdk.Mbuf // one burst per RX queue
	txb     dpdk.Batch     // one entry per TX queue
	txBufs  [][]*dpdk.Mbuf
	free    []*dpdk.Mbuf    // freed together at the end of the pass
	scratch []byte          // a chained frame made contiguous
	arpBuf  []*dpdk.Mbuf    // one mbuf for an ARP request
	now     int64           // monotonic ns, read once per pass
	clock   func() int64    // monotonic ns
	wallOff int64           // add to now for Unix ns (capture timestamps)
	app     func(now int64) // in-loop application (the demo), or nil
	workers *workerHub      // the worker interface, or nil

	stack stackCounters
	drops [numRxDrops]uint64

	box         *snapshotBox // counters published for the metrics endpoint, or nil
	nextPublish int64

	pcp     bool         // frames carry an 802.1Q tag on vlan (priority marking pcp)
	vlan    uint16       //
	subnet  netip.Prefix // this port's subnet (invalid: every address is on-link)
	gateway [4]byte      // next hop off the subnet; zero for none
	NoRoute uint64       // resolutions refused: off the subnet with no gateway
}

// ipProtocolOffset is where the protocol byte sits in an IPv4 header.
const ipProtocolOffset = 9

// Receive-side drops of the host loop, by cause (the engine counts its own).
const (
	rxDropShort = iota
	rxDropNotIPv4
	rxDropBadIPv4
	rxDropNotForUs
	rxDropProtocol
	rxDropFault
	rxDropChained
	numRxDrops
)

var rxDropNames = [numRxDrops]string{"short_frame", "ethertype", "bad_ipv4", "not_for_us", "ip_protocol", "fault_injected",
	"chained_not_homa"}

// isHoma reports whether frame (at least an Ethernet header) carries IPv4
// protocol 146, with or without an 802.1Q tag.
func isHoma(frame []byte) bool {
	off, typ := wire.EthernetHeaderLen, wire.Ethernet(frame).Type()
	if typ == wire.EtherTypeVLAN && len(frame) >= wire.EthernetHeaderLen+wire.VLANTagLen {
		off, typ = wire.EthernetHeaderLen+wire.VLANTagLen, wire.VLAN(frame[wire.EthernetHeaderLen:]).Type()
	}
	return typ == wire.EtherTypeIPv4 && len(frame) > off+ipProtocolOffset && frame[off+ipProtocolOffset] == wire.IPProtoHoma
}

// pass is one turn of the loop; it returns the packets it handled.
func (l *hostLoop) pass() int { return l.passAt(l.clock()) }

// passAt is a pass at time now (monotonic ns), for loops that run several
// hosts and read the clock once for all.
func (l *hostLoop) passAt(now int64) int {
	l.now = now
	prev := l.fault.release() // held back last pass: now it comes after newer packets
	n := l.rx.Rx()
	// The burst is one batch for the engine: one round of grant
	// decisions after its last packet.
	batch := n > 0 || prev != nil
	if batch {
		l.ep.BeginBatch(now)
	}
	for q := 0; n > 0 && q < l.rx.Len(); q++ {
		pkts := l.rx.Pkts(q)
		if l.cap != nil && len(pkts) > 0 {
			l.cap.RecordMbufs(l.capIf, dpdk.Inbound, l.now+l.wallOff, pkts)
		}
		for _, m := range pkts {
			l.receive(m)
		}
	}
	if prev != nil {
		l.dispatch(prev, false)
	}
	if batch {
		l.ep.EndBatch()
	}
	if l.app != nil {
		l.app(l.now)
	}
	if l.workers != nil {
		n += l.workers.poll()
	}
	if l.now >= l.ep.NextDeadline() {
		l.ep.Run()
	}
	if l.workers != nil {
		l.workers.flush()
	}
	l.neigh.Retries(l.now, l.sendARPRequest)
	l.publish()
	sent := l.flush()
	dpdk.FreeBulk(l.free)
	clear(l.free)
	l.free = l.free[:0]
	return n + sent
}

// receive dispatches one received frame; it owns m from here on.
func (l *hostLoop) receive(m *dpdk.Mbuf) {
	switch l.fault.decide() {
	case faultDrop:
		l.drops[rxDropFault]++
		l.free = append(l.free, m)
		return
	case faultHold:
		l.fault.hold(m)
		return
	case faultDuplicate:
		l.dispatch(m, true)
		return
	}
	l.dispatch(m, false)
}

func (l *hostLoop) dispatch(m *dpdk.Mbuf, twice bool) {
	d := m.Data()
	if m.NumSegs() > 1 {
		// A chained packet (a peer in this process sent a payload from a
		// worker's memory): made contiguous for the engine, which copies
		// what it keeps. The host stack answers only single segments.
		l.scratch = m.AppendData(l.scratch[:0])
		d = l.scratch
		if ok := len(d) > wire.EthernetHeaderLen; !ok || !isHoma(d) {
			l.drops[rxDropChained]++
			l.free = append(l.free, m)
			return
		}
	}
	if len(d) < wire.EthernetHeaderLen {
		l.drops[rxDropShort]++
		l.free = append(l.free, m)
		return
	}
	ethLen, typ := wire.EthernetHeaderLen, wire.Ethernet(d).Type()
	if typ == wire.EtherTypeVLAN && len(d) >= wire.EthernetHeaderLen+wire.VLANTagLen {
		ethLen, typ = wire.EthernetHeaderLen+wire.VLANTagLen, wire.VLAN(d[wire.EthernetHeaderLen:]).Type()
	}
	switch typ {
	case wire.EtherTypeARP:
		if handleARP(d, ethLen, l.me, l.neigh, l.now, &l.stack) == stackReply {
			l.tx.enqueue(m)
			return
		}
	case wire.EtherTypeIPv4:
		if len(d) > ethLen+ipProtocolOffset && d[ethLen+ipProtocolOffset] == wire.IPProtoHoma {
			// The engine parses and validates the whole frame (IPv4
			// checksum, destination, Homa header) and counts what it
			// drops: checking it here too would do that work twice.
			l.ep.Receive(d) // the engine copies what it keeps
			if twice {
				l.ep.Receive(d)
			}
			break
		}
		ip, r := wire.ParseIPv4(d[ethLen:])
		if r == wire.DropNotHoma { // a valid IPv4 header of another protocol
			ip, r = wire.IPv4(d[ethLen:]), wire.DropNone
			ip = ip[:ip.TotalLength()]
		}
		switch {
		case r != wire.DropNone:
			l.drops[rxDropBadIPv4]++
		case ip.Dst() != l.me.ip:
			l.drops[rxDropNotForUs]++
		case ip.Protocol() == wire.IPProtoICMP && len(ip.Payload()) > 0 && ip.Payload()[0] == wire.ICMPEchoRequest:
			if handleICMP(d, ip, l.me, &l.stack) == stackReply {
				l.tx.enqueue(m)
				return
			}
		case ip.Protocol() == wire.IPProtoICMP: // port unreachable and the like: the engine's
			l.ep.Receive(d)
		default:
			l.drops[rxDropProtocol]++
		}
	default:
		l.drops[rxDropNotIPv4]++
	}
	l.free = append(l.free, m)
}

// sendARPRequest broadcasts a request for ip.
func (l *hostLoop) sendARPRequest(ip [4]byte) {
	if l.arpBuf == nil {
		l.arpBuf = make([]*dpdk.Mbuf, 1)
	}
	if l.tx.pool.AllocBulk(l.arpBuf) != nil {
		l.tx.NoBuffer++
		return
	}
	m := l.arpBuf[0]
	b := m.Append(64)
	clear(b)
	m.SetLen(max(arpRequest(b, l.me, ip, l.pcp, wire.MakeTCI(wire.NumPriorities-1, false, l.vlan)), 60))
	l.tx.enqueue(m)
}

// resolve is the engine's Resolve: the MAC of ip's next hop — ip itself on
// the port's subnet, the gateway otherwise — when known, or a request
// sent (rate-limited by the table) and false.
func (l *hostLoop) resolve(ip [4]byte) (wire.MAC, bool) {
	hop, ok := l.nextHop(ip)
	if !ok {
		l.NoRoute++
		return wire.MAC{}, false
	}
	mac, ok, request := l.neigh.Resolve(hop, l.now)
	if request {
		l.sendARPRequest(hop)
	}
	return mac, ok
}

// nextHop returns the address to resolve to reach ip.
func (l *hostLoop) nextHop(ip [4]byte) ([4]byte, bool) {
	if !l.subnet.IsValid() || l.subnet.Contains(netip.AddrFrom4(ip)) {
		return ip, true
	}
	if l.gateway == ([4]byte{}) {
		return ip, false
	}
	return l.gateway, true
}

// flush hands each TX queue its burst, highest priority first, in one cgo
// call, and returns the packets the NIC took.
func (l *hostLoop) flush() int {
	if l.sched.Len() == 0 { // most passes of an idle or receiving loop
		return 0
	}
	l.sched.Fill(l.now)
	total := 0
	for q := range l.txBufs {
		b := l.sched.Burst(q)
		copy(l.txBufs[q], b)
		l.txb.SetCount(q, len(b))
		if l.cap != nil && len(b) > 0 {
			l.cap.RecordMbufs(l.capIf, dpdk.Outbound, l.now+l.wallOff, b)
		}
	}
	l.txb.Tx()
	for q := range l.txBufs {
		got := l.txb.Got(q)
		total += got
		l.sched.Taken(q, got, l.now, l.dropTx)
	}
	return total
}

func (l *hostLoop) dropTx(m *dpdk.Mbuf) { l.free = append(l.free, m) }

// drain frees everything the loop holds, at shutdown.
func (l *hostLoop) drain() {
	l.flush()
	l.sched.Drain(l.dropTx)
	if held := l.fault.release(); held != nil {
		l.free = append(l.free, held)
	}
	dpdk.FreeBulk(l.free)
	l.free = l.free[:0]
	l.tx.close()
	if l.workers != nil { // last: the packets above may send from workers' arenas
		l.workers.stop()
	}
}

// faultVerdict is what fault injection does with a received packet.
type faultVerdict uint8

const (
	faultNone faultVerdict = iota
	faultDrop
	faultDuplicate
	faultHold // delivered after the next packets: reordered
)

// faultInjector drops, duplicates or reorders a configured fraction of
// received packets (off by default), seeded, counted.
type faultInjector struct {
	drop, dup, reorder             float64
	rng                            *rand.Rand
	held                           *dpdk.Mbuf
	Dropped, Duplicated, Reordered uint64
}

func newFaultInjector(drop, dup, reorder float64, seed int64) faultInjector {
	return faultInjector{drop: drop, dup: dup, reorder: reorder, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
}

func (f *faultInjector) decide() faultVerdict {
	if f.rng == nil || f.drop+f.dup+f.reorder == 0 {
		return faultNone
	}
	x := f.rng.Float64()
	switch {
	case x < f.drop:
		f.Dropped++
		return faultDrop
	case x < f.drop+f.dup:
		f.Duplicated++
		return faultDuplicate
	case x < f.drop+f.dup+f.reorder && f.held == nil:
		f.Reordered++
		return faultHold
	}
	return faultNone
}

func (f *faultInjector) hold(m *dpdk.Mbuf) { f.held = m }

func (f *faultInjector) release() *dpdk.Mbuf {
	m := f.held
	f.held = nil
	return m
}

func (l *hostLoop) String() string {
	return fmt.Sprintf("host %v on port %d (%s)", l.me.ip, l.port.ID, l.port.Name)
}

// summary is a one-line account of what the host counted: its own drops,
// the engine's drops and retransmissions, the transmit side's refusals and
// each TX queue's counters. For errors and the end of a run.
func (l *hostLoop) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", l.me.ip4())
	for i, n := range l.drops {
		if n > 0 {
			fmt.Fprintf(&b, " rx_drop_%s=%d", rxDropNames[i], n)
		}
	}
	m := l.ep.Metrics()
	m.Each(func(name string, v uint64) {
		if v > 0 && (strings.HasPrefix(name, "drops_") || name == "resent_packets" || name == "rpc_timeouts" || name == "unknown_rpcs" || name == "timer_ticks_skipped") {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	})
	fmt.Fprintf(&b, " tx_no_buffer=%d tx_busy=%d", l.tx.NoBuffer, l.tx.Busy)
	for q := range l.txBufs {
		st := l.sched.Stats(q)
		if st.Enqueued > 0 {
			fmt.Fprintf(&b, " q%d{sent=%d returned=%d dropped=%d max=%d}", q, st.Sent, st.Returned, st.Dropped, st.MaxDepth)
		}
	}
	return b.String()
}
