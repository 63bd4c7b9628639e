package nicq

import "fmt"

// QueueStats are one TX queue's counters.
type QueueStats struct {
	Enqueued uint64 // packets accepted into the software queue
	Sent     uint64 // packets the NIC queue took
	Returned uint64 // packets the NIC queue refused, kept for the next pass
	Dropped  uint64 // packets refused because the software queue was full
	Deferred uint64 // passes that left packets queued because the NIC backlog was full
	MaxDepth int    // most packets queued at once
	// CompletionStats: what the device let go of (TrackCompletions).
	CompletionStats
}

// Config configures a Scheduler.
type Config struct {
	Map      Map
	Capacity int     // packets per software queue (rounded up to a power of two)
	Burst    int     // most packets handed to one TX queue per pass
	LinkBps  float64 // link rate, bits per second
	// MaxNICQueue bounds the NIC backlog estimate, in ns of link time
	// (max_nic_queue_us). Paced packets wait in the software queues while
	// the estimate is above it.
	MaxNICQueue int64
	// TrackCompletions keeps each packet a TX queue took until the
	// device lets go of it (complete.go): Done then counts packets the
	// device let go of, not packets its queue took. MaxHold (ns; 0:
	// DefaultMaxHold) bounds how long a held packet holds Done back;
	// InDevice (0: DefaultInDevice) is how many each TX queue tracks.
	TrackCompletions bool
	MaxHold          int64
	InDevice         int
}

// Scheduler is strict priority among TX queues, in software, with the NIC
// backlog bounded in link time. T is the caller's packet handle (an mbuf
// pointer on DPDK); size tells its frame length. A Scheduler belongs to
// the one polling loop that owns the port's TX queues.
//
// Each pass: Enqueue what the engine produced, Fill, hand Burst(q) to TX
// queue q for every queue, then report with Taken how many each queue
// took; the rest return to the head of their queue for the next pass.
type Scheduler[T any] struct {
	cfg     Config
	size    func(T) int
	queues  []ring[T]
	bursts  [][]T
	bmeta   [][]uint8     // per burst, in step with bursts: the packets' meta
	meta    []ring[uint8] // per queue, in step with queues: priority | metaPaced
	backlog Backlog
	stats   []QueueStats
	// done counts, by priority, the packets that left: taken by a NIC
	// queue (with TrackCompletions: let go of by the device), or dropped
	// (Done).
	done [NumPriorities]uint64
	// dev are the packets each TX queue's device holds, inDev how many
	// in all, lateAt when Reap last looked at the late ones
	// (TrackCompletions; complete.go).
	dev     []inDevice[T]
	inDev   int
	lateAt  int64
	maxHold int64
}

// metaPaced marks a packet that waits for the NIC backlog; the low bits
// of its meta are its priority.
const metaPaced = 0x80

// NewScheduler makes a scheduler for cfg.Map.Queues() TX queues.
func NewScheduler[T any](cfg Config, size func(T) int) (*Scheduler[T], error) {
	switch {
	case cfg.Map.Queues() < 1:
		return nil, fmt.Errorf("nicq: the priority map has no queue")
	case cfg.Capacity < 1:
		return nil, fmt.Errorf("nicq: queue capacity %d; need at least 1", cfg.Capacity)
	case cfg.Burst < 1:
		return nil, fmt.Errorf("nicq: burst %d; need at least 1", cfg.Burst)
	case cfg.LinkBps <= 0:
		return nil, fmt.Errorf("nicq: link rate %v bit/s; need a positive rate", cfg.LinkBps)
	case cfg.MaxNICQueue <= 0:
		return nil, fmt.Errorf("nicq: max NIC queue %d ns; need a positive bound", cfg.MaxNICQueue)
	}
	n := cfg.Map.Queues()
	s := &Scheduler[T]{
		cfg:     cfg,
		size:    size,
		queues:  make([]ring[T], n),
		meta:    make([]ring[uint8], n),
		bursts:  make([][]T, n),
		bmeta:   make([][]uint8, n),
		backlog: NewBacklog(cfg.LinkBps),
		stats:   make([]QueueStats, n),
	}
	if cfg.TrackCompletions {
		s.maxHold = cfg.MaxHold
		if s.maxHold <= 0 {
			s.maxHold = DefaultMaxHold
		}
		room := cfg.InDevice
		if room <= 0 {
			room = DefaultInDevice
		}
		s.dev = make([]inDevice[T], n)
		for q := range s.dev {
			s.dev[q] = inDevice[T]{pkts: newRing[sentPkt[T]](room)}
		}
	}
	for q := range n {
		s.queues[q] = newRing[T](cfg.Capacity)
		s.meta[q] = newRing[uint8](cfg.Capacity)
		s.bursts[q] = make([]T, 0, cfg.Burst)
		s.bmeta[q] = make([]uint8, 0, cfg.Burst)
	}
	return s, nil
}

