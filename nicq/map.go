package nicq

import (
	"fmt"
	"strings"
)

// NumPriorities is the number of Homa priority levels.
const NumPriorities = 8

// Map assigns each Homa priority (0 lowest .. 7 highest) a TX queue. Queue
// 0 carries the highest priority.
type Map struct {
	queue  [NumPriorities]int // TX queue of each priority
	queues int                // number of TX queues used
}

// NewMap spreads the priorities over n TX queues: with 8 or more, one queue
// per priority (priority 7 on queue 0, priority 0 on queue 7); with fewer,
// priorities 7, 6, ... get queues 0, 1, ... of their own and the lowest
// ones share the last queue, so that control packets and short messages
// (which use the top levels) are never behind bulk data.
func NewMap(n int) (Map, error) {
	if n < 1 {
		return Map{}, fmt.Errorf("priority map: %d TX queues; need at least 1", n)
	}
	var m Map
	m.queues = min(n, NumPriorities)
	for p := range NumPriorities {
		m.queue[p] = min(NumPriorities-1-p, m.queues-1)
	}
	return m, nil
}

// ParseMap reads an explicit map "p7,p6,...,p0" of queue numbers for
// priorities 7 down to 0 (as in a config file), checking each against n
// TX queues and that a higher priority never has a higher queue number (a
// lower queue number is served first).
func ParseMap(s string, n int) (Map, error) {
	parts := strings.Split(s, ",")
	if len(parts) != NumPriorities {
		return Map{}, fmt.Errorf("priority map %q: want %d queue numbers, for priorities 7 down to 0", s, NumPriorities)
	}
	var m Map
	prev := -1
	for i, part := range parts {
		p := NumPriorities - 1 - i
		var q int
		if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d", &q); err != nil {
			return Map{}, fmt.Errorf("priority map %q: priority %d: %q is not a queue number", s, p, part)
		}
		if q < 0 || q >= n {
			return Map{}, fmt.Errorf("priority map %q: priority %d on queue %d, but the port has queues 0..%d", s, p, q, n-1)
		}
		if q < prev {
			return Map{}, fmt.Errorf("priority map %q: priority %d on queue %d, served before the higher priority %d on queue %d", s, p, q, p+1, prev)
		}
		prev = q
		m.queue[p] = q
		m.queues = max(m.queues, q+1)
	}
	return m, nil
}

// Queue returns the TX queue of priority p (clamped to 0..7).
func (m Map) Queue(p int) int { return m.queue[min(max(p, 0), NumPriorities-1)] }

// Queues is the number of TX queues the map uses.
func (m Map) Queues() int { return m.queues }

// String is the map in ParseMap's form.
func (m Map) String() string {
	var b strings.Builder
	for p := NumPriorities - 1; p >= 0; p-- {
		if p != NumPriorities-1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", m.queue[p])
	}
	return b.String()
}
