package collectives

import (
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
)

// Every collectives goal has a row: with figures where the job, size or
// DDP run is there, and a reason where not.
func TestCollectivesGoals_rowsFromJobs(t *testing.T) {
	jobs := []GoalFigures{
		{Ranks: 2, LatencyRatio: map[int]float64{4: 0.05, 1 << 10: 0.1, 64 << 10: 0.5, 1 << 20: 1.4}, BusBWRatio: map[int]float64{64 << 20: 1.2},
			DDPStepRatio: 0.9},
		{Ranks: 4, LatencyRatio: map[int]float64{4: 0.2, 1 << 10: 0.3}, DDPAbsent: "homa's trajectory differs from gloo's"},
	}
	g := perftest.GoalsByName(Goals(jobs))
	if len(g) != 11 {
		t.Fatalf("%d rows: %+v", len(g), g)
	}
	perftest.CheckGoal(t, g, "all_reduce latency at 4 B, 2 ranks, homa over gloo", 0.05, true)
	perftest.CheckGoal(t, g, "all_reduce latency at 1 MiB, 2 ranks, homa over gloo", 1.4, false)
	perftest.CheckGoal(t, g, "all_reduce latency at 1 KiB, 2 ranks, homa over gloo", 0.1, true)
	perftest.CheckGoal(t, g, "all_reduce latency at 64 KiB, 2 ranks, homa over gloo", 0.5, false)
	perftest.CheckGoal(t, g, "all_reduce latency at 4 B, 4 ranks, homa over gloo", 0.2, true)
	perftest.CheckGoal(t, g, "all_reduce latency at 1 KiB, 4 ranks, homa over gloo", 0.3, false)
	perftest.CheckGoal(t, g, "all_reduce bus bandwidth at 64 MiB, 2 ranks, homa over gloo", 1.2, true)
	perftest.CheckGoal(t, g, "DDP training step time, 2 ranks, homa over gloo", 0.9, false)
	for name, why := range map[string]string{
		"all_reduce latency at 64 KiB, 4 ranks, homa over gloo":       "no all_reduce at 64 KiB",
		"all_reduce bus bandwidth at 64 MiB, 4 ranks, homa over gloo": "no all_reduce at 64 MiB",
		"DDP training step time, 4 ranks, homa over gloo":             "trajectory differs",
	} {
		if r := g[name]; r.Met || !strings.Contains(r.Absent, why) || r.Want == "" {
			t.Errorf("%s: %+v; want absent for %q", name, r, why)
		}
	}
	if w := g["all_reduce latency at 4 B, 4 ranks, homa over gloo"].Want; w != "<= 0.25" {
		t.Errorf("4-rank latency want %q", w)
	}
	if w := g["all_reduce latency at 1 MiB, 2 ranks, homa over gloo"].Want; w != "<= 1.00" {
		t.Errorf("1 MiB latency want %q", w)
	}
}

func TestCollectivesGoals_missingJobAndNoRun(t *testing.T) {
	g := perftest.GoalsByName(Goals([]GoalFigures{{Ranks: 2}}))
	if r := g["DDP training step time, 4 ranks, homa over gloo"]; !strings.Contains(r.Absent, "no 4-rank job") {
		t.Errorf("%+v", r)
	}
	if r := g["DDP training step time, 2 ranks, homa over gloo"]; !strings.Contains(r.Absent, "no DDP steps") {
		t.Errorf("%+v", r)
	}
}