// Enqueue queues a packet of priority prio on its TX queue's software
// queue. An unpaced packet (control packets; messages shorter than the
// pacer's threshold) goes out at the next Fill whatever the NIC backlog;
// a paced one waits for room. It returns false, and counts a drop, when
// the queue is full: the caller frees the packet.
func (s *Scheduler[T]) Enqueue(p T, prio int, paced bool) bool {
	prio = min(max(prio, 0), NumPriorities-1)
	q := s.cfg.Map.Queue(prio)
	if !s.queues[q].pushBack(p) {
		s.stats[q].Dropped++
		s.done[prio]++
		return false
	}
	m := uint8(prio)
	if paced {
		m |= metaPaced
	}
	s.meta[q].pushBack(m)
	st := &s.stats[q]
	st.Enqueued++
	st.MaxDepth = max(st.MaxDepth, s.queues[q].len())
	return true
}

// Fill builds this pass's bursts at time now (ns): highest queue first,
// each packet charged to the NIC backlog estimate; a paced packet stops
// its queue, and all lower ones, once the backlog is at its bound.
func (s *Scheduler[T]) Fill(now int64) {
	blocked := false
	for q := range s.queues {
		b, bp := s.bursts[q][:0], s.bmeta[q][:0]
		r, pr := &s.queues[q], &s.meta[q]
		for r.len() > 0 && len(b) < s.cfg.Burst {
			if pr.peek()&metaPaced != 0 && (blocked || !s.backlog.Room(now, s.cfg.MaxNICQueue)) {
				blocked = true
				s.stats[q].Deferred++
				break
			}
			p := r.popFront()
			bp = append(bp, pr.popFront())
			s.backlog.Sent(now, s.size(p))
			b = append(b, p)
		}
		s.bursts[q], s.bmeta[q] = b, bp
	}
}

// Burst is the packets to hand to TX queue q this pass.
func (s *Scheduler[T]) Burst(q int) []T { return s.bursts[q] }

// Taken reports that TX queue q took the first n packets of its burst at
// now; the others return to the head of the queue, in order, and their
// link time is taken back from the backlog estimate. A packet that finds
// no room to return (Enqueue refilled the queue after Fill) is counted as
// dropped and handed to drop, which frees it.
func (s *Scheduler[T]) Taken(q, n int, now int64, drop func(T)) {
	b := s.bursts[q]
	n = min(max(n, 0), len(b))
	s.stats[q].Sent += uint64(n)
	bm := s.bmeta[q]
	if s.dev != nil {
		s.took(q, b[:n], bm[:n], now)
	} else {
		for _, m := range bm[:n] {
			s.done[m&^metaPaced]++
		}
	}
	for i := len(b) - 1; i >= n; i-- {
		s.backlog.busyUntil -= s.backlog.WireTime(s.size(b[i]))
		if !s.queues[q].pushFront(b[i]) {
			s.stats[q].Dropped++
			s.done[bm[i]&^metaPaced]++
			drop(b[i])
			continue
		}
		s.meta[q].pushFront(bm[i])
		s.stats[q].Returned++
	}
	s.backlog.busyUntil = max(s.backlog.busyUntil, now)
	clear(b)
	s.bursts[q], s.bmeta[q] = b[:0], bm[:0]
}

// Map is the priority → TX queue map the scheduler uses.
func (s *Scheduler[T]) Map() Map { return s.cfg.Map }

// Len is the number of packets waiting in all the software queues.
func (s *Scheduler[T]) Len() int {
	n := 0
	for q := range s.queues {
		n += s.queues[q].len()
	}
	return n
}

// Queued is the number of packets waiting in TX queue q's software queue.
func (s *Scheduler[T]) Queued(q int) int { return s.queues[q].len() }

// Backlog is the NIC backlog estimate at now, in ns of link time.
func (s *Scheduler[T]) Backlog(now int64) int64 { return s.backlog.Queued(now) }

// Done returns how many packets enqueued at priority prio have left the
// software queues: taken by their NIC queue (with TrackCompletions: and
// let go of by its device, Reap), or dropped (at Enqueue, at Taken, by
// Drain). Packets of one priority leave in the order they were
// enqueued (one queue per priority, FIFO), so the engine can tell whether
// a packet it sent is still queued (engine.TxProgress).
func (s *Scheduler[T]) Done(prio int) uint64 { return s.done[min(max(prio, 0), NumPriorities-1)] }

// Stats returns TX queue q's counters.
func (s *Scheduler[T]) Stats(q int) QueueStats {
	st := s.stats[q]
	if s.dev != nil {
		st.CompletionStats = s.dev[q].st
		st.InDevice = s.dev[q].held()
	}
	return st
}

// Drain removes every queued packet (at shutdown), calling free for each.
func (s *Scheduler[T]) Drain(free func(T)) {
	for q := range s.queues {
		for s.queues[q].len() > 0 {
			free(s.queues[q].popFront())
			s.done[s.meta[q].popFront()&^metaPaced]++
		}
	}
}
