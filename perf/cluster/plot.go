package cluster

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
)

var variantColors = map[Variant]color.Color{
	Homa:         plots.Palette[0],
	HomaOnePrio:  plots.Palette[4],
	Basic:        plots.Palette[1],
	HomaNoIncast: plots.Palette[2],
	DCTCP:        plots.Palette[3],
	TCP:          plots.Palette[5],
}

// plotsOf are the runs' plots: for each workload and load, the papers'
// figure, P99 (solid) and P50 (dashed) slowdown against message size (a
// line per variant), and the bytes outstanding over time (a flat line
// keeps up, a rising one does not); for each workload, carried against
// offered load, where each variant stops keeping up.
func plotsOf(results []*Result) []perf.Plot {
	type key struct {
		wl   string
		load float64
	}
	groups, loads := map[key][]*Result{}, map[string][]*Result{}
	var keys []key
	var wls []string
	for _, r := range results {
		k := key{r.Workload, r.Load}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		if _, ok := loads[r.Workload]; !ok {
			wls = append(wls, r.Workload)
		}
		groups[k], loads[r.Workload] = append(groups[k], r), append(loads[r.Workload], r)
	}
	var out []perf.Plot
	for _, k := range keys {
		sd := plots.Lines{Title: fmt.Sprintf("%s at %.0f%% load, %d hosts: slowdown by message size", k.wl, 100*k.load, groups[k][0].Hosts),
			X: "message size (bytes)", Y: "slowdown", LogX: true, LogY: true}
		bl := plots.Lines{Title: fmt.Sprintf("%s at %.0f%% load: requests sent and not yet delivered", k.wl, 100*k.load),
			X: "simulated time (ms)", Y: "backlog (MB, all hosts)"}
		for _, r := range groups[k] {
			size := func(b Bucket) float64 { return float64(b.MaxSize) } // an empty bucket has no P50 or P99
			sd.Lines = append(sd.Lines,
				plots.Line{Name: variantName(r) + " P99", Color: variantColors[r.Variant], XY: plots.XYs(r.Buckets, size, func(b Bucket) float64 { return b.P99 })},
				plots.Line{Name: variantName(r) + " P50", Color: variantColors[r.Variant], Dashes: plots.Dashed,
					XY: plots.XYs(r.Buckets, size, func(b Bucket) float64 { return b.P50 })})
			if len(r.Backlog) >= 2 {
				bl.Lines = append(bl.Lines, plots.Line{Name: fmt.Sprintf("%s (growth %+.3f)", variantName(r), r.BacklogGrowth), Color: variantColors[r.Variant],
					XY: plots.XYs(r.Backlog, func(b BacklogPoint) float64 { return b.Ms }, func(b BacklogPoint) float64 { return float64(b.Bytes) / 1e6 })})
			}
		}
		name := fmt.Sprintf("cluster-%s-%02.0f", k.wl, 100*k.load)
		out = append(out, perf.Plot{File: name + ".png", Chart: sd}, perf.Plot{File: name + "-backlog.png", Chart: bl})
	}
	for _, w := range wls {
		c := plots.Lines{Title: fmt.Sprintf("%s: carried against offered, message Gb/s per host", w), X: "offered (Gb/s per host)",
			Y: "carried in the period's second half (Gb/s per host)", W: 8 * vg.Inch}
		for _, v := range AllVariants() {
			var xys plotter.XYs
			for _, r := range loads[w] {
				if r.Variant == v {
					xys = append(xys, plotter.XY{X: r.OfferedGbps, Y: r.Carried * r.OfferedGbps})
				}
			}
			if len(xys) >= 2 {
				slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
				c.Lines = append(c.Lines, plots.Line{Name: string(v), XY: xys, Color: variantColors[v], Glyph: plots.Ring})
			}
		}
		out = append(out, perf.Plot{File: fmt.Sprintf("cluster-%s-load.png", w), Chart: c})
	}
	return out
}
