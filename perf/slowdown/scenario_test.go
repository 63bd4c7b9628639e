package slowdown

import (
	"strings"
	"testing"
)

// The report takes slowdown's whole table from its log, however many
// runs it has, without the progress lines before it or the plots' files.
func TestSlowdownTable(t *testing.T) {
	var log strings.Builder
	log.WriteString("homa W1 unloaded: ...\n  homa W1 50%: offered ...\n")
	log.WriteString("slowdown: 2 clients -> 1 server, bottleneck per workload\ntx W load\n")
	for range 20 {
		log.WriteString("homa W1 50% ...\n")
	}
	log.WriteString("late: sends ...\nplot: /x/slowdown-w1-50.png\nplot: /x/slowdown-w1-80.png\n")
	got := slowdownTable(log.String())
	if !strings.HasPrefix(got, "slowdown: 2 clients") || strings.Contains(got, "plot:") || strings.Contains(got, "unloaded") {
		t.Errorf("table:\n%s", got)
	}
	if n := strings.Count(got, "\n"); n != 23 {
		t.Errorf("%d lines, want 23:\n%s", n, got)
	}
}
