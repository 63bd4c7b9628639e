package sched

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// twoShards are the grant schedulers of a port's two shards, sharing a
// GrantShare unless alone.
func twoShards(cfg GrantConfig, alone bool) (*GrantScheduler, *GrantScheduler) {
	a, b := NewGrantScheduler(cfg, 8), NewGrantScheduler(cfg, 8)
	if !alone {
		g := NewGrantShare(2)
		a.Share(g, 0)
		b.Share(g, 1)
	}
	return a, b
}

// SRPT over the port: whenever a shard grants, it grants only messages
// among the port's MaxOvercommit shortest grantable ones at that moment,
// whichever shard holds them, and a shorter one at a priority no lower.
// Alone, each shard grants its own shortest, past the port's.
func TestGrantShare_srptOverThePort(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxOvercommit, cfg.MaxSchedPrio, cfg.FIFOFraction = 2, 3, 0
	lengths := []int{100_000, 300_000, 200_000, 400_000, 150_000, 900_000, 120_000, 250_000}
	for _, alone := range []bool{false, true} {
		a, b := twoShards(cfg, alone)
		shards := []*GrantScheduler{a, b}
		var all []*GrantMsg
		for i, l := range lengths {
			m := newMsg(string(rune('a'+i)), l, 0)
			shards[i%2].Add(m)
			all = append(all, m)
		}
		violations := 0
		for round := range 12 {
			for si, s := range shards {
				// The port's MaxOvercommit shortest grantable messages now.
				var grantable []*GrantMsg
				for _, m := range all {
					if m.Granted < m.Length {
						grantable = append(grantable, m)
					}
				}
				slices.SortStableFunc(grantable, func(x, y *GrantMsg) int { return x.Remaining() - y.Remaining() })
				top := grantable[:min(len(grantable), cfg.MaxOvercommit)]
				gs := s.Schedule()
				for _, g := range gs {
					if !slices.Contains(top, g.Msg) {
						violations++
						if !alone {
							t.Errorf("round %d, shard %d granted %s (%d bytes left), not among the port's %d shortest", round,
								si, g.Msg.Owner, g.Msg.Remaining(), cfg.MaxOvercommit)
						}
					}
					for _, h := range gs {
						if g.Msg.Remaining() < h.Msg.Remaining() && g.Priority < h.Priority {
							t.Errorf("round %d: %s (%d left) at %d below %s (%d left) at %d", round, g.Msg.Owner,
								g.Msg.Remaining(), g.Priority, h.Msg.Owner, h.Msg.Remaining(), h.Priority)
						}
					}
				}
			}
			for i, m := range all { // bytes arrive as granted
				m.Received = min(m.Length, m.Received+min(m.Granted-m.Received, 50_000))
				shards[i%2].Update(m)
				if m.Received == m.Length {
					shards[i%2].Remove(m)
				}
			}
		}
		if alone && violations == 0 {
			t.Error("two shards alone kept to the port's shortest: the test shows nothing")
		}
	}
}

// MaxIncoming bounds the port's granted, unreceived bytes, not each
// shard's.
func TestGrantShare_maxIncomingOverThePort(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxIncoming, cfg.Increment, cfg.FIFOFraction = 100_000, 1, 0
	a, b := twoShards(cfg, false)
	x, y := newMsg("x", 1_000_000, 0), newMsg("y", 2_000_000, 0)
	a.Add(x)
	b.Add(y)
	for range 3 {
		a.Schedule()
		b.Schedule()
	}
	if sum := a.Outstanding() + b.Outstanding(); sum > cfg.MaxIncoming || sum == 0 {
		t.Errorf("the port's outstanding bytes: %d + %d, want 1..%d", a.Outstanding(), b.Outstanding(), cfg.MaxIncoming)
	}
	// As x's bytes arrive, room opens for the port: y gets it only
	// within the bound.
	for range 5 {
		x.Received = x.Granted
		a.Update(x)
		a.Schedule()
		b.Schedule()
		if sum := a.Outstanding() + b.Outstanding(); sum > cfg.MaxIncoming {
			t.Fatalf("the port's outstanding bytes: %d", sum)
		}
	}
}

