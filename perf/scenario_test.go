package perf

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress_plain(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, "rtt", 2)
	p.Step("homa-memif 100 B")
	p.Set(0.5) // not a terminal: nothing
	p.Step("homa-memif 1 KB")
	p.Done()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "rtt: [1/2] homa-memif 100 B" || !strings.HasPrefix(lines[2], "rtt: done in") {
		t.Errorf("progress wrote %q", b.String())
	}
	var nilP *Progress
	nilP.Step("x")
	nilP.Set(1)
	nilP.Done()
}
