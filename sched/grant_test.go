package sched

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func newMsg(name string, length, unsched int) *GrantMsg {
	return &GrantMsg{Length: length, Granted: min(unsched, length), Owner: name}
}

// log renders grants as "a 60000@3" lines.
func grantLog(gs []Grant) string {
	var b strings.Builder
	for _, g := range gs {
		fifo := ""
		if g.FIFO {
			fifo = " fifo"
		}
		fmt.Fprintf(&b, "%s %d@%d%s\n", g.Msg.Owner, g.Offset, g.Priority, fifo)
	}
	return b.String()
}

func TestGrantScheduler_singleMessageUsesLowestLevel(t *testing.T) {
	s := NewGrantScheduler(DefaultGrantConfig(), 4)
	a := newMsg("a", 1_000_000, 40_000)
	s.Add(a)
	// One active message: window = 400,000/2 = 200,000 past Received (0).
	if got, want := grantLog(s.Schedule()), "a 200000@0\n"; got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
	if s.Outstanding() != 200_000 {
		t.Fatalf("outstanding %d", s.Outstanding())
	}
	a.Received = 10_000
	s.Update(a)
	if got, want := grantLog(s.Schedule()), "a 210000@0\n"; got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
}

// A grant grows in steps of at least Increment: raises below it wait
// until they add up, except one that grants the message's last bytes or
// changes its priority.
func TestGrantScheduler_raisesBelowIncrementWait(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.Window = 100_000
	s := NewGrantScheduler(cfg, 4)
	a := newMsg("a", 230_000, 40_000)
	s.Add(a)
	want := func(step, log string) {
		t.Helper()
		if got := grantLog(s.Schedule()); got != log {
			t.Fatalf("%s: grants:\n%swant:\n%s", step, got, log)
		}
	}
	want("first", "a 100000@0\n")
	for _, r := range []int{4_000, 9_999} { // raises of 4,000 and 9,999: too small
		a.Received = r
		s.Update(a)
		want(fmt.Sprintf("received %d", r), "")
	}
	a.Received = 10_000
	s.Update(a)
	want("received 10000", "a 110000@0\n")
	// A longer message arrives: a, still first, moves up a level (two
	// active messages use two levels), so even a small raise goes out.
	b := newMsg("b", 1_000_000, 10_000)
	s.Add(b)
	a.Received = 11_000
	s.Update(a)
	want("b arrives", "a 111000@1\nb 100000@0\n")
	a.Received = 12_000
	s.Update(a)
	want("same level", "")
	s.Remove(b) // back to the lowest level
	a.Received = 125_000
	s.Update(a)
	want("b gone", "a 225000@0\n")
	a.Received = 130_000 // a raise of 5,000: below the increment, but the last bytes
	s.Update(a)
	want("last bytes", "a 230000@0\n")
}

func TestGrantScheduler_srptRanksAndDynamicWindow(t *testing.T) {
	s := NewGrantScheduler(DefaultGrantConfig(), 4)
	long := newMsg("long", 900_000, 40_000)
	short := newMsg("short", 100_000, 40_000)
	s.Add(long)
	s.Add(short)
	// Two active: window 400,000/3 = 133,333. Short first at the higher of
	// the two lowest levels.
	want := "short 100000@1\nlong 133333@0\n"
	if got := grantLog(s.Schedule()); got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
	if s.Outstanding() != 100_000+133_333 {
		t.Fatalf("outstanding %d", s.Outstanding())
	}
}

// A fixed window (protocol.window) replaces the dynamic one; MaxIncoming
// still bounds the total.
func TestGrantScheduler_fixedWindow(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.Window = 50_000
	s := NewGrantScheduler(cfg, 4)
	long := newMsg("long", 900_000, 40_000)
	short := newMsg("short", 100_000, 40_000)
	s.Add(long)
	s.Add(short)
	if got, want := grantLog(s.Schedule()), "short 50000@1\nlong 50000@0\n"; got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
	short.Received = 30_000
	s.Update(short)
	if got, want := grantLog(s.Schedule()), "short 80000@1\n"; got != want {
		t.Fatalf("grants after 30,000 bytes:\n%swant:\n%s", got, want)
	}
}

