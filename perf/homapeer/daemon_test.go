package homapeer

import "testing"

func TestParseLoopLine(t *testing.T) {
	p, gap, ok := parseLoopLine("loop: 264886 passes, longest gap between passes 5.787223ms")
	if !ok || p != 264886 || gap < 5787.2 || gap > 5787.3 {
		t.Errorf("got %d passes, %v µs, %v", p, gap, ok)
	}
	if _, _, ok := parseLoopLine("loop: stopped"); ok {
		t.Error("parsed a line without figures")
	}
}
