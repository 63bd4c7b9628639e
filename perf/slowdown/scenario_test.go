package slowdown

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report has a row per run and a plot per workload x load (the
// result's Plots), and writes slowdown.json beside them: what perf all
// reads back from the child's directory.
func TestReport_rowsAndPlots(t *testing.T) {
	run := func(tr string, p99 float64) *RunResult {
		return &RunResult{Transport: tr, Workload: "W3", Load: 0.5, RateBps: 40e6, Offered: 100, Done: 99, Failed: 1,
			ScheduleKept: true, AllP99: p99, Short: &Bucket{Count: 10, P50: 1.2, P99: p99, P99RTTUs: 80},
			Buckets: []Bucket{{MedianSize: 100, Count: 10, P50: 1.2, P99: p99}, {MedianSize: 10_000, Count: 5, P50: 2, P99: 2 * p99}}}
	}
	r := &Result{Method: "m", Clients: 2, RPCRate: 1500, RateBps: 200e6, Seconds: 3,
		Runs: []*RunResult{run("homa", 1.5), run("tcp", 9)}, Skipped: []string{"W5: no unloaded RTT"}}
	dir := t.TempDir()
	var out strings.Builder
	if err := r.Report().Write(&out, dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"slowdown: 2 clients -> 1 server", "short P99 µs", "tcp   W3   50%  40 Mb/s", "skipped: W5: no unloaded RTT",
		"results in " + dir + " (slowdown.json, slowdown-w3-50.png)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
	if len(r.Plots) != 1 || r.Plots[0] != "slowdown-w3-50.png" {
		t.Errorf("plots %v", r.Plots)
	}
	for _, f := range append(r.Plots, "slowdown.json") {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
