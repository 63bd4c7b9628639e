package sched

import "testing"

func TestPacer_backlogInLinkTime(t *testing.T) {
	p := NewPacer(10_000_000_000, 5_000) // 10 Gbps, 5 µs
	// A 1500-byte frame plus 24 bytes of overhead is 1219.2 ns at 10G.
	if got := p.TxTime(1500); got != 1220 {
		t.Fatalf("TxTime(1500) = %d", got)
	}
	sent := 0
	for p.CanSend(0) {
		p.Sent(0, 1500)
		sent++
	}
	// 5 µs holds 4.1 frames; the fifth pushes it over.
	if sent != 5 || p.Backlog(0) != 5*1220 {
		t.Fatalf("sent %d, backlog %d", sent, p.Backlog(0))
	}
	if at := p.ReadyAt(0); at != 5*1220-5_000 {
		t.Fatalf("ReadyAt %d", at)
	}
	if !p.CanSend(p.ReadyAt(0)) || p.CanSend(p.ReadyAt(0)-1) {
		t.Fatal("ReadyAt is not the first time CanSend is true")
	}
	// After the link drains, the backlog is zero and sending restarts from now.
	p.Sent(1_000_000, 1500)
	if p.Backlog(1_000_000) != 1220 {
		t.Fatalf("backlog %d", p.Backlog(1_000_000))
	}
}

func TestPacer_unpacedAndExempt(t *testing.T) {
	p := NewPacer(0, 0)
	for range 100 {
		p.Sent(0, 9000)
	}
	if !p.CanSend(0) || p.Backlog(0) != 0 {
		t.Fatal("an unpaced link deferred")
	}
	if !Exempt(999) || Exempt(1000) {
		t.Fatal("ThrottleMinBytes boundary")
	}
}
