package collectives

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
)

// Tables are the run's tables: all_reduce, ping-pong and (with
// Algorithms) homa's two all_reduce algorithms, one row per job and
// size.
func Tables(r *Result) []perf.Table {
	ar := perf.Table{Header: []string{"ranks", "size", "homa µs", "gloo µs", "gloo/homa", "homa Gb/s", "gloo Gb/s"}}
	pp := perf.Table{Header: []string{"ranks", "size", "homa µs", "gloo µs", "gloo/homa"}}
	al := perf.Table{Header: []string{"ranks", "size", "ring µs", "doubling µs", "doubling/ring", "used"}}
	for _, j := range r.Jobs {
		rk := fmt.Sprint(j.Ranks)
		for _, p := range j.AllReduce {
			ar.Rows = append(ar.Rows, []string{rk, perf.SizeName(int(p["bytes"])), us(p["homa_us"]), us(p["gloo_us"]),
				ratio(p["gloo_us"], p["homa_us"]), gbps(p["homa_busbw_gbps"]), gbps(p["gloo_busbw_gbps"])})
			if _, ok := p["homa_ring_us"]; ok {
				used := "ring" // what the backend picks at its default switch
				switch {
				case p["bytes"] < 1<<20 && j.Ranks&(j.Ranks-1) == 0:
					used = "doubling"
				case p["bytes"] < 1<<20:
					used = "reduce+broadcast"
				}
				al.Rows = append(al.Rows, []string{rk, perf.SizeName(int(p["bytes"])), us(p["homa_ring_us"]), us(p["homa_doubling_us"]),
					ratio(p["homa_doubling_us"], p["homa_ring_us"]), used})
			}
		}
		for _, p := range j.PingPong {
			pp.Rows = append(pp.Rows, []string{rk, perf.SizeName(int(p["bytes"])), us(p["homa_us"]), us(p["gloo_us"]), ratio(p["gloo_us"], p["homa_us"])})
		}
	}
	ar.Title = "all_reduce: median time per call, bus bandwidth (NCCL's tests' definition)"
	pp.Title = "send/recv ping-pong between ranks 0 and 1: median round trip"
	al.Title = "homa's all_reduce algorithms at every size (the backend switches to the ring at HOMA_DPDK_TORCH_RING_BYTES, 256 KiB by default)"
	out := []perf.Table{ar, pp}
	if len(al.Rows) > 0 {
		out = append(out, al)
	}
	out = append(out, ddpTables(r)...)
	return append(out, perf.GoalTable("goals: the issue's targets for the PyTorch backend against gloo, this run's figures", r.Goals))
}

// Report is the run's report: its tables (text, and markdown in
// collectives.md), collectives.json and the plots.
func (r *Result) Report() perf.Report {
	return perf.Report{Name: "collectives", Title: "perf collectives: the PyTorch backend \"homa\" against gloo, same jobs",
		Method: ddpMethod(r), Tables: Tables(r), JSON: "collectives.json", Result: r, Page: "collectives.md", Plots: r.charts()}
}

func us(v float64) string { return fmt.Sprintf("%.1f", v) }

func gbps(v float64) string { return fmt.Sprintf("%.3f", v) }

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

var colors = map[string]color.Color{
	"homa":          color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"gloo":          color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"homa_ring":     color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"homa_doubling": color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"compute":       color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// dashes tell the jobs apart: solid for the first job size, dashed for
// the next.
var dashes = [][]vg.Length{nil, plots.Dashed, plots.Dotted, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}

// charts are the run's plots: all_reduce latency and bus bandwidth,
// ping-pong, homa's two algorithms (with Algorithms), a line per job and
// series (colour: series; dashes: job), and the DDP step's.
func (r *Result) charts() []perf.Plot {
	var out []perf.Plot
	for _, f := range []struct {
		file, title, ylabel string
		points              func(Job) []Point
		keys                []string
		suffix              string
	}{
		{"collectives-allreduce-latency.png", "all_reduce, median time per call", "µs", func(j Job) []Point { return j.AllReduce }, []string{"homa", "gloo"}, "_us"},
		{"collectives-allreduce-busbw.png", "all_reduce bus bandwidth", "Gb/s", func(j Job) []Point { return j.AllReduce }, []string{"homa", "gloo"}, "_busbw_gbps"},
		{"collectives-pingpong.png", "send/recv ping-pong, ranks 0 and 1, median round trip", "µs", func(j Job) []Point { return j.PingPong }, []string{"homa", "gloo"}, "_us"},
		{"collectives-allreduce-algorithms.png", "homa's all_reduce: ring against recursive doubling", "µs", func(j Job) []Point { return j.AllReduce }, []string{"homa_ring", "homa_doubling"}, "_us"},
	} {
		c := plots.Lines{Title: f.title, X: "tensor size (bytes)", Y: f.ylabel, LogX: true, LogY: true, XTicks: binaryTicks{}}
		for ji, j := range r.Jobs {
			for _, k := range f.keys {
				c.Lines = append(c.Lines, plots.Line{Name: fmt.Sprintf("%s, %d ranks", k, j.Ranks), Color: colors[k], Dashes: dashes[ji%len(dashes)],
					Glyph: []draw.GlyphDrawer{plots.Ring, plots.Box}[ji%2],
					XY:    plots.XYs(f.points(j), func(p Point) float64 { return p["bytes"] }, func(p Point) float64 { return p[k+f.suffix] })})
			}
		}
		out = append(out, perf.Plot{File: f.file, Chart: c})
	}
	return append(out, ddpPlots(r)...)
}

// binaryTicks marks a log axis of power-of-two sizes: a labelled tick
// every factor of 16 (4 B, 64 B, 1 KiB, ...), unlabelled ones at the
// powers of two between.
type binaryTicks struct{}

// Ticks returns the ticks for [min, max].
func (binaryTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for v := 1.0; v <= max*1.0001; v *= 2 {
		if v < min/1.0001 {
			continue
		}
		t := plot.Tick{Value: v}
		if e := math.Log2(v); int(e)%4 == 2 {
			t.Label = perf.SizeName(int(v))
		}
		out = append(out, t)
	}
	return out
}
