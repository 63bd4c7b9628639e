package nicq

import (
	"slices"
	"testing"
)

// devPkt is a test packet a device may hold: held is true until the
// device lets go of it.
type devPkt struct {
	name string
	held bool
}

func newTrackingScheduler(t *testing.T, inDevice int, maxHold int64) *Scheduler[*devPkt] {
	t.Helper()
	m, err := NewMap(8)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScheduler(Config{Map: m, Capacity: 16, Burst: 8, LinkBps: 10e9, MaxNICQueue: 1e9,
		TrackCompletions: true, MaxHold: maxHold, InDevice: inDevice},
		func(*devPkt) int { return 1000 })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// send enqueues ps at priority prio and has their queue take them all at now.
func send(s *Scheduler[*devPkt], prio int, now int64, ps ...*devPkt) {
	for _, p := range ps {
		p.held = true
		s.Enqueue(p, prio, false)
	}
	s.Fill(now)
	for q := range s.queues {
		s.Taken(q, len(s.Burst(q)), now, func(*devPkt) {})
	}
}

func isHeld(p *devPkt) bool { return p.held }

// A packet the queue took is done only once the device lets go of it,
// and of every packet its queue took before it: Done stays behind a
// packet still held although a later one was let go of.
func TestCompletions_doneFollowsTheDeviceInOrder(t *testing.T) {
	s := newTrackingScheduler(t, 0, 0)
	a, b, c := &devPkt{name: "a"}, &devPkt{name: "b"}, &devPkt{name: "c"}
	send(s, 3, 0, a, b, c)
	var released []string
	rel := func(p *devPkt) { released = append(released, p.name) }
	if n := s.Reap(1, isHeld, rel); n != 0 || s.Done(3) != 0 || s.InDevice() != 3 {
		t.Fatalf("all held: reaped %d, done %d, in device %d; want 0, 0, 3", n, s.Done(3), s.InDevice())
	}
	b.held = false // the device let go of b before a
	if s.Reap(2, isHeld, rel); s.Done(3) != 0 || len(released) != 0 {
		t.Fatalf("b let go of, a held: done %d, released %v; want 0, none", s.Done(3), released)
	}
	a.held = false
	if s.Reap(3, isHeld, rel); s.Done(3) != 2 || !slices.Equal(released, []string{"a", "b"}) {
		t.Fatalf("a and b let go of: done %d, released %v; want 2, [a b]", s.Done(3), released)
	}
	c.held = false
	s.Reap(4, isHeld, rel)
	q := s.Map().Queue(3)
	st := s.Stats(q)
	if s.Done(3) != 3 || s.InDevice() != 0 || st.Completed != 3 || st.InDevice != 0 || st.MaxIn != 3 || st.Late != 0 {
		t.Errorf("all let go of: done %d, in device %d, stats %+v", s.Done(3), s.InDevice(), st)
	}
}

// A packet the device holds past MaxHold counts as done (Late), so that
// later packets of its priority are not held back behind it for ever;
// its reference is released only once the device does let go of it.
func TestCompletions_heldPastMaxHoldCountsLate(t *testing.T) {
	s := newTrackingScheduler(t, 0, 1000)
	stuck, next := &devPkt{name: "stuck"}, &devPkt{name: "next"}
	send(s, 0, 0, stuck, next)
	next.held = false
	var released []string
	rel := func(p *devPkt) { released = append(released, p.name) }
	if s.Reap(999, isHeld, rel); s.Done(0) != 0 {
		t.Fatalf("before MaxHold: done %d, want 0", s.Done(0))
	}
	if s.Reap(1000, isHeld, rel); s.Done(0) != 2 || !slices.Equal(released, []string{"next"}) || s.InDevice() != 1 {
		t.Fatalf("at MaxHold: done %d, released %v, in device %d; want 2, [next], 1", s.Done(0), released, s.InDevice())
	}
	stuck.held = false
	s.Reap(1000+lateCheckEvery, isHeld, rel)
	st := s.Stats(s.Map().Queue(0))
	if !slices.Equal(released, []string{"next", "stuck"}) || s.InDevice() != 0 || st.Late != 1 || st.Completed != 1 {
		t.Errorf("late packet let go of: released %v, in device %d, stats %+v", released, s.InDevice(), st)
	}
}

// Packets that find the in-device FIFO full count as done when taken
// (Untracked) and their reference goes at the next Reap, whatever the
// device does; ReleaseInDevice lets go of everything at shutdown.
func TestCompletions_fullFIFOAndShutdown(t *testing.T) {
	s := newTrackingScheduler(t, 2, 0)
	ps := []*devPkt{{name: "a"}, {name: "b"}, {name: "c"}}
	send(s, 7, 0, ps...)
	if s.Done(7) != 1 {
		t.Fatalf("2 tracked of 3: done %d, want 1 (the untracked)", s.Done(7))
	}
	var released []string
	rel := func(p *devPkt) { released = append(released, p.name) }
	s.Reap(1, isHeld, rel)
	if !slices.Equal(released, []string{"c"}) || s.InDevice() != 2 {
		t.Fatalf("untracked released %v, in device %d; want [c], 2", released, s.InDevice())
	}
	s.ReleaseInDevice(rel)
	st := s.Stats(s.Map().Queue(7))
	if !slices.Equal(released, []string{"c", "a", "b"}) || s.Done(7) != 3 || s.InDevice() != 0 || st.Untracked != 1 {
		t.Errorf("shutdown: released %v, done %d, in device %d, stats %+v", released, s.Done(7), s.InDevice(), st)
	}
}

// Packets a queue refused return to the software queue untracked; a
// scheduler without TrackCompletions counts taken packets done at once
// and Reap does nothing.
func TestCompletions_refusedAndUntrackedScheduler(t *testing.T) {
	s := newTrackingScheduler(t, 0, 0)
	a, b := &devPkt{name: "a", held: true}, &devPkt{name: "b", held: true}
	s.Enqueue(a, 5, false)
	s.Enqueue(b, 5, false)
	s.Fill(0)
	q := s.Map().Queue(5)
	s.Taken(q, 1, 0, func(*devPkt) {})
	if s.InDevice() != 1 || s.Queued(q) != 1 {
		t.Fatalf("one taken, one refused: in device %d, queued %d", s.InDevice(), s.Queued(q))
	}

	m, _ := NewMap(8)
	plain, _ := NewScheduler(Config{Map: m, Capacity: 4, Burst: 4, LinkBps: 10e9, MaxNICQueue: 1e9}, func(*devPkt) int { return 1000 })
	plain.Enqueue(&devPkt{held: true}, 5, false)
	plain.Fill(0)
	plain.Taken(q, 1, 0, func(*devPkt) {})
	if plain.Done(5) != 1 || plain.Reap(1, isHeld, func(*devPkt) { t.Error("released without tracking") }) != 0 {
		t.Errorf("without tracking: done %d, want 1 at Taken", plain.Done(5))
	}
}

// Taking and reaping packets costs no allocation.
func TestCompletions_noAllocations(t *testing.T) {
	s := newTrackingScheduler(t, 0, 0)
	ps := []*devPkt{{}, {}, {}, {}}
	now := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		now++
		send(s, 2, now, ps...)
		for _, p := range ps {
			p.held = false
		}
		s.Reap(now, isHeld, func(*devPkt) {})
	})
	if allocs != 0 || s.InDevice() != 0 {
		t.Errorf("%v allocations per send and reap, %d left in device", allocs, s.InDevice())
	}
}
