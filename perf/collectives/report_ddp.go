package collectives

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
)

// ddpTables are the DDP step's tables (none without DDP jobs): step
// times and communication shares, and the trajectory check.
func ddpTables(r *Result) []perf.Table {
	st := perf.Table{Header: []string{"ranks", "model", "gradients", "batch", "steps", "homa ms", "homa p90", "gloo ms", "gloo p90",
		"homa/gloo", "compute ms", "homa comm", "gloo comm", "load before"}}
	tr := perf.Table{Header: []string{"ranks", "loss max rel diff", "param max abs diff", "of largest update", "homa replicas", "gloo replicas",
		"final loss homa", "final loss gloo", "trajectories"}}
	nSteps, warmup := 0, 0
	for _, j := range r.Jobs {
		d := j.DDP
		if j.DDPError != "" {
			tr.Rows = append(tr.Rows, []string{fmt.Sprint(j.Ranks), "-", "-", "-", "-", "-", "-", "-", "JOB FAILED: " + j.DDPError})
		}
		if d == nil {
			continue
		}
		nSteps, warmup = d.Steps, d.Warmup
		h, g, c := d.Stats["homa"], d.Stats["gloo"], d.Stats["compute"]
		st.Rows = append(st.Rows, []string{fmt.Sprint(j.Ranks), d.Model, fmt.Sprintf("%.1f MiB", float64(d.GradBytes)/(1<<20)),
			fmt.Sprint(d.Batch), fmt.Sprint(d.Steps), ms(h.Median), ms(h.P90), ms(g.Median), ms(g.P90), ratio(h.Median, g.Median),
			ms(c.Median), share(d.CommShare, "homa"), share(d.CommShare, "gloo"), orUnknown(d.LoadAvg)})
		verdict := "equal"
		if d.Differ != "" {
			verdict = "DIFFER: " + d.Differ
		}
		of := "-"
		if d.ParamMaxUpdate > 0 {
			of = fmt.Sprintf("%.1e", d.ParamMaxAbsDiff/d.ParamMaxUpdate)
		}
		tr.Rows = append(tr.Rows, []string{fmt.Sprint(j.Ranks), sci(d.LossMaxRelDiff), sci(d.ParamMaxAbsDiff), of,
			sci(d.ReplicaMaxAbsDiff["homa"]), sci(d.ReplicaMaxAbsDiff["gloo"]),
			fmt.Sprintf("%.6f", d.FinalLoss["homa"]), fmt.Sprintf("%.6f", d.FinalLoss["gloo"]), verdict})
	}
	if len(tr.Rows) == 0 {
		return nil
	}
	st.Title = fmt.Sprintf("DDP training step (SGD, MSE on random data): median and p90 of %d steps after %d warm-up, each the slowest rank's; "+
		"compute: the same step under no_sync() (no all_reduce); comm = 1 - compute/step", nSteps, warmup)
	tr.Title = fmt.Sprintf("DDP: homa's trajectory against gloo's, same seeds and batches (tolerances: losses %.0e relative; "+
		"parameters and replicas %.0e of the largest update)", LossTolerance, ParamTolerance)
	if len(st.Rows) == 0 { // every DDP job failed
		return []perf.Table{tr}
	}
	return []perf.Table{st, tr}
}

// ddpMethod is how the DDP step was measured, for the markdown ("" without
// DDP jobs).
func ddpMethod(r *Result) string {
	for _, j := range r.Jobs {
		if d := j.DDP; d != nil {
			return fmt.Sprintf("DDP training step (python/examples/ddp_bench.py, a job of its own per size): three replicas of %s "+
				"(%d parameters, %.1f MiB of float32 gradients), seeded alike, step in turn on the same batches of random data "+
				"(%d per rank, a seed per rank; SGD, lr %g, MSE): DDP over homa (%s, torch %s), DDP over gloo, and DDP over gloo "+
				"under no_sync() (no all_reduce: the compute the other two also do). The variant that goes first rotates every step; "+
				"the ranks meet at a gloo barrier before each (not timed). A step is zero_grad, forward, backward (where DDP "+
				"all_reduces the gradients in its buckets) and the optimizer's step; its time is that of the slowest rank. "+
				"%d warm-up steps per variant, then %d timed. After them homa's losses (every step, every rank) and parameters are "+
				"compared with gloo's, and each backend's replicas across ranks; a difference beyond float32 rounding fails the run.",
				d.Model, d.Params, float64(d.GradBytes)/(1<<20), d.Batch, d.LR, orUnknown(d.HomaImpl), orUnknown(d.Torch), d.Warmup, d.Steps)
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func ms(v float64) string { return fmt.Sprintf("%.2f", v) }

func sci(v float64) string { return fmt.Sprintf("%.1e", v) }

func share(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// ddpPlots are the DDP plots (none without DDP jobs): the median step
// per job and variant as bars, each labelled with its median and p90, and
// every timed step as lines (colour: variant; dashes: job).
func ddpPlots(r *Result) []perf.Plot {
	var jobs []Job
	for _, j := range r.Jobs {
		if j.DDP != nil {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	g := plots.GroupedBars{
		Title:    fmt.Sprintf("DDP training step, %.1f MiB of gradients: median (labels: median / p90)", float64(jobs[0].DDP.GradBytes)/(1<<20)),
		YLabel:   "ms per step",
		Color:    func(i int) color.Color { return colors[ddpVariants[i]] },
		BarWidth: vg.Points(36),
	}
	// Log: a slow step does not flatten the rest.
	c := plots.Lines{Title: "DDP training step, each timed step (the slowest rank's)", X: "step", Y: "ms", LogY: true}
	for _, j := range jobs {
		g.Groups = append(g.Groups, fmt.Sprintf("%d ranks", j.Ranks))
	}
	for _, k := range ddpVariants {
		name := k
		if k == "compute" {
			name = "compute (no_sync, no all_reduce)"
		}
		vals := make([]float64, len(jobs))
		labels := make([]string, len(jobs))
		for i, j := range jobs {
			s := j.DDP.Stats[k]
			vals[i], labels[i] = s.Median, fmt.Sprintf("%.1f / %.1f", s.Median, s.P90)
		}
		g.Series, g.Values, g.Labels = append(g.Series, name), append(g.Values, vals), append(g.Labels, labels)
	}
	for ji, j := range jobs {
		for _, k := range ddpVariants {
			l := plots.Line{Name: fmt.Sprintf("%s, %d ranks", k, j.Ranks), Color: colors[k], Dashes: dashes[ji%len(dashes)], Width: vg.Points(1),
				Glyph: []draw.GlyphDrawer{plots.Ring, plots.Box}[ji%2], Radius: vg.Points(1.5)}
			for i, v := range j.DDP.StepMs[k] {
				l.XY = append(l.XY, plotter.XY{X: float64(i + 1), Y: max(v, 1e-3)})
			}
			c.Lines = append(c.Lines, l)
		}
	}
	return []perf.Plot{{File: "collectives-ddp-step.png", Chart: g}, {File: "collectives-ddp-steps.png", Chart: c}}
}
