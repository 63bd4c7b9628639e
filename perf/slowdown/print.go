package slowdown

import (
	"fmt"
	"io"
	"strings"
)

// Print writes the headline table: per run, the short messages'
// slowdown and the throughput achieved.
func Print(w io.Writer, res *Result) {
	fmt.Fprintf(w, "slowdown: %d clients -> 1 server, bottleneck per workload (%.0f RPC/s at the highest load, at most %s), %g s per run\n",
		res.Clients, res.RPCRate, rateName(res.RateBps), res.Seconds)
	fmt.Fprintf(w, "%-5s %-3s %4s %11s %8s %8s %9s %6s %10s %10s %13s %9s %10s\n", "tx", "W", "load", "rate", "offered", "done", "lost+fail", "late", "short P50", "short P99", "short P99 µs", "all P99", "max gap µs")
	for _, r := range res.Runs {
		sp50, sp99, sp99us := "-", "-", "-"
		if r.Short != nil {
			sp50, sp99, sp99us = fmt.Sprintf("%.2f", r.Short.P50), fmt.Sprintf("%.2f", r.Short.P99), fmt.Sprintf("%.0f", r.Short.P99RTTUs)
		}
		all := "-"
		if len(r.samples) > 0 {
			b := summarize(r.samples, r.Unloaded)
			all = fmt.Sprintf("%.2f", b.P99)
		}
		gap := 0.0
		for _, l := range r.Loops {
			if strings.HasPrefix(l.Loop, "homa daemon") {
				gap = max(gap, l.MaxGapUs)
			}
		}
		gs := "-"
		if gap > 0 {
			gs = fmt.Sprintf("%.0f", gap)
		}
		late := fmt.Sprintf("%.1f%%", 100*r.LateFraction)
		if !r.ScheduleKept {
			late += "!"
		}
		fmt.Fprintf(w, "%-5s %-3s %3.0f%% %11s %8d %8d %9d %6s %10s %10s %13s %9s %10s\n", r.Transport, r.Workload, r.Load*100, rateName(r.RateBps), r.Offered, r.Done,
			r.Lost+r.Failed, late, sp50, sp99, sp99us, all, gs)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintln(w, "skipped:", sk)
	}
	fmt.Fprintf(w, "short: messages of at most %d bytes; slowdown = RTT / unloaded RTT of the size; µs: the RTT itself\n", ShortLimit)
	fmt.Fprintln(w, "late: sends >1 ms behind the Poisson schedule; '!' = over 5%: the harness was starved, the slowdowns measure the machine")
	fmt.Fprintln(w, "max gap: longest gap between two passes of any Homa daemon's polling loop (homa_loop_max_pass_gap_seconds)")
	for _, p := range res.Plots {
		fmt.Fprintln(w, "plot:", p)
	}
}

func logRun(logf func(string, ...any), r *RunResult) {
	short := "n/a"
	if r.Short != nil {
		short = fmt.Sprintf("P50 %.2f P99 %.2f (n=%d)", r.Short.P50, r.Short.P99, r.Short.Count)
	}
	logf("  %s %s %.0f%%: offered %d RPCs (%.1f Mb/s), done %d, failed %d, unanswered %d, late sends %.1f%% (max %.0f µs); short (<=%d B) slowdown %s",
		r.Transport, r.Workload, r.Load*100, r.Offered, r.OfferedMbps, r.Done, r.Failed, r.Lost, 100*r.LateFraction, r.MaxSendLagUs, ShortLimit, short)
}

func rateName(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%g Gb/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%g Mb/s", bps/1e6)
	}
	return fmt.Sprintf("%g kb/s", bps/1e3)
}
