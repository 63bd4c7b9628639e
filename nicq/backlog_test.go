package nicq

import "testing"

func TestBacklog_linkTime(t *testing.T) {
	b := NewBacklog(10e9) // 0.8 ns per byte
	if got := b.WireTime(1500); got != (1500+24)*8/10 {
		t.Errorf("1500-byte frame: %d ns", got)
	}
	if got := b.WireTime(20); got != (60+24)*8/10 {
		t.Errorf("runt frame is padded to 60 bytes: %d ns", got)
	}
	b.Sent(1000, 1500)
	b.Sent(1000, 1500)
	if got := b.Queued(1000); got != 2*1219 {
		t.Errorf("two frames queued at once: %d ns", got)
	}
	if got := b.Queued(1000 + 1219); got != 1219 {
		t.Errorf("after one frame time: %d ns", got)
	}
	if b.Queued(1_000_000) != 0 {
		t.Error("backlog negative after idling")
	}
	b.Sent(1_000_000, 1500) // starts from now, not from the old busy time
	if got := b.Queued(1_000_000); got != 1219 {
		t.Errorf("after idle: %d ns", got)
	}
	if !b.Room(1_000_000, 1220) || b.Room(1_000_000, 1219) {
		t.Error("Room disagrees with Queued")
	}
}
