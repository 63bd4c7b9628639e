package cluster

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every workload's short-message goal row: up to 1 KB where it has such
// messages, its smallest bucket where not (W5), against its own goal.
func TestGoals_shortRowPerWorkload(t *testing.T) {
	r1 := &Result{Workload: "W1", Load: 0.8, Variant: Homa, Short: &Bucket{P99: 2.05}, Buckets: []Bucket{{MinSize: 8, MaxSize: 9, P99: 1.7}}}
	r5 := &Result{Workload: "W5", Load: 0.8, Variant: Homa, Buckets: []Bucket{{MinSize: 1430, MaxSize: 1430, Count: 23, P99: 1.55}, {MinSize: 2860, MaxSize: 2860, P99: 9}}}
	g := Goals([]*Result{r1, r5})
	if len(g) != 2 {
		t.Fatalf("%d goal rows: %+v", len(g), g)
	}
	if g[0].Met || g[0].Want != "<= 2.0" || g[0].Got != "2.05" || !strings.Contains(g[0].What, "<= 1 KB") {
		t.Errorf("W1 row %+v: want 2.05 against <= 2.0, not met", g[0])
	}
	if !g[1].Met || g[1].Want != "<= 1.6" || g[1].Got != "1.55" || !strings.Contains(g[1].What, "1430-1430 B, n=23") {
		t.Errorf("W5 row %+v: want its smallest bucket, 1.55 against <= 1.6, met", g[1])
	}
}

// The backlog's growth is its slope over the period's second half as a
// share of the offered rate: a backlog rising by a tenth of what is
// offered gives 0.1 whatever the first half did.
func TestGrowth_slopeOfSecondHalf(t *testing.T) {
	var pts []BacklogPoint
	rate := 1e3 // bytes per ns
	for ms := 1.0; ms <= 100; ms++ {
		b := 5e9 * math.Min(ms, 50) / 50 // the first half fills
		if ms > 50 {
			b += 0.1 * rate * (ms - 50) * 1e6
		}
		pts = append(pts, BacklogPoint{Ms: ms, Bytes: int64(b)})
	}
	if g, ok := growth(pts, 100, rate); !ok || math.Abs(g-0.1) > 1e-6 {
		t.Fatalf("growth %v %v, want 0.1", g, ok)
	}
	if _, ok := growth(pts[:2], 100, rate); ok {
		t.Fatal("two points: want no growth (cannot tell)")
	}
}

// The runs' report: on the terminal the runs and the goals; in
// cluster.md also the paper's figures and every run's buckets; the
// plots a workload x load has data for, and the load plot per workload
// with two loads or more.
func TestResults_report(t *testing.T) {
	run := func(v Variant, load, p99 float64) *Result {
		return &Result{Variant: v, Workload: "W4", Load: load, Hosts: 16, Offered: 100, Measured: 90, OfferedGbps: 8 * load, Carried: 1,
			KeepsUp: v == Homa, Short: &Bucket{Count: 50, P50: 1.1, P99: p99}, Cutoffs: [8]uint32{7: 1000, 6: 10_000},
			Buckets: []Bucket{{MinSize: 1, MaxSize: 1000, Count: 50, P50: 1.1, P99: p99}, {MinSize: 1001, MaxSize: 1e6, Count: 40, P50: 2, P99: 4}},
			Backlog: []BacklogPoint{{Ms: 1, Bytes: 1000}, {Ms: 2, Bytes: 1200}}}
	}
	rs := Results{run(Homa, 0.8, 1.5), run(Basic, 0.8, 9), run(Homa, 0.9, 2), run(Basic, 0.9, 12)}
	dir := t.TempDir()
	var out strings.Builder
	if err := rs.Report().Write(&out, dir); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "Runs\nworkload") || !strings.Contains(text, "Goals\ngoal") || strings.Contains(text, "Slowdown by size") ||
		!strings.Contains(text, "(cluster.json, cluster.md, cluster-W4-80.png, cluster-W4-80-backlog.png, cluster-W4-90.png, cluster-W4-90-backlog.png, cluster-W4-load.png)") {
		t.Errorf("text:\n%s", text)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "cluster.md"))
	for _, want := range []string{"# perf cluster", "**Runs**", "**Goals**", "| W4 at 80%: homa's P99 slowdown of messages <= 1 KB | <= 1.8 | 1.50 | yes |",
		"**Beside the Homa paper**", "**Slowdown by size (P50 / P99): W4 at 90%, basic (90 messages measured of 100)**", "![cluster](cluster-W4-load.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("cluster.md lacks %q:\n%s", want, md)
		}
	}
}

