package workerrtt

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
)

// The goal row is what the worker path adds to the median at 100 B.
func TestGoals_fromWorkerRTT(t *testing.T) {
	r := &Result{Size: 100, Paths: []Summary{{Path: "in-daemon"}, {Path: "worker (shm)"}}, AddedMedianUs: 0.7}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "worker RTT P50 minus in-daemon RTT P50, µs (100 B)", 0.7, false)
}
