package host

import "github.com/homa-dpdk/homa-dpdk/dpdk"

// Pipeline runs the hosts of one polling loop with one crossing into C per
// host pass instead of two. Before host i's pass, one crossing
// (dpdk.Batch.TxFreeRx) sends what the host before it (i-1, cyclically;
// a loop of one host: the host itself, from its last pass) prepared — its
// TX bursts and the mbufs it was done with — and then receives host i's
// RX burst. The sends complete before the receives, so in a loop of two
// hosts joined by a ring pair the frames A sends in its pass reach B in
// B's pass right after, as with PassAt. A pass is then:
//
//  1. the crossing: prev's TX and free list, this host's RX (link up);
//  2. prev's TX completion: what each queue took (nicq Taken; a refused
//     packet goes back to its queue);
//  3. this host's work: the received burst, applications, timers, ARP
//     retries, the counters' publication;
//  4. its TX bursts built for the next crossing (prepareTx).
//
// The last host's bursts wait for the next Pass: a loop that may sleep
// calls Flush before it does. A Pipeline belongs to the loop's thread;
// its hosts must not be driven by PassAt as well.
type Pipeline struct {
	hosts []*Host
	clock func() int64
}

// NewPipeline makes the pipeline of a loop's hosts, run in the order given;
// Pass reads the first host's clock, once for all.
func NewPipeline(hosts ...*Host) *Pipeline {
	return &Pipeline{hosts: hosts, clock: hosts[0].clock}
}

// Pass runs one pass of every host; it returns the packets and
// submissions handled.
func (p *Pipeline) Pass() int { return p.PassAt(p.clock()) }

// PassAt is Pass at time now (monotonic ns).
func (p *Pipeline) PassAt(now int64) int {
	n := 0
	prev := p.hosts[len(p.hosts)-1]
	for _, h := range p.hosts {
		n += h.stage(prev, now)
		prev = h
	}
	return n
}

// Flush sends what the last host prepared in the last Pass, now rather
// than in the next Pass's first crossing, and returns the packets its
// queues took: for a loop about to sleep (lcore.Config.Flush), so that
// nothing waits out the sleep. A loop that keeps polling needs no Flush.
func (p *Pipeline) Flush() int {
	if last := p.hosts[len(p.hosts)-1]; last.txPending {
		return last.sendPrepared()
	}
	return 0
}

// Drain sends what the hosts prepared and frees everything they hold (see
// Host.Drain), on the loop's thread or after the loop stopped.
func (p *Pipeline) Drain() {
	for _, h := range p.hosts {
		h.Drain()
	}
}

// stage is host h's pass in a pipeline whose previous host is prev (h
// itself in a loop of one): the crossing, prev's TX completion, h's work
// and h's TX bursts for the next crossing. It returns the packets prev's
// queues took, the packets h received and its applications' work.
func (h *Host) stage(prev *Host, now int64) int {
	h.now = now
	h.checkLink()
	var tx, rx *dpdk.Batch
	if prev.txPending {
		tx = &prev.txb
	}
	if h.portLink.Up {
		rx = &h.rx
	}
	got := tx.TxFreeRx(prev.free, rx)
	if h.cap != nil && got > 0 {
		h.capRxAt = h.clock() + h.wallOff // the burst's arrival, Unix ns, for the capture
	}
	clear(prev.free)
	prev.free = prev.free[:0]
	n := prev.completeTx() + got
	// TX completions, before the burst (a RESEND in it sees what the
	// devices let go of): prev's frames this crossing sent, and h's that
	// the crossings since its own let go of (a ring peer's frees).
	prev.reapTx()
	if h != prev {
		h.reapTx()
	}
	if rx != nil {
		h.receiveBurst(got)
	}
	n += h.work()
	h.prepareTx()
	return n
}