// The rows beside DCTCP and of the AI mix: the ratio of DCTCP's short P99
// to homa's against 4 on the AI mix and W4, homa's all-reduce steps
// against 1.1 of ideal, the AI mix at 90% kept up with its P99 within 2.5.
func TestGoals_besideDCTCPAndTheAIMix(t *testing.T) {
	rs := []*Result{
		{Workload: "AI", Load: 0.8, Variant: Homa, Short: &Bucket{P99: 2.0}, AllReduce: &Collective{Ops: 3, Done: 3, Mean: 1.05}},
		{Workload: "AI", Load: 0.8, Variant: DCTCP, Simulator: "ns-3", Short: &Bucket{P99: 9.0}},
		{Workload: "W4", Load: 0.8, Variant: Homa, Short: &Bucket{P99: 1.5}},
		{Workload: "W4", Load: 0.8, Variant: DCTCP, Simulator: "ns-3", Short: &Bucket{P99: 4.5}},
		{Workload: "AI", Load: 0.9, Variant: Homa, Short: &Bucket{P99: 2.6}, KeepsUp: true},
	}
	want := map[string]struct {
		got string
		met bool
	}{
		"AI at 80%: DCTCP's (ns-3) P99 slowdown of messages <= 1 KB over homa's":            {"4.50 (9.00 / 2.00)", true},
		"W4 at 80%: DCTCP's (ns-3) P99 slowdown of messages <= 1 KB over homa's":            {"3.00 (4.50 / 1.50)", false},
		"AI at 80%: homa's all-reduce step time over its ideal (mean over the all-reduces)": {"1.05 (3 all-reduces)", true},
		"AI at 90%: homa keeps up, its P99 slowdown of messages <= 1 KB within 2.5":         {"yes (backlog growth +0.000), 2.60", false},
	}
	found := 0
	for _, g := range Goals(rs) {
		w, ok := want[g.What]
		if !ok {
			continue
		}
		found++
		if g.Got != w.got || g.Met != w.met {
			t.Errorf("%s: got %q met %v, want %q met %v", g.What, g.Got, g.Met, w.got, w.met)
		}
	}
	if found != len(want) {
		t.Errorf("%d of the %d rows found in %+v", found, len(want), Goals(rs))
	}
	if c := Collectives(rs); len(c.Rows) != 1 || c.Rows[0][2] != "homa" || c.Rows[0][3] != "3 of 3" {
		t.Errorf("collectives table %+v: want homa's AI row", c.Rows)
	}
}

// Without a baseline run at 90% there is no "where the baselines do not"
// row (it said "the baselines keep up too" of runs that were not made).
func TestGoals_noBaselineRowWithoutBaselines(t *testing.T) {
	rs := []*Result{{Workload: "W1", Load: 0.9, Variant: Homa, KeepsUp: true}}
	for _, g := range Goals(rs) {
		if strings.Contains(g.What, "baselines") {
			t.Errorf("row %+v without a baseline run", g)
		}
	}
	rs = append(rs, &Result{Workload: "W1", Load: 0.9, Variant: Basic})
	if g := Goals(rs); len(g) != 1 || !g[0].Met || !strings.Contains(g[0].Got, "behind: basic") {
		t.Errorf("with basic behind: %+v", g)
	}
}

// ns-3's table: a column per ns-3 run, a row per setting, "-" where a
// run printed none; the trace's path left out.
func TestNS3Table_columnPerRun(t *testing.T) {
	rs := []*Result{
		{Workload: "W4", Load: 0.8, Variant: Homa},
		{Workload: "W4", Load: 0.8, Variant: DCTCP, Simulator: "ns-3", NS3: [][2]string{{"trace", "/tmp/x"}, {"transport", "dctcp"}, {"mark_packets", "65"}}},
		{Workload: "W4", Load: 0.8, Variant: TCP, Simulator: "ns-3", NS3: [][2]string{{"transport", "tcp"}, {"drops", "3"}}},
	}
	tb := ns3Table(rs)
	want := [][]string{{"transport", "dctcp", "tcp"}, {"mark_packets", "65", "-"}, {"drops", "-", "3"}}
	if strings.Join(tb.Header, ",") != "setting,W4 80% dctcp,W4 80% tcp" || len(tb.Rows) != len(want) {
		t.Fatalf("table %v %v", tb.Header, tb.Rows)
	}
	for i, w := range want {
		if strings.Join(tb.Rows[i], ",") != strings.Join(w, ",") {
			t.Errorf("row %d %v, want %v", i, tb.Rows[i], w)
		}
	}
	if len(ns3Table(rs[:1]).Header) != 0 {
		t.Error("a table without ns-3 runs")
	}
}