// The pacers of a port's shards pace one link: what one hands the NIC
// delays the others, and sends from many goroutines add up exactly.
func TestLinkClock_sharedByPacers(t *testing.T) {
	var c LinkClock
	p, q := NewPacer(10_000_000_000, 2_000), NewPacer(10_000_000_000, 2_000)
	p.Share(&c)
	q.Share(&c)
	now := int64(1_000_000)
	for p.Backlog(now) <= 2_000 {
		p.Sent(now, 1500)
	}
	if q.CanSend(now) {
		t.Fatalf("q may send with the link %d ns behind: it does not see p's sends", q.Backlog(now))
	}
	var d LinkClock
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewPacer(10_000_000_000, 2_000)
			r.Share(&d)
			for range 10_000 {
				r.Sent(0, 1226) // (1226+24)*8 bits at 10 Gb/s: 1,000 ns
			}
		}()
	}
	wg.Wait()
	if got := d.idleAt.Load(); got != 40_000*1_000 {
		t.Errorf("the clock after 40,000 sends of 1,000 ns: %d ns", got)
	}
}

// Unscheduled bytes count towards MaxIncoming only up to MaxIncoming/2
// over the port, not over each shard: two shards flooded with claims
// leave room for a third message's grants, as one scheduler would (with
// a cap per shard, the two halves filled the port and no shard could
// grant again).
func TestGrantShare_unscheduledCappedOverThePort(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxIncoming, cfg.Increment, cfg.FIFOFraction, cfg.MaxOvercommit = 400_000, 1, 0, 8
	a, b := twoShards(cfg, false)
	for range 4 { // claims never sent: 240,000 unscheduled bytes a shard
		m := newMsg("fa", 1_000_000, 60_000)
		m.Unsched = 60_000
		a.Add(m)
		n := newMsg("fb", 1_000_000, 60_000)
		n.Unsched = 60_000
		b.Add(n)
	}
	short := newMsg("short", 100_000, 10_000)
	short.Unsched = 10_000
	b.Add(short)
	a.Schedule()
	b.Schedule()
	if short.Granted <= short.Unsched {
		t.Errorf("the short message got no grant: the port's unscheduled claims (480,000) filled MaxIncoming twice over")
	}
}

// A suspended message is out of the grants, over the port: its place
// among the MaxOvercommit and its outstanding bytes go to a message of
// either shard, it is granted nothing (SRPT or FIFO), Schedule does not
// look at it, and once resumed it is granted again at its rank.
func TestGrantScheduler_suspendedOutOfTheGrants(t *testing.T) {
	cfg := DefaultGrantConfig()
	cfg.MaxOvercommit, cfg.MaxIncoming, cfg.Increment, cfg.Window, cfg.FIFOFraction = 1, 100_000, 1, 60_000, 50
	for _, shared := range []bool{false, true} {
		a, b := twoShards(cfg, !shared)
		if !shared {
			b = a // one scheduler holds both
		}
		x, y := newMsg("x", 200_000, 0), newMsg("y", 900_000, 0)
		a.Add(x)
		b.Add(y)
		want := func(step string, s *GrantScheduler, log string) {
			t.Helper()
			if got := grantLog(s.Schedule()); got != log {
				t.Fatalf("shared %v, %s: grants:\n%swant:\n%s", shared, step, got, log)
			}
		}
		want("x first", a, "x 60000@0\n")
		want("y waits", b, "")
		a.Suspend(x)
		if !x.Added() || !x.Suspended() || a.Len() != map[bool]int{false: 1, true: 0}[shared] || a.Outstanding() != 0 {
			t.Fatalf("shared %v: suspended x: added %v, suspended %v, scheduler holds %d, outstanding %d",
				shared, x.Added(), x.Suspended(), a.Len(), a.Outstanding())
		}
		want("y takes x's place and bytes", b, "y 60000@0\n")
		for range 40 { // SRPT grants enough for FIFO grants to fall due: none to x
			y.Received = y.Granted
			b.Update(y)
			x.Received = min(x.Received+1, x.Granted) // a byte now and then: no grant
			a.Update(x)
			for _, g := range append(a.Schedule(), b.Schedule()...) {
				if g.Msg == x {
					t.Fatalf("shared %v: suspended x granted %d (fifo %v)", shared, g.Offset, g.FIFO)
				}
			}
		}
		x.Received = x.Granted
		a.Resume(x)
		if x.Suspended() || !x.Added() {
			t.Fatalf("shared %v: resumed x: suspended %v, added %v", shared, x.Suspended(), x.Added())
		}
		y.Received = y.Granted
		b.Update(y)
		if got := grantLog(a.Schedule()); !strings.HasPrefix(got, "x 120000@0") {
			t.Fatalf("shared %v: resumed x, the shorter, not granted first:\n%s", shared, got)
		}
		a.Suspend(x)
		a.Remove(x) // ends while suspended
		if x.Added() || x.Suspended() {
			t.Fatalf("shared %v: x removed while suspended: added %v, suspended %v", shared, x.Added(), x.Suspended())
		}
	}
}
