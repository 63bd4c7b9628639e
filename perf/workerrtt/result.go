package workerrtt

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Result is what perf worker-rtt prints and writes as JSON.
type Result struct {
	Method   string    `json:"method"`
	Size     int       `json:"size_bytes"`
	Rounds   int       `json:"rounds"`
	PerRound int       `json:"rpcs_per_round_per_path"`
	Paths    []Summary `json:"paths"`
	// AddedMedianUs is the worker path's median minus the in-daemon
	// median, over all RPCs; AddedPerRoundUs the same per round.
	AddedMedianUs   float64   `json:"added_median_us"`
	AddedPerRoundUs []float64 `json:"added_per_round_us"`
	// PassNs is the polling loop's mean pass (both hosts) while measuring;
	// MaxGapUs its longest gap between passes over the run (stalls).
	PassNs   float64 `json:"loop_pass_ns"`
	MaxGapUs float64 `json:"loop_max_gap_us"`
}

// Summary is one path's percentiles.
type Summary struct {
	Path   string  `json:"path"`
	RPCs   int64   `json:"rpcs"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// Method is how worker-rtt measures, as its JSON says.
const Method = `Two Homa hosts (10.0.0.1, 10.0.0.2) in one daemon process, joined by a net_memif ` +
	`pair (the server and client ends of one memif socket), both run by one busy-polling loop on lcore 1. ` +
	`Worker path: a Go worker (client/, no cgo) attached to each host over shared memory, both polled by ` +
	`one goroutine on the other CPU that spins on its completion rings (never sleeps); the client worker ` +
	`sends, the server worker receives and replies with the same bytes, the client waits for the response; ` +
	`RTT from before Send to after Wait returns. In-daemon path: the same RPC from an application inside ` +
	`the polling loop on 10.0.0.1 to an echo application inside the loop on 10.0.0.2, RTT from before ` +
	`Send to the loop pass that takes the response. Rounds alternate the paths; one RPC at a time.`

// Report is the worker-rtt scenario's report.
func (r *Result) Report() perf.Report {
	t := perf.Table{Header: []string{"path", "P50 µs", "P99 µs", "P99.9 µs", "max µs", "RPCs"}}
	for _, p := range r.Paths {
		t.Rows = append(t.Rows, []string{p.Path, fmt.Sprintf("%.2f", p.P50Us), fmt.Sprintf("%.2f", p.P99Us),
			fmt.Sprintf("%.2f", p.P999Us), fmt.Sprintf("%.1f", p.MaxUs), fmt.Sprint(p.RPCs)})
	}
	return perf.Report{Name: "worker-rtt", Title: Title, Method: r.Method, JSON: "worker-rtt.json", Result: r,
		Distortions: "Both hosts run in one process, polled by one busy loop on lcore 1, so a worker's submission " +
			"waits on average about half a pass of a loop that serves both hosts; the workers' CPU 0 is shared " +
			"with the daemon's main thread, the Go runtime's threads and everything else on the machine.",
		Tables: []perf.Table{t},
		Notes: []string{
			fmt.Sprintf("%d-byte RPCs; the shared-memory path adds %.2f µs at the median.", r.Size, r.AddedMedianUs),
			fmt.Sprintf("Polling loop (both hosts, lcore 1): one pass every %.0f ns on average; longest gap between two passes %.1f µs.", r.PassNs, r.MaxGapUs),
		}}
}

// GoalUs is the most the worker path may add to the in-daemon round
// trip's median (issue 29).
const GoalUs = 0.5

// Goals is the goal row on what the shared-memory worker path adds to a round trip (r nil: it did not run).
func Goals(r *Result) []perf.Goal {
	var gs []perf.Goal
	// What the shared-memory worker path adds to a round trip.
	wr := perf.Goal{Goal: "worker RTT P50 minus in-daemon RTT P50, µs (100 B)", Source: "worker-rtt",
		Absent: "worker-rtt did not run at 100 B"}
	if r != nil && r.Size == 100 && len(r.Paths) > 0 {
		perf.AtMost(&wr, r.AddedMedianUs, GoalUs)
		wr.Absent = ""
	}
	gs = append(gs, wr)
	return gs
}
