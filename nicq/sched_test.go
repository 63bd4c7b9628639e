package nicq

import (
	"fmt"
	"strings"
	"testing"
)

// pkt is a test packet: a name and a frame length.
type pkt struct {
	name string
	size int
}

func newTestScheduler(t *testing.T, queues int, limitNs int64) *Scheduler[pkt] {
	t.Helper()
	m, err := NewMap(queues)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScheduler(Config{Map: m, Capacity: 8, Burst: 4, LinkBps: 10e9, MaxNICQueue: limitNs},
		func(p pkt) int { return p.size })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bursts renders a pass's bursts as "q0:a,b q2:c".
func bursts(s *Scheduler[pkt]) string {
	var parts []string
	for q := range s.queues {
		if b := s.Burst(q); len(b) > 0 {
			var names []string
			for _, p := range b {
				names = append(names, p.name)
			}
			parts = append(parts, fmt.Sprintf("q%d:%s", q, strings.Join(names, ",")))
		}
	}
	return strings.Join(parts, " ")
}

func takeAll(s *Scheduler[pkt], now int64) {
	for q := range s.queues {
		s.Taken(q, len(s.Burst(q)), now, func(pkt) {})
	}
}

func TestScheduler_strictPriorityAndMap(t *testing.T) {
	s := newTestScheduler(t, 8, 1_000_000)
	s.Enqueue(pkt{"low", 100}, 0, true)
	s.Enqueue(pkt{"mid", 100}, 3, true)
	s.Enqueue(pkt{"ctl", 40}, 7, false)
	s.Fill(0)
	if got := bursts(s); got != "q0:ctl q4:mid q7:low" {
		t.Errorf("bursts %q", got)
	}
}

func TestScheduler_backlogDefersPacedNotUnpaced(t *testing.T) {
	// 2500 ns of NIC queue; a 1500-byte frame takes 1219 ns, a 60-byte one
	// 67 ns. The bound is checked before each paced frame.
	s := newTestScheduler(t, 8, 2500)
	for i := range 4 {
		s.Enqueue(pkt{fmt.Sprintf("d%d", i), 1500}, 2, true)
	}
	s.Enqueue(pkt{"grant", 60}, 7, false)
	s.Fill(0)
	if got := bursts(s); got != "q0:grant q5:d0,d1" { // 67+1219 < 2500, +1219 > 2500
		t.Errorf("first pass %q", got)
	}
	takeAll(s, 0)
	if s.Stats(5).Deferred != 1 || s.Queued(5) != 2 {
		t.Errorf("stats %+v queued %d", s.Stats(5), s.Queued(5))
	}
	// 100 ns later (2405 ns queued), an unpaced packet passes whatever the
	// backlog, and one more paced frame fits under the bound.
	s.Enqueue(pkt{"ack", 60}, 7, false)
	s.Fill(100)
	if got := bursts(s); got != "q0:ack q5:d2" {
		t.Errorf("second pass %q", got)
	}
	takeAll(s, 100)
	// Once the NIC has drained, the waiting frame goes.
	s.Fill(10_000)
	if got := bursts(s); got != "q5:d3" {
		t.Errorf("third pass %q", got)
	}
}

func TestScheduler_lowerQueuesWaitBehindBlockedHigherOne(t *testing.T) {
	s := newTestScheduler(t, 8, 1000)
	s.Enqueue(pkt{"hi", 1500}, 6, true)
	s.Enqueue(pkt{"hi2", 1500}, 6, true)
	s.Enqueue(pkt{"lo", 100}, 1, true)
	s.Fill(0)
	if got := bursts(s); got != "q1:hi" {
		t.Errorf("bursts %q: a lower queue went ahead of a deferred higher one", got)
	}
}

func TestScheduler_refusedPacketsReturnInOrder(t *testing.T) {
	s := newTestScheduler(t, 8, 1_000_000)
	for _, n := range []string{"a", "b", "c"} {
		s.Enqueue(pkt{n, 100}, 4, true)
	}
	s.Fill(0)
	before := s.Backlog(0)
	s.Taken(3, 1, 0, func(pkt) { t.Error("dropped a returned packet") })
	if s.Queued(3) != 2 || s.Stats(3).Returned != 2 || s.Stats(3).Sent != 1 {
		t.Errorf("queued %d stats %+v", s.Queued(3), s.Stats(3))
	}
	if after := s.Backlog(0); after >= before {
		t.Errorf("backlog %d after returns, was %d", after, before)
	}
	s.Enqueue(pkt{"d", 100}, 4, true)
	s.Fill(0)
	if got := bursts(s); got != "q3:b,c,d" {
		t.Errorf("retry pass %q", got)
	}
}

func TestScheduler_fullQueueDropsAndCounts(t *testing.T) {
	s := newTestScheduler(t, 1, 1_000_000)
	for i := range 8 {
		if !s.Enqueue(pkt{fmt.Sprint(i), 60}, 5, true) {
			t.Fatalf("packet %d refused below capacity", i)
		}
	}
	if s.Enqueue(pkt{"x", 60}, 5, true) {
		t.Fatal("a full queue accepted a packet")
	}
	if s.Len() != 8 {
		t.Errorf("Len %d, want 8", s.Len())
	}
	if st := s.Stats(0); st.Dropped != 1 || st.MaxDepth != 8 || st.Enqueued != 8 {
		t.Errorf("stats %+v", st)
	}
	var freed []string
	s.Drain(func(p pkt) { freed = append(freed, p.name) })
	if len(freed) != 8 || s.Queued(0) != 0 {
		t.Errorf("drained %v", freed)
	}
}

func TestScheduler_returnWithoutRoomIsDroppedNotLost(t *testing.T) {
	s := newTestScheduler(t, 1, 1_000_000)
	for i := range 8 {
		s.Enqueue(pkt{fmt.Sprint(i), 60}, 5, true)
	}
	s.Fill(0) // takes 4 into the burst
	for i := range 4 {
		s.Enqueue(pkt{fmt.Sprint("n", i), 60}, 5, true)
	}
	var dropped []string
	s.Taken(0, 0, 0, func(p pkt) { dropped = append(dropped, p.name) })
	if len(dropped) != 4 || s.Stats(0).Dropped != 4 {
		t.Errorf("dropped %v stats %+v", dropped, s.Stats(0))
	}
}

func TestScheduler_configErrors(t *testing.T) {
	m, _ := NewMap(8)
	size := func(pkt) int { return 0 }
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Map: m, Capacity: 0, Burst: 1, LinkBps: 1, MaxNICQueue: 1}, "capacity"},
		{Config{Map: m, Capacity: 1, Burst: 0, LinkBps: 1, MaxNICQueue: 1}, "burst"},
		{Config{Map: m, Capacity: 1, Burst: 1, LinkBps: 0, MaxNICQueue: 1}, "link rate"},
		{Config{Map: m, Capacity: 1, Burst: 1, LinkBps: 1, MaxNICQueue: 0}, "max NIC queue"},
		{Config{Capacity: 1, Burst: 1, LinkBps: 1, MaxNICQueue: 1}, "no queue"},
	} {
		if _, err := NewScheduler(tc.cfg, size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestScheduler_steadyStateNoAllocs(t *testing.T) {
	s := newTestScheduler(t, 8, 1_000_000)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Enqueue(pkt{"a", 1500}, 2, true)
		s.Enqueue(pkt{"b", 60}, 7, false)
		s.Fill(now)
		takeAll(s, now)
		now += 10_000
	})
	if allocs != 0 {
		t.Errorf("a pass allocates %.1f times", allocs)
	}
}

