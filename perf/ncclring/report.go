package ncclring

import (
	"fmt"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Tables are the run's tables: per job, nccl-tests' columns for each
// series (the plugin, libhoma directly, gloo), the ratios the goals
// read per size, then the goal rows.
func Tables(r *Result) []perf.Table {
	var out []perf.Table
	for _, j := range r.Jobs {
		for _, s := range []struct {
			name string
			pts  []Point
		}{{"NCCL ring through the plugin", j.Plugin}, {"the same ring over libhoma directly", j.Libhoma}, {"gloo's all_reduce", j.Gloo}} {
			t := perf.Table{Header: []string{"size", "count", "type", "redop", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "CPU s/GB", "iters"}}
			for _, p := range s.pts {
				t.Rows = append(t.Rows, []string{fmt.Sprint(p.Bytes), fmt.Sprint(p.Bytes / 4), "float", "sum", fmt.Sprintf("%.1f", p.TimeUs),
					fmt.Sprintf("%.3f", p.AlgBW), fmt.Sprintf("%.3f", p.BusBW), fmt.Sprintf("%.2f", p.CPUPerGB), fmt.Sprint(p.Iters)})
			}
			t.Title = fmt.Sprintf("%d ranks, %s (nccl-tests' columns)", j.Ranks, s.name)
			out = append(out, t)
		}
		t := perf.Table{Header: []string{"size", "plugin/gloo time", "plugin/gloo busbw", "plugin/gloo CPU per GB",
			"plugin-libhoma µs per isend", "plugin/libhoma busbw"}}
		for _, p := range j.Plugin {
			l, okL := find(j.Libhoma, p.Bytes)
			g, okG := find(j.Gloo, p.Bytes)
			if !okL || !okG {
				continue
			}
			t.Rows = append(t.Rows, []string{perf.SizeName(p.Bytes), ratio(p.TimeUs, g.TimeUs), ratio(p.BusBW, g.BusBW),
				ratio(p.CPUPerGB, g.CPUPerGB), fmt.Sprintf("%.2f", (p.TimeUs-l.TimeUs)/float64(max(p.Msgs, 1))), ratio(p.BusBW, l.BusBW)})
		}
		t.Title = fmt.Sprintf("%d ranks: the ratios the goals read", j.Ranks)
		out = append(out, t)
	}
	return append(out, perf.GoalTable("goals: the issue's targets for the NCCL shape, this run's figures", r.Goals))
}

// Report is the run's report: its tables and notes (text, and markdown
// in nccl.md) and nccl.json.
func (r *Result) Report() perf.Report {
	return perf.Report{Name: "nccl", Title: "perf nccl: NCCL's ring all-reduce through the homa plugin, over libhoma directly, and gloo's all_reduce",
		Tables: Tables(r), Notes: Notes(r), JSON: "nccl.json", Result: r, Page: "nccl.md"}
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// Notes say how the figures were taken, and, for each goal missed, what
// stands in its way on this machine.
func Notes(r *Result) []string {
	notes := []string{
		fmt.Sprintf("This machine has %d CPUs. Each job is one process per rank on the demo's hosts in this process (rank r on host r+1, "+
			"the ring switch between them), whose polling loop takes a core of its own.", r.CPUs),
		"Time is the median over the timed all-reduces of the slowest rank's, each after a barrier; algbw = bytes / time, " +
			"busbw = algbw x 2(n-1)/n, in GB/s as nccl-tests prints them. CPU s/GB is the user and system seconds of all ranks' " +
			"processes over the timed all-reduces (the plugin's progress threads included: they sleep while a rank polls; the daemon's polling loop not), " +
			"per GB of buffer reduced.",
		"The plugin's and libhoma's ranks spin (as NCCL's proxy thread does); gloo's sleep in the kernel's TCP.",
	}
	for _, g := range r.Goals {
		if g.Met || g.Absent != "" {
			continue
		}
		why := ""
		switch {
		case strings.Contains(g.Goal, "CPU s per GB"):
			why = "the ranks poll where gloo's sleep, so every wait costs CPU."
		case strings.Contains(g.Goal, "CPU µs per message"):
			why = "NCCL's proxy thread, as these ranks do, calls test in a loop until its message is done, so a rank's CPU per " +
				"message is the time it waits: a round trip through the daemons."
			if p, ok := r.job(2).point(func(j *Job) []Point { return j.Libhoma }, 8); ok {
				why += fmt.Sprintf(" The ring over libhoma directly, whose waits sleep after spinning, took %.1f µs per message.", cpuPerMsgUs(p, 2))
			}
		case strings.Contains(g.Goal, "libhoma directly"):
			why = "through the plugin a rank's test reads two sessions (rx, the requests to its port; tx, the answers to its own) " +
				"under the plugin's lock and keeps each comm's order and credit; the direct ring's rank reads its one session. " +
				"The ratio table shows how much per message."
		default:
			why = "each step of the ring is a Homa RPC through the daemon's polling loop, which shares this machine's CPUs with the ranks."
		}
		var n int
		if _, err := fmt.Sscanf(g.Source, "nccl, %d ranks", &n); err == nil && r.CPUs < 2*n+1 {
			why += fmt.Sprintf(" Here %d ranks and the daemon's loop share %d CPUs: the figure is time-sharing as much as transport.",
				n, r.CPUs)
		}
		notes = append(notes, fmt.Sprintf("Missed: %s (%.2f, want %s): %s", g.Goal, g.Figure, g.Want, why))
	}
	return notes
}
