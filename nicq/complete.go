package nicq

// TX completions. A NIC queue that takes a packet has not sent it yet:
// a hardware ring holds it until the device has read it (and a ring
// pair's peer until it has received it), and a packet whose payload is
// a worker's memory must keep that memory unchanged until then. With
// Config.TrackCompletions the caller keeps a reference to each packet a
// TX queue takes (on DPDK the crossing raises each mbuf's reference
// count before the burst and lowers it again for those the queue
// refused: dpdk.Batch.HoldSent), and the scheduler keeps the packet in
// its TX queue's in-device FIFO until the device has let go of it, then
// hands it to Reap's release, which drops that last reference. Done then
// counts a packet once the device let go of it and of every packet its
// TX queue took before it, so a RESEND for DATA still in a hardware ring
// is answered BUSY (engine.TxProgress), as for DATA in the software
// queues.
//
// A device that never lets go of a packet (a ring pair whose peer
// stopped polling) must not hold its priority's count back for ever: a
// packet held longer than Config.MaxHold counts as done all the same
// (Late), and waits aside until the device lets go of it. The FIFO has
// room for Config.InDevice packets per TX queue; a packet that finds it
// full counts as done at once and its reference is released at the next
// Reap (Untracked).

// DefaultMaxHold is Config.MaxHold's zero value: 10 ms, tens of times
// what a hardware ring of 1024 full frames takes to send at 10 Gbit/s.
const DefaultMaxHold = int64(10e6)

// DefaultInDevice is Config.InDevice's zero value.
const DefaultInDevice = 4096

// lateCheckEvery is how often (ns) Reap looks at the late packets.
const lateCheckEvery = int64(100e3)

// CompletionStats are a TX queue's completion counters (TrackCompletions).
type CompletionStats struct {
	Completed uint64 // packets the device let go of, in order
	Late      uint64 // packets counted done while the device still held them (MaxHold)
	Untracked uint64 // packets the in-device FIFO had no room for: counted done when taken
	InDevice  int    // packets the device holds now (the FIFO and the late ones)
	MaxIn     int    // most packets the device held at once
}

// inDevice is one TX queue's packets the device holds.
type inDevice[T any] struct {
	pkts ring[sentPkt[T]] // in the order the queue took them
	late []T              // counted done, still held
	drop []T              // untracked: released at the next Reap
	st   CompletionStats
}

// sentPkt is a packet its queue took: its priority and when.
type sentPkt[T any] struct {
	p    T
	prio uint8
	at   int64
}

func (d *inDevice[T]) held() int { return d.pkts.len() + len(d.late) }

// took records the packets of one burst that queue q took at now.
func (s *Scheduler[T]) took(q int, b []T, meta []uint8, now int64) {
	d := &s.dev[q]
	for i, p := range b {
		prio := meta[i] &^ metaPaced
		if !d.pkts.pushBack(sentPkt[T]{p, prio, now}) {
			d.st.Untracked++
			s.done[prio]++
			d.drop = append(d.drop, p)
		}
	}
	s.inDev += len(b)
	d.st.MaxIn = max(d.st.MaxIn, d.held())
}

// Reap takes, at now, the packets the devices let go of: held reports
// whether the device still holds a packet (its reference count above
// the scheduler's own), release drops the scheduler's reference. It
// returns the packets released. Without TrackCompletions it does nothing.
func (s *Scheduler[T]) Reap(now int64, held func(T) bool, release func(T)) int {
	if s.inDev == 0 {
		return 0
	}
	n := 0
	checkLate := now-s.lateAt >= lateCheckEvery
	if checkLate {
		s.lateAt = now
	}
	for q := range s.dev {
		d := &s.dev[q]
		for _, p := range d.drop {
			release(p)
		}
		n += len(d.drop)
		clear(d.drop)
		d.drop = d.drop[:0]
		for d.pkts.len() > 0 {
			e := d.pkts.peek()
			if held(e.p) {
				if now-e.at < s.maxHold {
					break
				}
				d.st.Late++
				d.late = append(d.late, e.p)
			} else {
				d.st.Completed++
				release(e.p)
				n++
			}
			d.pkts.popFront()
			s.done[e.prio]++
		}
		if checkLate && len(d.late) > 0 {
			kept := d.late[:0]
			for _, p := range d.late {
				if held(p) {
					kept = append(kept, p)
					continue
				}
				release(p)
				n++
			}
			clear(d.late[len(kept):])
			d.late = kept
		}
	}
	s.inDev -= n
	return n
}

// HeldSince is when TX queue q took the oldest packet its device still
// holds in order (the head of its in-device FIFO); false when none.
func (s *Scheduler[T]) HeldSince(q int) (int64, bool) {
	if s.dev == nil || s.dev[q].pkts.len() == 0 {
		return 0, false
	}
	return s.dev[q].pkts.peek().at, true
}

// InDevice is the number of packets the devices hold (TrackCompletions).
func (s *Scheduler[T]) InDevice() int { return s.inDev }

// ReleaseInDevice drops the scheduler's reference to every packet a
// device holds, without waiting for it (at shutdown: the device frees
// them when it lets go), and counts them done.
func (s *Scheduler[T]) ReleaseInDevice(release func(T)) {
	for q := range s.dev {
		d := &s.dev[q]
		for d.pkts.len() > 0 {
			e := d.pkts.popFront()
			release(e.p)
			s.done[e.prio]++
		}
		for _, p := range append(d.late, d.drop...) {
			release(p)
		}
		clear(d.late)
		clear(d.drop)
		d.late, d.drop = d.late[:0], d.drop[:0]
	}
	s.inDev = 0
}