func TestGrantScheduler_maxIncomingStopsLongerMessages(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxIncoming = 100_000
	cfg.FIFOFraction = 0
	s := NewGrantScheduler(cfg, 4)
	a := newMsg("a", 500_000, 10_000)
	b := newMsg("b", 600_000, 10_000)
	s.Add(a)
	s.Add(b)
	// Unscheduled bytes already count: 20,000 outstanding. Window 33,333.
	want := "a 33333@1\nb 33333@0\n"
	if got := grantLog(s.Schedule()); got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
	a.Received, b.Received = 33_333, 0
	s.Update(a)
	s.Update(b)
	// a may go to 66,666; only 100,000 − 33,333 = 66,667 room: a takes
	// 33,333, b is already at its window.
	want = "a 66666@1\n"
	if got := grantLog(s.Schedule()); got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
}

func TestGrantScheduler_overcommitLimitsActive(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxOvercommit = 2
	cfg.FIFOFraction = 0
	s := NewGrantScheduler(cfg, 4)
	for i, n := range []int{300_000, 200_000, 100_000} {
		s.Add(newMsg(fmt.Sprint("m", i), n, 0))
	}
	want := "m2 100000@1\nm1 133333@0\n"
	if got := grantLog(s.Schedule()); got != want {
		t.Fatalf("grants:\n%swant:\n%s", got, want)
	}
}

func TestGrantScheduler_priorityByRankWithManyActive(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxIncoming = 10_000_000
	cfg.FIFOFraction = 0
	s := NewGrantScheduler(cfg, 8)
	for i := range 6 {
		s.Add(newMsg(fmt.Sprint("m", i), 100_000*(i+1), 0))
	}
	var prios []int
	for _, g := range s.Schedule() {
		prios = append(prios, g.Priority)
	}
	if got, want := fmt.Sprint(prios), "[3 2 1 0 0 0]"; got != want {
		t.Fatalf("priorities %s, want %s", got, want)
	}
}

func TestGrantScheduler_fifoShareReachesOldest(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxOvercommit = 1
	s := NewGrantScheduler(cfg, 4)
	old := newMsg("old", 1_000_000, 0)
	s.Add(old)
	s.Schedule()
	fifoBytes, srptBytes := 0, 0
	// A stream of shorter messages keeps the old one out of the active
	// set; the FIFO share must still move it.
	for i := range 400 {
		m := newMsg(fmt.Sprint("s", i), 50_000, 0)
		s.Add(m)
		for m.Received < m.Length {
			for _, g := range s.Schedule() {
				if g.FIFO {
					fifoBytes += 50_000
					if g.Msg != old {
						t.Fatalf("FIFO grant to %v", g.Msg.Owner)
					}
				} else if g.Msg == m {
					srptBytes += g.Offset
				}
			}
			m.Received = m.Granted
			s.Update(m)
			old.Received = old.Granted
			s.Update(old)
		}
		s.Remove(m)
	}
	if fifoBytes == 0 {
		t.Fatal("the oldest message starved")
	}
	frac := float64(old.Granted-200_000) / float64(old.Granted-200_000+400*50_000)
	if frac < 0.03 || frac > 0.07 {
		t.Fatalf("FIFO share %.3f, want about 0.05 (fifo %d bytes)", frac, fifoBytes)
	}
}

// TestGrantScheduler_properties drives random messages and checks after
// every step: grants never raise outstanding above MaxIncoming, Granted ≤ Length, and the
// shortest grantable message has its full window unless MaxIncoming is
// exhausted or a FIFO grant is waiting for room.
func TestGrantScheduler_properties(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 1))
		cfg := DefaultGrantConfig()
		cfg.MaxIncoming = 50_000 + r.IntN(400_000)
		cfg.MaxOvercommit = 1 + r.IntN(8)
		s := NewGrantScheduler(cfg, 16)
		var live []*GrantMsg
		for step := range 2000 {
			switch {
			case len(live) < 12 && r.IntN(4) == 0:
				m := newMsg(fmt.Sprint(step), 1+r.IntN(2_000_000), r.IntN(60_000))
				if r.IntN(2) == 0 {
					m.Unsched = m.Granted
				}
				live = append(live, m)
				s.Add(m)
			case len(live) > 0:
				m := live[r.IntN(len(live))]
				if m.Received < m.Granted {
					m.Received += 1 + r.IntN(m.Granted-m.Received)
					s.Update(m)
				}
				if m.Received == m.Length {
					s.Remove(m)
					for i := range live {
						if live[i] == m {
							live = append(live[:i], live[i+1:]...)
							break
						}
					}
				}
			}
			_, n := s.active()
			var shortest *GrantMsg
			for _, m := range live {
				if m.Granted < m.Length && (shortest == nil || m.Remaining() < shortest.Remaining()) {
					shortest = m
				}
			}
			gs := s.Schedule()
			sum := 0
			for _, m := range live {
				if m.Granted > m.Length {
					t.Fatalf("seed %d: granted %d > length %d", seed, m.Granted, m.Length)
				}
				sum += max(m.Granted-m.Received, 0)
			}
			// Unscheduled bytes are not the scheduler's to limit; grants are.
			if sum != s.Outstanding() || len(gs) > 0 && s.incoming() > cfg.MaxIncoming {
				t.Fatalf("seed %d: outstanding %d (scheduler %d), max %d", seed, sum, s.Outstanding(), cfg.MaxIncoming)
			}
			// The shortest message is granted its window, less a raise
			// smaller than the increment, whenever that fits.
			fifoWaiting := s.fifoDue()
			window := cfg.MaxIncoming / (n + 1)
			step := min(cfg.Increment, window/2)
			if shortest != nil && !fifoWaiting && s.incoming() < cfg.MaxIncoming-step {
				want := min(shortest.Length, shortest.Received+window)
				if shortest.Granted < want-step || shortest.Granted < want && want == shortest.Length {
					t.Fatalf("seed %d step %d: shortest %v granted %d, want ≥ %d (grants %s) outstanding %d max %d n %d", seed, step, shortest.Owner, shortest.Granted, want, grantLog(gs), s.Outstanding(), cfg.MaxIncoming, n)
				}
			}
		}
	}
}

