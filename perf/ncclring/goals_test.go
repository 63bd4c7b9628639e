package ncclring

import (
	"math"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
)

// pt is a point of bytes at time µs, n ranks, msgs isends per rank, cpu
// seconds per GB.
func pt(n, bytes, msgs int, us, cpu float64) Point {
	p := Point{Bytes: bytes, Iters: 5, Msgs: msgs, TimeUs: us, CPUPerGB: cpu}
	p.Bandwidths(n)
	return p
}

// A 2-rank job: the plugin at 8 B and 64 KiB against gloo and libhoma,
// and at 4 MiB and 64 MiB.
func twoRankJob() Job {
	return Job{Ranks: 2,
		Plugin:  []Point{pt(2, 8, 2, 20, 6000), pt(2, 64<<10, 2, 60, 9), pt(2, 4<<20, 16, 4000, 2), pt(2, 64<<20, 256, 50000, 3)},
		Libhoma: []Point{pt(2, 8, 2, 19, 9), pt(2, 64<<10, 2, 56, 9), pt(2, 4<<20, 16, 3900, 2), pt(2, 64<<20, 256, 45000, 3)},
		Gloo:    []Point{pt(2, 8, 0, 50, 9), pt(2, 64<<10, 0, 100, 9), pt(2, 4<<20, 0, 5000, 1), pt(2, 64<<20, 0, 40000, 4)},
	}
}

func TestGoals_rowsFromAJob(t *testing.T) {
	g := perftest.GoalsByName(Goals(&Result{Jobs: []Job{twoRankJob()}}))
	if len(g) != 15 {
		t.Fatalf("%d rows: %+v", len(g), g)
	}
	// worst of 20/50 and 60/100
	perftest.CheckGoal(t, g, "NCCL ring through the plugin, 8 B-64 KiB, 2 ranks: time over gloo's (worst size)", 0.6, false)
	perftest.CheckGoal(t, g, "NCCL ring through the plugin, 4 MiB, 2 ranks: busbw over gloo's", 1.25, true)
	perftest.CheckGoal(t, g, "NCCL ring through the plugin, 4 MiB, 2 ranks: CPU s per GB over gloo's", 2, false)
	perftest.CheckGoal(t, g, "NCCL ring through the plugin, 64 MiB, 2 ranks: busbw over gloo's", 0.8, false)
	perftest.CheckGoal(t, g, "NCCL ring through the plugin, 64 MiB, 2 ranks: CPU s per GB over gloo's", 0.75, true)
	// (20-19)/2 and (60-56)/2: median 1.25
	perftest.CheckGoal(t, g, "the plugin over libhoma directly, 8 B-64 KiB, 2 ranks: µs more per isend+test pair (median size)", 1.25, false)
	// 3900/4000 and 45000/50000: worst 0.9
	perftest.CheckGoal(t, g, "the plugin over libhoma directly, 4 MiB and 64 MiB, 2 ranks: busbw ratio (worst)", 0.9, false)
	// 6000 s/GB x 8 B over 2 ranks and 2 messages each: 12 µs
	perftest.CheckGoal(t, g, "the plugin, one 8 B message at a time each way (the 8 B all-reduce), 2 ranks: CPU µs per message per rank", 12, false)
	if r := g["NCCL ring through the plugin, 64 MiB, 4 ranks: busbw over gloo's"]; !strings.Contains(r.Absent, "no 4-rank job") || r.Want != ">= 1.00" {
		t.Errorf("%+v", r)
	}
}

func TestGoals_missingSizesAndNoRun(t *testing.T) {
	j := twoRankJob()
	j.Plugin = j.Plugin[:2] // a smoke run: nothing past 64 KiB
	g := perftest.GoalsByName(Goals(&Result{Jobs: []Job{j}}))
	if r := g["NCCL ring through the plugin, 4 MiB, 2 ranks: busbw over gloo's"]; !strings.Contains(r.Absent, "no all-reduce of 4 MiB") {
		t.Errorf("%+v", r)
	}
	if r := g["the plugin over libhoma directly, 4 MiB and 64 MiB, 2 ranks: busbw ratio (worst)"]; r.Absent == "" || r.Met {
		t.Errorf("%+v", r)
	}
	for _, r := range Goals(nil) {
		if !strings.Contains(r.Absent, "perf nccl, which did not run") || r.Met || r.Want == "" {
			t.Errorf("%+v", r)
		}
	}
}

func TestPoint_bandwidthsAsNCCLTests(t *testing.T) {
	p := Point{Bytes: 4 << 20, TimeUs: 1000}
	p.Bandwidths(4)
	if math.Abs(p.AlgBW-4.194304) > 1e-9 || math.Abs(p.BusBW-6.291456) > 1e-9 { // GB/s; x 2(n-1)/n
		t.Errorf("algbw %v busbw %v; want 4.194304 and 6.291456", p.AlgBW, p.BusBW)
	}
}
