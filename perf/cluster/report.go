package cluster

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Summary writes one run's headline figures.
func Summary(r *Result, w io.Writer) {
	short, large := "-", "-"
	if r.Short != nil {
		short = fmt.Sprintf("%.2f (n=%d)", r.Short.P99, r.Short.Count)
	}
	if r.Largest != nil {
		large = fmt.Sprintf("%.2f (%d-%d B, n=%d)", r.Largest.P99, r.Largest.MinSize, r.Largest.MaxSize, r.Largest.Count)
	}
	fmt.Fprintf(w, "  P99 slowdown <=1 KB %s, largest bucket %s; peak switch queue %d B; offered %.2f Gb/s per host, %.1f%% carried in the period; %.1f ms simulated in %.1f s (%.0f frames/s)\n",
		short, large, r.Queues.Max(), r.OfferedGbps, 100*r.Carried, float64(r.SimNs)/1e6, r.WallSeconds, r.FramesPerSec)
}

// Table is the runs' headline table.
func Table(results []*Result) perf.Table {
	t := perf.Table{Header: []string{"workload", "load", "variant", "P99 <=1KB", "P50 <=1KB", "P99 largest", "peak queue B", "offered Gb/s", "carried", "keeps up", "wasted bw", "resent pkts", "resent B", "resends BUSY", "drain ms", "sim ms", "wall s"}}
	for _, r := range results {
		s99, s50, l99 := "-", "-", "-"
		if r.Short != nil {
			s99, s50 = fmt.Sprintf("%.2f", r.Short.P99), fmt.Sprintf("%.2f", r.Short.P50)
		}
		if r.Largest != nil {
			l99 = fmt.Sprintf("%.2f", r.Largest.P99)
		}
		t.Rows = append(t.Rows, []string{r.Workload, fmt.Sprintf("%.0f%%", 100*r.Load), string(r.Variant), s99, s50, l99,
			fmt.Sprint(r.Queues.Max()), fmt.Sprintf("%.2f", r.OfferedGbps), fmt.Sprintf("%.3f", r.Carried),
			yesNo(r.KeepsUp), fmt.Sprintf("%.1f%%", 100*r.WastedBandwidth),
			fmt.Sprint(r.Resent), fmt.Sprint(r.ResentBytes), fmt.Sprint(r.ResendsBusy), fmt.Sprintf("%.1f", r.DrainMs), fmt.Sprintf("%.1f", float64(r.SimNs)/1e6), fmt.Sprintf("%.1f", r.WallSeconds)})
	}
	return t
}

// Report writes the runs' table and the goal rows.
func Report(results []*Result, w io.Writer) {
	fmt.Fprintln(w)
	Table(results).Text(w)
	if g := Goals(results); len(g) > 0 {
		fmt.Fprintln(w)
		GoalTable(g).Text(w)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Goal is one of the goal rows with this run's figure.
type Goal struct {
	What string `json:"what"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// ShortGoal is the short messages' P99 slowdown at 80% load the goal
// allows.
const ShortGoal = 2.2

// Goals are the goal rows the results allow: homa's P99 slowdown of
// messages up to 1 KB at 80% load within ShortGoal for each workload, and
// homa keeping up at 90% where the baselines do not (per workload).
func Goals(results []*Result) []Goal {
	var out []Goal
	find := func(wl string, load float64, v Variant) *Result {
		for _, r := range results {
			if r.Workload == wl && r.Load == load && r.Variant == v {
				return r
			}
		}
		return nil
	}
	var wls []string
	for _, r := range results {
		if !slices.Contains(wls, r.Workload) {
			wls = append(wls, r.Workload)
		}
	}
	for _, w := range wls {
		if r := find(w, 0.8, Homa); r != nil && r.Short != nil {
			out = append(out, Goal{What: fmt.Sprintf("%s at 80%%: homa's P99 slowdown of messages <= 1 KB", w),
				Want: fmt.Sprintf("<= %.1f", ShortGoal), Got: fmt.Sprintf("%.2f", r.Short.P99), Met: r.Short.P99 <= ShortGoal})
		}
		h := find(w, 0.9, Homa)
		if h == nil {
			continue
		}
		var fell []string
		for _, v := range []Variant{HomaOnePrio, Basic} {
			if b := find(w, 0.9, v); b != nil && !b.KeepsUp {
				fell = append(fell, string(v))
			}
		}
		got := "homa keeps up: " + yesNo(h.KeepsUp)
		if len(fell) > 0 {
			got += "; behind: " + strings.Join(fell, ", ")
		} else {
			got += "; the baselines keep up too"
		}
		out = append(out, Goal{What: fmt.Sprintf("%s at 90%%: homa keeps up where the baselines do not", w),
			Want: "homa yes, a baseline no", Got: got, Met: h.KeepsUp && len(fell) > 0})
	}
	return out
}

// GoalTable is the goal rows as a table.
func GoalTable(goals []Goal) perf.Table {
	t := perf.Table{Header: []string{"goal", "want", "got", "met"}}
	for _, g := range goals {
		t.Rows = append(t.Rows, []string{g.What, g.Want, g.Got, yesNo(g.Met)})
	}
	return t
}

// Markdown writes the runs' tables and goals as markdown.
func Markdown(results []*Result, w io.Writer) {
	fmt.Fprintln(w, "# perf cluster: the simulated cluster, every host running engine.Endpoint")
	fmt.Fprint(w, "\n## Runs\n\n")
	Table(results).Markdown(w)
	fmt.Fprint(w, "\n## Goals\n\n")
	GoalTable(Goals(results)).Markdown(w)
	fmt.Fprint(w, "\n## Slowdown by size (P50 / P99), per run\n\n")
	for _, r := range results {
		fmt.Fprintf(w, "\n### %s at %.0f%%, %s (%d messages measured of %d)\n\n", r.Workload, 100*r.Load, r.Variant, r.Measured, r.Offered)
		t := perf.Table{Header: []string{"sizes", "count", "idle µs", "P50", "P99"}}
		for _, b := range r.Buckets {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%d-%d", b.MinSize, b.MaxSize), fmt.Sprint(b.Count), fmt.Sprintf("%.2f", b.IdleUs),
				fmt.Sprintf("%.2f", b.P50), fmt.Sprintf("%.2f", b.P99)})
		}
		t.Markdown(w)
	}
}
