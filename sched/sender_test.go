package sched

import (
	"fmt"
	"testing"
)

func TestSenderQueue_shortestFirst(t *testing.T) {
	q := NewSenderQueue(0, 4)
	a := &SendMsg{Remaining: 5000, Owner: "a"}
	b := &SendMsg{Remaining: 3000, Owner: "b"}
	c := &SendMsg{Remaining: 9000, Owner: "c"}
	q.Add(a)
	q.Add(b)
	q.Add(c)
	var order []any
	for q.Len() > 0 {
		m := q.Next()
		order = append(order, m.Owner)
		q.Sent(m, 1000)
		m.Remaining -= 1000
		if m.Remaining == 0 {
			q.Remove(m)
		} else {
			q.Update(m)
		}
	}
	// b drains first; then a (5000) before c; c last.
	got := fmt.Sprint(order)
	want := "[b b b a a a a a c c c c c c c c c]"
	if got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func TestSenderQueue_updateMovesBothWays(t *testing.T) {
	q := NewSenderQueue(0, 4)
	a := &SendMsg{Remaining: 100, Owner: "a"}
	b := &SendMsg{Remaining: 200, Owner: "b"}
	q.Add(a)
	q.Add(b)
	a.Remaining = 300 // new bytes were granted... a message can grow its queue key
	q.Update(a)
	if q.Next() != b {
		t.Fatal("Update did not move a behind b")
	}
}

func TestSenderQueue_fifoShare(t *testing.T) {
	q := NewSenderQueue(50, 4)
	old := &SendMsg{Remaining: 1 << 40, Owner: "old"}
	q.Add(old)
	oldBytes, total := 0, 0
	for i := range 200 {
		m := &SendMsg{Remaining: 14_240, Owner: i}
		q.Add(m)
		for m.Queued() {
			n := q.Next()
			q.Sent(n, 1424)
			total += 1424
			n.Remaining -= 1424
			if n == old {
				oldBytes += 1424
			}
			if n.Remaining == 0 {
				q.Remove(n)
			} else {
				q.Update(n)
			}
		}
	}
	share := float64(oldBytes) / float64(total)
	if share < 0.04 || share > 0.06 {
		t.Fatalf("oldest got %.3f of the link, want 0.05", share)
	}
}

func TestSenderQueue_allocatesNothing(t *testing.T) {
	q := NewSenderQueue(50, 8)
	ms := make([]*SendMsg, 8)
	for i := range ms {
		ms[i] = &SendMsg{Remaining: 1 << 40}
		q.Add(ms[i])
	}
	allocs := testing.AllocsPerRun(1000, func() {
		m := q.Next()
		q.Sent(m, 1424)
		m.Remaining -= 1424
		q.Update(m)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
