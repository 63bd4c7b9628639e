package collectives

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// ddpTables are the DDP step's tables (none without DDP jobs): step
// times and communication shares, and the trajectory check.
func ddpTables(r *Result) []NamedTable {
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
	steps := NamedTable{fmt.Sprintf("DDP training step (SGD, MSE on random data): median and p90 of %d steps after %d warm-up, each the slowest rank's; "+
		"compute: the same step under no_sync() (no all_reduce); comm = 1 - compute/step", nSteps, warmup), st}
	traj := NamedTable{fmt.Sprintf("DDP: homa's trajectory against gloo's, same seeds and batches (tolerances: losses %.0e relative; "+
		"parameters and replicas %.0e of the largest update)", LossTolerance, ParamTolerance), tr}
	if len(st.Rows) == 0 { // every DDP job failed
		return []NamedTable{traj}
	}
	return []NamedTable{steps, traj}
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

// plotDDP writes the DDP plots (none without DDP jobs): the median step
// per job and variant as bars, and every timed step as lines.
func plotDDP(r *Result, dir string) ([]string, error) {
	var jobs []Job
	for _, j := range r.Jobs {
		if j.DDP != nil {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	bars := filepath.Join(dir, "collectives-ddp-step.png")
	if err := plotDDPBars(jobs, bars); err != nil {
		return nil, err
	}
	steps := filepath.Join(dir, "collectives-ddp-steps.png")
	if err := plotDDPSteps(jobs, steps); err != nil {
		return nil, err
	}
	return []string{bars, steps}, nil
}

// plotDDPBars draws a group of bars per job, one per variant (homa, gloo,
// compute), each labelled with its median and p90.
func plotDDPBars(jobs []Job, path string) error {
	g := perf.GroupedBars{
		Title:    fmt.Sprintf("DDP training step, %.1f MiB of gradients: median (labels: median / p90)", float64(jobs[0].DDP.GradBytes)/(1<<20)),
		YLabel:   "ms per step",
		Color:    func(i int) color.Color { return colors[ddpVariants[i]] },
		BarWidth: vg.Points(36),
	}
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
	return g.Save(path)
}

// plotDDPSteps draws every timed step's time, a line per job and
// variant (colour: variant; dashes: job).
func plotDDPSteps(jobs []Job, path string) error {
	p := plot.New()
	p.Title.Text = "DDP training step, each timed step (the slowest rank's)"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "ms"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1} // a slow step does not flatten the rest
	p.Add(plotter.NewGrid())
	for ji, j := range jobs {
		for _, k := range ddpVariants {
			ts := j.DDP.StepMs[k]
			if len(ts) == 0 {
				continue
			}
			xys := make(plotter.XYs, len(ts))
			for i, v := range ts {
				xys[i] = plotter.XY{X: float64(i + 1), Y: max(v, 1e-3)}
			}
			line, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color, pts.Color = colors[k], colors[k]
			line.Dashes = dashes[ji%len(dashes)]
			line.Width = vg.Points(1)
			pts.Radius = vg.Points(1.5)
			if ji%2 == 1 {
				pts.Shape = draw.BoxGlyph{}
			}
			p.Add(line, pts)
			p.Legend.Add(fmt.Sprintf("%s, %d ranks", k, j.Ranks), line, pts)
		}
	}
	return perf.SaveLegendBeside(p, 9*vg.Inch, 5*vg.Inch, path)
}
