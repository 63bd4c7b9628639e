package starts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
)

// startRun is a completed start whose first RPCs take first µs each and
// whose steady and large P50s are steady and large.
func startRun(link string, start int, first, steady, large float64) StartRun {
	x := StartRun{Link: link, Start: start, Steady: perf.RTTPoint{Size: 100, P50Us: steady}, Large: perf.RTTPoint{Size: 1_000_000, P50Us: large},
		Phases: []PhaseFaults{{Phase: "first", DaemonMinor: 7}, {Phase: "steady", DaemonMinor: 2},
			{Phase: "large", DaemonMinor: 3, LoopInvoluntary: 40, LoopVoluntary: 6}},
		DaemonRegions: procstat.RegionMem{Mappings: 2, PageKB: 2048, Hugetlb: true}}
	for k := range 4 {
		x.First = append(x.First, FirstRPC{Us: first + float64(k%2)}) // median first + 0.5
	}
	return x
}

func startsResult(runs ...StartRun) *Result {
	r := &Result{Starts: 3, FirstRPCs: 4, SmallSize: 100, LargeSize: 1_000_000,
		SpreadGoal: StartsSpreadGoal, WarmupGoal: StartsWarmupGoal, Runs: runs}
	r.summarize()
	return r
}

// The spread is max/min − 1 and (max − min)/median of the large P50s; a
// start's warm-up ratio is the median of its first RPCs over its steady
// P50; each goal has a verdict per link.
func TestStartsResult_summarize(t *testing.T) {
	r := startsResult(
		startRun("ring", 1, 9.5, 5, 400), startRun("memif", 1, 9.5, 10, 800),
		startRun("ring", 2, 5.5, 5, 440), startRun("memif", 2, 10.5, 10, 1400),
		startRun("ring", 3, 6.5, 5, 420), startRun("memif", 3, 11.5, 10, 820),
	)
	if len(r.Links) != 2 || r.Links[0].Link != "ring" || r.Links[1].Link != "memif" {
		t.Fatalf("links %+v", r.Links)
	}
	ring, memif := r.Links[0], r.Links[1]
	if ring.Starts != 3 || ring.LargeP50MinUs != 400 || ring.LargeP50MedianUs != 420 || ring.LargeP50MaxUs != 440 ||
		!perftest.Near(ring.SpreadMaxMin, 0.1) || !perftest.Near(ring.SpreadOverMedian, 40.0/420) {
		t.Errorf("ring %+v", ring)
	}
	if !perftest.Near(r.Runs[0].FirstP50Us, 10) || !perftest.Near(r.Runs[0].WarmupRatio, 2) || !perftest.Near(ring.WarmupMax, 2) || !perftest.Near(ring.WarmupMedian, 1.4) {
		t.Errorf("ring warm-up: run %+v, link %+v", r.Runs[0], ring)
	}
	if !perftest.Near(memif.SpreadMaxMin, 0.75) || !perftest.Near(memif.WarmupMax, 1.2) || memif.SteadyP50Us != 10 {
		t.Errorf("memif %+v", memif)
	}
	var got []string
	for _, g := range r.Goals {
		got = append(got, g.Goal+" "+g.Link+" "+map[bool]string{true: "pass", false: "fail"}[g.Pass])
	}
	want := "no bimodal starts ring pass, no warm-up penalty ring fail, no bimodal starts memif fail, no warm-up penalty memif pass"
	if strings.Join(got, ", ") != want {
		t.Errorf("goals %q, want %q", strings.Join(got, ", "), want)
	}
	if r.Pass() {
		t.Error("Pass with two goals failed")
	}
}

// A failed start fails both goals of its link, with the reason, and is
// not counted in the figures; one start cannot show a spread.
func TestStartsResult_failedAndSingleStarts(t *testing.T) {
	r := startsResult(startRun("ring", 1, 4.5, 5, 400), StartRun{Link: "ring", Start: 2, Error: "the daemon exited"},
		startRun("memif", 1, 4.5, 5, 800))
	ring, memif := r.Links[0], r.Links[1]
	if ring.Starts != 1 || ring.Failed != 1 || ring.LargeP50MaxUs != 400 {
		t.Errorf("ring %+v", ring)
	}
	for _, g := range r.Goals {
		switch {
		case g.Link == "ring" && (g.Pass || !strings.Contains(g.Why, "1 of 2 starts failed")):
			t.Errorf("ring goal %+v", g)
		case g.Link == "memif" && g.Goal == goalBimodal && (g.Pass || g.Why != "a spread needs two starts"):
			t.Errorf("memif spread goal %+v", g)
		case g.Link == "memif" && g.Goal == goalWarmup && !g.Pass:
			t.Errorf("memif warm-up goal %+v", g)
		}
	}
	if memif.Starts != 1 || memif.Failed != 0 {
		t.Errorf("memif %+v", memif)
	}
	var b strings.Builder
	r.Report().Text(&b)
	if !strings.Contains(b.String(), "start 2 on ring failed: the daemon exited") {
		t.Errorf("print:\n%s", b.String())
	}
}