// Done counts, by priority, the packets that left: those the NIC queue
// took, those dropped, and not those returned to wait for the next pass,
// though several priorities share one queue.
func TestScheduler_doneByPriority(t *testing.T) {
	s := newTestScheduler(t, 1, 1e9) // every priority on queue 0
	for i, prio := range []int{2, 5, 2, 5} {
		if !s.Enqueue(pkt{fmt.Sprint(i), 100}, prio, false) {
			t.Fatal("refused")
		}
	}
	s.Fill(0)
	s.Taken(0, 3, 0, func(pkt) {}) // 2, 5, 2 went; the last 5 returns
	if s.Done(2) != 2 || s.Done(5) != 1 {
		t.Fatalf("after 3 of 4 taken: done %d at 2, %d at 5; want 2, 1", s.Done(2), s.Done(5))
	}
	for range 8 { // the queue holds 8: one is still there, so one of these drops
		s.Enqueue(pkt{"x", 100}, 7, false)
	}
	if s.Done(7) != 1 {
		t.Fatalf("one dropped at Enqueue: done %d at 7, want 1", s.Done(7))
	}
	s.Fill(0)
	s.Taken(0, 1, 0, func(pkt) {})
	if s.Done(5) != 2 || s.Done(7) != 1 {
		t.Fatalf("the returned 5 taken: done %d at 5, %d at 7; want 2, 1", s.Done(5), s.Done(7))
	}
	s.Drain(func(pkt) {})
	if s.Done(7) != 8 || s.Done(-1) != s.Done(0) || s.Done(99) != s.Done(7) {
		t.Fatalf("after Drain: done %d at 7, want 8", s.Done(7))
	}
}