func TestGrantScheduler_steadyStateAllocatesNothing(t *testing.T) {
	s := NewGrantScheduler(DefaultGrantConfig(), 16)
	msgs := make([]*GrantMsg, 10)
	for i := range msgs {
		msgs[i] = newMsg("m", 100_000_000, 40_000)
		s.Add(msgs[i])
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		m := msgs[i%len(msgs)]
		i++
		m.Received = min(m.Received+1424, m.Granted)
		s.Update(m)
		s.Schedule()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per packet", allocs)
	}
}

// Removing messages leaves holes that later calls skip and compaction
// closes: thousands added and removed oldest first (a flood of requests
// that never finish, ended one by one) keep the SRPT order, the indexes
// and the count right, and a removal costs O(1) amortised
// (BenchmarkGrantScheduler_removeFromFlood).
func TestGrantScheduler_removeManyKeepsOrder(t *testing.T) {
	s := NewGrantScheduler(DefaultGrantConfig(), 16)
	var flood []*GrantMsg
	for i := range 10_000 {
		m := newMsg(fmt.Sprint(i), 1_000_000, 1424)
		m.Unsched = m.Granted
		flood = append(flood, m)
		s.Add(m)
	}
	short := newMsg("short", 50_000, 10_000)
	s.Add(short)
	for i, m := range flood[:9_000] {
		s.Remove(m)
		if i%1000 == 0 {
			s.Schedule()
		}
	}
	if s.Len() != 1001 {
		t.Fatalf("Len %d, want 1001", s.Len())
	}
	var prev *GrantMsg
	n := 0
	for i, m := range s.msgs {
		if m == nil {
			continue
		}
		n++
		if m.index != i+1 || prev != nil && s.less(m, prev) {
			t.Fatalf("entry %d: index %d, out of order", i, m.index)
		}
		prev = m
	}
	if n != 1001 || s.msgs[0] != short || 2*s.holes > len(s.msgs)+32 {
		t.Fatalf("%d messages, %d holes of %d, first %v", n, s.holes, len(s.msgs), s.msgs[0].Owner)
	}
	// The flood's unscheduled bytes, claimed and never sent, count
	// towards MaxIncoming only up to half of it: the short message is
	// granted its window.
	if want := DefaultGrantConfig().MaxIncoming / 9; short.Granted != want {
		t.Fatalf("the short message was granted %d, want its window %d", short.Granted, want)
	}
}

// BenchmarkGrantScheduler_removeFromFlood is the cost of adding a message
// and removing the oldest with 8,192 in the scheduler.
func BenchmarkGrantScheduler_removeFromFlood(b *testing.B) {
	s := NewGrantScheduler(DefaultGrantConfig(), 8192)
	ring := make([]*GrantMsg, 8192)
	for i := range ring {
		ring[i] = newMsg("m", 1_000_000, 1424)
		s.Add(ring[i])
	}
	b.ResetTimer()
	for i := range b.N {
		k := i % len(ring)
		s.Remove(ring[k])
		*ring[k] = GrantMsg{Length: 1_000_000, Granted: 1424, Owner: "m"}
		s.Add(ring[k])
	}
}
