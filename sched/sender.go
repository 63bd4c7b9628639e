package sched

// SendMsg is the sender's view of an outgoing message that has bytes it
// may send but has not. The engine owns it.
type SendMsg struct {
	// Remaining is the message's unsent bytes, the SRPT key. Written by
	// the owner, followed by SenderQueue.Update.
	Remaining int

	// Owner lets the engine find its own state. Set once by the owner.
	Owner any

	birth uint64 // order of arrival in the queue; queue-owned
	index int    // position in SenderQueue.msgs + 1; 0 = not queued
}

// Queued reports whether m is in a SenderQueue.
func (m *SendMsg) Queued() bool { return m.index != 0 }

// SenderQueue orders the messages waiting for the link: shortest
// remaining first, with FIFOFraction per thousand of the bytes sent going
// to the oldest message (the pacer's FIFO share of kernel Homa). Owned by
// one goroutine; no allocation once its slice has grown.
type SenderQueue struct {
	fifoFraction int        // per thousand
	msgs         []*SendMsg // by Remaining, then birth
	births       uint64
	credit       int // SRPT bytes × fraction − FIFO bytes × (1000 − fraction)
}

// NewSenderQueue returns a queue giving fifoFraction per thousand of the
// link to the oldest message, with room for capacity messages.
func NewSenderQueue(fifoFraction, capacity int) *SenderQueue {
	return &SenderQueue{fifoFraction: fifoFraction, msgs: make([]*SendMsg, 0, capacity)}
}

// Len returns the number of queued messages.
func (q *SenderQueue) Len() int { return len(q.msgs) }

// Add queues m (a no-op if it is queued).
func (q *SenderQueue) Add(m *SendMsg) {
	if m.index != 0 {
		return
	}
	q.births++
	m.birth = q.births
	q.msgs = append(q.msgs, m)
	m.index = len(q.msgs)
	q.Update(m)
}

// Update re-sorts m after its Remaining changed.
func (q *SenderQueue) Update(m *SendMsg) {
	if m.index == 0 {
		return
	}
	i := m.index - 1
	for i > 0 && sendLess(m, q.msgs[i-1]) {
		q.msgs[i] = q.msgs[i-1]
		q.msgs[i].index = i + 1
		i--
	}
	for i+1 < len(q.msgs) && sendLess(q.msgs[i+1], m) {
		q.msgs[i] = q.msgs[i+1]
		q.msgs[i].index = i + 1
		i++
	}
	q.msgs[i] = m
	m.index = i + 1
}

// Remove dequeues m (a no-op if it is not queued).
func (q *SenderQueue) Remove(m *SendMsg) {
	if m.index == 0 {
		return
	}
	i := m.index - 1
	copy(q.msgs[i:], q.msgs[i+1:])
	q.msgs[len(q.msgs)-1] = nil
	q.msgs = q.msgs[:len(q.msgs)-1]
	for j := i; j < len(q.msgs); j++ {
		q.msgs[j].index = j + 1
	}
	m.index = 0
}

func sendLess(a, b *SendMsg) bool {
	return a.Remaining < b.Remaining || a.Remaining == b.Remaining && a.birth < b.birth
}

// Next returns the message to send from next, or nil if the queue is
// empty: the shortest, unless the FIFO share is owed, then the oldest.
// Call Sent after sending from it.
func (q *SenderQueue) Next() *SendMsg {
	if len(q.msgs) == 0 {
		return nil
	}
	if q.fifoFraction > 0 && q.credit > 0 {
		oldest := q.msgs[0]
		for _, m := range q.msgs[1:] {
			if m.birth < oldest.birth {
				oldest = m
			}
		}
		return oldest
	}
	return q.msgs[0]
}

// Sent records that n bytes of m were sent, for the FIFO share. Call it
// before changing m.Remaining or removing m.
func (q *SenderQueue) Sent(m *SendMsg, n int) {
	if q.fifoFraction <= 0 || len(q.msgs) == 0 {
		return
	}
	if m == q.msgs[0] {
		// Sending the shortest message: the oldest is owed its share,
		// unless it is the shortest itself.
		if q.credit <= 0 {
			q.credit += n * q.fifoFraction
		}
		return
	}
	q.credit -= n * (1000 - q.fifoFraction)
}
