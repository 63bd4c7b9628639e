package memnet

import (
	"fmt"
	"strings"
	"testing"
)

func TestAt_orderByTimeThenScheduling(t *testing.T) {
	n := New(Config{})
	var log []string
	mark := func(s string) func() {
		return func() { log = append(log, fmt.Sprintf("%s@%d", s, n.Now())) }
	}
	n.At(300, mark("c"))
	n.At(100, mark("a"))
	n.At(300, mark("d"))
	n.At(200, mark("b"))
	n.At(100, func() {
		log = append(log, fmt.Sprintf("a2@%d", n.Now()))
		n.After(50, mark("nested"))
		n.At(0, mark("past")) // in the past: runs now, after what is already due
	})
	if !n.RunUntilIdle(1 << 40) {
		t.Fatal("RunUntilIdle reported not idle")
	}
	want := "a@100 a2@100 past@100 nested@150 b@200 c@300 d@300"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	if n.Now() != 300 {
		t.Errorf("Now = %d after idle, want 300 (last event)", n.Now())
	}
}

func TestRunUntil_stopsAtTimeAndSetsClock(t *testing.T) {
	n := New(Config{})
	ran := 0
	n.At(10, func() { ran++ })
	n.At(20, func() { ran++ })
	n.At(21, func() { ran++ })
	n.RunUntil(20)
	if ran != 2 || n.Now() != 20 || n.Pending() != 1 {
		t.Errorf("after RunUntil(20): ran %d, now %d, pending %d; want 2, 20, 1", ran, n.Now(), n.Pending())
	}
	n.RunUntil(1000)
	if ran != 3 || n.Now() != 1000 {
		t.Errorf("after RunUntil(1000): ran %d, now %d; want 3, 1000", ran, n.Now())
	}
	n.RunUntil(5) // never moves backwards
	if n.Now() != 1000 {
		t.Errorf("RunUntil(5) moved the clock back to %d", n.Now())
	}
}

func TestRunUntilIdle_limit(t *testing.T) {
	n := New(Config{})
	var tick func()
	ticks := 0
	tick = func() { ticks++; n.After(1000, tick) } // never idle
	n.At(0, tick)
	if n.RunUntilIdle(10_500) {
		t.Fatal("RunUntilIdle reported idle with a periodic timer")
	}
	if ticks != 11 || n.Now() != 10_500 {
		t.Errorf("ticks %d, now %d; want 11, 10500", ticks, n.Now())
	}
}

func TestStep_oneEventAtATime(t *testing.T) {
	n := New(Config{})
	if n.Step() {
		t.Fatal("Step on an empty network returned true")
	}
	ran := 0
	n.After(7, func() { ran++ })
	n.After(9, func() { ran++ })
	if !n.Step() || ran != 1 || n.Now() != 7 {
		t.Errorf("first Step: ran %d now %d, want 1, 7", ran, n.Now())
	}
	if !n.Step() || ran != 2 || n.Now() != 9 || n.Step() {
		t.Errorf("second Step: ran %d now %d, want 2, 9, then empty", ran, n.Now())
	}
}

func TestEventHeap_manyRandom(t *testing.T) {
	var h eventHeap
	x := uint64(12345)
	seq := uint64(0)
	push := func(n int) {
		for range n {
			x = x*6364136223846793005 + 1442695040888963407
			seq++
			h.push(event{t: int64(x >> 54), seq: seq, kind: eventKind(seq % 7)})
		}
	}
	push(5000)
	prev := hkey{t: -1}
	popped := 0
	for h.Len() > 0 {
		e := h.pop()
		k := hkey{t: e.t, seq: e.seq}
		if k.before(&prev) || e.kind != eventKind(e.seq%7) {
			t.Fatalf("popped (%d,%d,%d) after (%d,%d)", e.t, e.seq, e.kind, prev.t, prev.seq)
		}
		prev = k
		if popped++; popped == 2500 { // pushes between pops reuse freed slots
			push(1000)
			prev = hkey{t: -1}
		}
	}
	if popped != 6000 || len(h.pool) > 5000 {
		t.Fatalf("popped %d, pool of %d slots", popped, len(h.pool))
	}
}

func TestStep_reentryPanics(t *testing.T) {
	n := New(Config{})
	var recovered any
	n.At(5, func() {
		defer func() { recovered = recover() }()
		n.RunUntil(10)
	})
	n.At(6, func() {})
	n.RunUntil(100)
	if recovered == nil {
		t.Error("RunUntil from inside a callback did not panic")
	}
	if n.Now() != 100 || n.Pending() != 0 {
		t.Errorf("after the panic was recovered: now %d, pending %d", n.Now(), n.Pending())
	}
}
