package memnet

// The clock and the event queue. Time is an int64 count of ns from the
// start of the simulation; it moves only when an event runs. Events are
// kept in a binary min-heap of values ordered by (time, sequence), so
// events due at the same ns run in the order they were scheduled, and a
// run is deterministic. Network-internal events carry a kind and a frame
// rather than a closure, so scheduling them does not allocate.

// eventKind says what an event does when it runs.
type eventKind uint8

const (
	evFunc        eventKind = iota // call fn (At, After)
	evUplinkDone                   // host h's NIC finished serializing its current frame
	evSwitchIn                     // frame p reaches the switch's ingress
	evEgressEnter                  // reordered frame p, held back, joins its egress queue
	evEgressDone                   // switch port toward h finished serializing its current frame
	evDeliver                      // frame p reaches host p.dst
	evFabricDone                   // fabric link l finished serializing its current frame
	evCoreIn                       // frame p, off uplink l, leaves its core switch's ingress
	evTorIn                        // frame p, off downlink l, leaves its destination ToR's ingress
	evNICEnter                     // frame p, sent HostDelay ago, joins host h's NIC
)

// event is one entry of the heap. Only the fields its kind needs are set.
type event struct {
	t    int64     // when it runs, ns
	seq  uint64    // tie-break: scheduling order
	kind eventKind // what it does
	h    *Host     // evUplinkDone, evEgressDone: whose port
	p    *packet   // evSwitchIn, evEgressEnter, evDeliver, evCoreIn, evTorIn: the frame
	l    *flink    // evFabricDone, evCoreIn, evTorIn: the fabric link
	fn   func()    // evFunc
}

// eventHeap holds the pending events: the events themselves in a pool
// (slots reused through a free list) and a 4-ary min-heap of small keys
// (time, scheduling order, slot) over them, so that sifting moves 24-byte
// keys instead of whole events and a pop looks at four children per
// level of a shallower tree. It is written out rather than built on
// container/heap, whose interface boxing would allocate per push.
type eventHeap struct {
	keys []hkey
	pool []event
	free []int32
}

// hkey is an event's place in the heap.
type hkey struct {
	t    int64
	seq  uint64
	slot int32
}

func (a *hkey) before(b *hkey) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// Len returns the number of pending events.
func (h *eventHeap) Len() int { return len(h.keys) }

// next returns the time of the earliest event; the heap must not be empty.
func (h *eventHeap) next() int64 { return h.keys[0].t }

func (h *eventHeap) push(e event) {
	var slot int32
	if n := len(h.free); n > 0 {
		slot = h.free[n-1]
		h.free = h.free[:n-1]
		h.pool[slot] = e
	} else {
		slot = int32(len(h.pool))
		h.pool = append(h.pool, e)
	}
	k := hkey{t: e.t, seq: e.seq, slot: slot}
	h.keys = append(h.keys, k)
	q := h.keys
	i := len(q) - 1
	for i > 0 { // move parents down into the hole until k fits
		parent := (i - 1) / 4
		if !k.before(&q[parent]) {
			break
		}
		q[i] = q[parent]
		i = parent
	}
	q[i] = k
}

// pop removes and returns the earliest event; the heap must not be empty.
func (h *eventHeap) pop() event {
	q := h.keys
	top := q[0].slot
	last := len(q) - 1
	k := q[last]
	q = q[:last]
	h.keys = q
	if last > 0 { // sift k down from the root's hole
		i := 0
		for {
			c := 4*i + 1
			if c >= last {
				break
			}
			m := c
			for j := c + 1; j < min(c+4, last); j++ {
				if q[j].before(&q[m]) {
					m = j
				}
			}
			if !q[m].before(&k) {
				break
			}
			q[i] = q[m]
			i = m
		}
		q[i] = k
	}
	e := h.pool[top]
	h.pool[top] = event{} // drop references for the garbage collector
	h.free = append(h.free, top)
	return e
}

// schedule adds an event at time t (never before now).
func (n *Network) schedule(e event) {
	if e.t < n.now {
		e.t = n.now
	}
	n.seq++
	e.seq = n.seq
	n.events.push(e)
}

// Now returns the simulated time in ns.
func (n *Network) Now() int64 { return n.now }

// At schedules f to run at time t in ns (at Now if t is in the past).
// Functions due at the same time run in the order they were scheduled.
// At may be called from inside any callback.
func (n *Network) At(t int64, f func()) { n.schedule(event{t: t, kind: evFunc, fn: f}) }

// After schedules f to run d ns from now.
func (n *Network) After(d int64, f func()) { n.At(n.now+d, f) }

// Pending returns the number of scheduled events, frames in flight
// included.
func (n *Network) Pending() int { return n.events.Len() }

// Step runs the earliest event, moving the clock to its time. It returns
// false, doing nothing, when no event is scheduled. It panics when called
// from inside an event (a callback of the network).
func (n *Network) Step() bool {
	if n.running {
		panic("memnet: Step, RunUntil or RunUntilIdle called from inside a callback")
	}
	if n.events.Len() == 0 {
		return false
	}
	e := n.events.pop()
	n.now = e.t
	n.running = true
	defer func() { n.running = false }()
	n.run(&e)
	return true
}

// RunUntil runs every event due at or before t, then sets the clock to t
// (if it is not already later).
func (n *Network) RunUntil(t int64) {
	for n.events.Len() > 0 && n.events.next() <= t {
		n.Step()
	}
	if t > n.now {
		n.now = t
	}
}

// RunUntilIdle runs events until none is left, and reports true, or until
// the next one is due after time limit (ns, absolute), and reports false
// with the clock set to limit. When it becomes idle the clock stays at the
// last event's time.
func (n *Network) RunUntilIdle(limit int64) bool {
	for n.events.Len() > 0 {
		if n.events.next() > limit {
			if limit > n.now {
				n.now = limit
			}
			return false
		}
		n.Step()
	}
	return true
}

// run dispatches one event.
func (n *Network) run(e *event) {
	switch e.kind {
	case evFunc:
		e.fn()
	case evUplinkDone:
		n.uplinkDone(e.h)
	case evSwitchIn:
		n.switchIn(e.p)
	case evEgressEnter: // a reordered frame, held back at its (source) switch
		if n.fab != nil {
			n.fabricForward(e.p)
		} else {
			n.egressEnter(e.p)
		}
	case evEgressDone:
		n.egressDone(e.h)
	case evDeliver:
		n.deliver(e.p)
	case evFabricDone:
		n.flinkDone(e.l)
	case evCoreIn:
		n.coreIn(e.p, e.l)
	case evTorIn:
		n.torIn(e.p)
	case evNICEnter:
		n.nicEnter(e.h, e.p)
	}
}
