package slowdown

import (
	"cmp"
	"fmt"
	"image/color"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Title is the slowdown section's title.
const Title = "slowdown: Homa daemons vs kernel TCP through a tc bottleneck (W1-W5)"

// Report is the slowdown scenario's report: per run, the short messages'
// slowdown and the throughput achieved; per workload × load, P99 (solid)
// and P50 (dashed) slowdown against message size (each size bucket at its
// median size), Homa beside TCP, as the papers plot it. Its plots' files
// are the result's Plots.
func (r *Result) Report() perf.Report {
	t := perf.Table{Header: []string{"tx", "W", "load", "rate", "offered", "done", "lost+fail", "late", "short P50", "short P99",
		"short P99 µs", "all P99", "max gap µs"}}
	type key struct {
		w    string
		load float64
	}
	var charts []key
	byKey := map[key][]*RunResult{}
	for _, x := range r.Runs {
		sp50, sp99, sp99us, gap := "-", "-", "-", 0.0
		if x.Short != nil {
			sp50, sp99, sp99us = fmt.Sprintf("%.2f", x.Short.P50), fmt.Sprintf("%.2f", x.Short.P99), fmt.Sprintf("%.0f", x.Short.P99RTTUs)
		}
		for _, l := range x.Loops {
			if strings.HasPrefix(l.Loop, "homa daemon") {
				gap = max(gap, l.MaxGapUs)
			}
		}
		late := fmt.Sprintf("%.1f%%", 100*x.LateFraction)
		if !x.ScheduleKept {
			late += "!"
		}
		t.Rows = append(t.Rows, []string{x.Transport, x.Workload, fmt.Sprintf("%.0f%%", x.Load*100), rateName(x.RateBps), fmt.Sprint(x.Offered),
			fmt.Sprint(x.Done), fmt.Sprint(x.Lost + x.Failed), late, sp50, sp99, sp99us, dash(x.AllP99, "%.2f"), dash(gap, "%.0f")})
		k := key{x.Workload, x.Load}
		if _, ok := byKey[k]; !ok {
			charts = append(charts, k)
		}
		byKey[k] = append(byKey[k], x)
	}
	rep := perf.Report{Name: "slowdown", Title: Title, Method: r.Method, Distortions: r.Distortions,
		Heading: fmt.Sprintf("slowdown: %d clients -> 1 server, bottleneck per workload (%.0f RPC/s at the highest load, at most %s), %g s per run",
			r.Clients, r.RPCRate, rateName(r.RateBps), r.Seconds),
		Tables: []perf.Table{t}, JSON: "slowdown.json", Result: r}
	for _, sk := range r.Skipped {
		rep.Notes = append(rep.Notes, "skipped: "+sk)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("short: messages of at most %d bytes; slowdown = RTT / unloaded RTT of the size; µs: the RTT itself", ShortLimit),
		"late: sends >1 ms behind the Poisson schedule; '!' = over 5%: the harness was starved, the slowdowns measure the machine",
		"max gap: longest gap between two passes of any Homa daemon's polling loop (homa_loop_max_pass_gap_seconds)")
	colors := map[string]color.Color{"homa": plots.Palette[0], "tcp": plots.Palette[1]}
	r.Plots = nil
	for _, k := range charts {
		c := plots.Lines{Title: fmt.Sprintf("%s at %.0f%% load, %s bottleneck", k.w, k.load*100, rateName(byKey[k][0].RateBps)),
			X: "message size", Y: "slowdown (RTT / unloaded RTT)", LogX: true, LogY: true, YMin: 1, YMax: 2.2, W: 8.5 * vg.Inch, H: 4.5 * vg.Inch}
		for _, x := range byKey[k] {
			name := map[string]string{"homa": "Homa", "tcp": "TCP"}[x.Transport]
			for _, q := range []struct {
				name   string
				v      func(Bucket) float64
				dashes []vg.Length
			}{{" P99", func(b Bucket) float64 { return b.P99 }, nil}, {" P50", func(b Bucket) float64 { return b.P50 }, plots.Dashed}} {
				l := plots.Line{Name: cmp.Or(name, x.Transport) + q.name, Color: colors[x.Transport], Dashes: q.dashes, Glyph: plots.Ring, Radius: vg.Points(2)}
				for _, b := range x.Buckets {
					if v := q.v(b); b.Count > 0 && v > 0 {
						l.XY = append(l.XY, plotter.XY{X: float64(b.MedianSize), Y: max(v, 1)})
						c.YMax = max(c.YMax, 1.1*v)
					}
				}
				c.Lines = append(c.Lines, l)
			}
		}
		file := fmt.Sprintf("slowdown-%s-%.0f.png", strings.ToLower(k.w), k.load*100)
		rep.Plots, r.Plots = append(rep.Plots, perf.Plot{File: file, Chart: c}), append(r.Plots, file)
	}
	return rep
}

// dash is v in format, or "-" where it is 0 (not measured).
func dash(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
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