func TestStartsResult_report(t *testing.T) {
	dir := t.TempDir()
	r := startsResult(startRun("ring", 1, 9.5, 5, 400), startRun("ring", 2, 5.5, 5, 440))
	r.Method, r.Distortions, r.Smoke = "m", "d", true
	imgs, err := r.Report().WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.md")
	if err := perf.WriteReport(path, "report", nil, []perf.Section{r.Report().Section(imgs)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{
		"## " + Title,
		"| no bimodal starts | ring | max/min − 1 of the 1 MB P50s of 2 starts | 10.0 % | ≤ 15.0 % | pass (smoke) |",
		"| no warm-up penalty | ring | the worst start's P50 of its first 4 100 B RPCs over its steady P50 | 2.00 | ≤ 1.50 | FAIL (smoke) |",
		"| ring | 2 | 400.0 | 420.0 | 440.0 | 10.0 % | 9.5 % | 1.60 | 2.00 | 5.0 | 8.0 |",
		"| 1 | ring | 0 | 0 | 10.0 | 5.0 | 2.00 | 400.0 | 0.0 | 7/2/3 | 40/6 | 2 MB |",
		"![starts](starts-first.png)", "![starts](starts-large.png)", "Smoke run: two starts on the ring link", "**Method.** m"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range append(imgs, "starts.json") {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestStartsConfigFor(t *testing.T) {
	full, smoke := ConfigFor(false), ConfigFor(true)
	if full.Starts != 10 || full.FirstRPCs != 100 || full.SmallSize != 100 || full.LargeSize != 1_000_000 || len(full.Links) != 2 {
		t.Errorf("full %+v", full)
	}
	if !smoke.Smoke || smoke.Starts != 2 || smoke.FirstRPCs != 100 || Steps(smoke) != 8 {
		t.Errorf("smoke %+v, %d steps", smoke, Steps(smoke))
	}
}

// TestStarts_smoke runs starts --smoke end to end (two fresh daemons on
// the ring link). It measures nothing: it checks that every phase
// produced its figures and its evidence.
func TestStarts_smoke(t *testing.T) {
	bin := perftest.SmokeProgram(t)
	dir := t.TempDir()
	var out strings.Builder
	cfg := ConfigFor(true)
	cfg.Self, cfg.OutDir = bin, dir
	cfg.Progress = perf.NewProgress(&out, "starts", Steps(cfg))
	r, err := Measure(cfg)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || len(r.Links) != 1 || len(r.Goals) != 2 {
		t.Fatalf("%d runs, links %+v, goals %+v", len(r.Runs), r.Links, r.Goals)
	}
	for _, x := range r.Runs {
		if x.Error != "" {
			t.Errorf("start %d: %s", x.Start, x.Error)
			continue
		}
		if len(x.First) != cfg.FirstRPCs || x.FirstP50Us <= 0 || x.Steady.Count < 10 || x.Large.Count < 10 || x.WarmupRatio <= 0 {
			t.Errorf("start %d: %d first RPCs, first P50 %v, steady %+v, large %+v", x.Start, len(x.First), x.FirstP50Us, x.Steady, x.Large)
		}
		if len(x.Phases) != 4 || x.DaemonRegions.Mappings != 2 || x.HarnessRegions.Mappings != 2 || !x.Loop.MaxGapFound {
			t.Errorf("start %d evidence: phases %+v, regions %+v / %+v, loop %+v", x.Start, x.Phases, x.DaemonRegions, x.HarnessRegions, x.Loop)
		}
	}
	if n := cfg.Progress.Steps(); n != Steps(cfg) {
		t.Errorf("%d progress steps, Steps says %d", n, Steps(cfg))
	}
	if _, err := r.Report().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
}

// The goal rows are the ring link's verdicts alone.
func TestGoals_fromStarts(t *testing.T) {
	r := &Result{Goals: []Goal{
		{Goal: goalBimodal, Link: "ring", Value: 0.05, Limit: 0.15, Pass: true},
		{Goal: goalBimodal, Link: "memif", Value: 0.50, Limit: 0.15}, // not the goal's link
		{Goal: goalWarmup, Link: "ring", Value: 1.6, Limit: 1.5},
	}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, goalBimodal, 0.05, true)
	perftest.CheckGoal(t, g, goalWarmup, 1.6, false)
}
