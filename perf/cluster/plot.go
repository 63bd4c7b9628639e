package cluster

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

var variantColors = map[Variant]color.Color{
	Homa:         color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	HomaOnePrio:  color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	Basic:        color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	HomaNoIncast: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// Plot writes, for each workload and load, the papers' figure: P99 (solid)
// and P50 (dashed) slowdown against message size (log), one line per
// variant; it returns the files written.
func Plot(results []*Result, dir string) ([]string, error) {
	type key struct {
		wl   string
		load float64
	}
	groups := map[key][]*Result{}
	var keys []key
	for _, r := range results {
		k := key{r.Workload, r.Load}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var paths []string
	for _, k := range keys {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s at %.0f%% load, %d hosts: slowdown by message size", k.wl, 100*k.load, groups[k][0].Hosts)
		p.X.Label.Text = "message size (bytes)"
		p.Y.Label.Text = "slowdown"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = perf.SizeTicks{}, plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for _, r := range groups[k] {
			for _, q := range []struct {
				name string
				v    func(Bucket) float64
				dash []vg.Length
			}{{"P99", func(b Bucket) float64 { return b.P99 }, nil}, {"P50", func(b Bucket) float64 { return b.P50 }, []vg.Length{vg.Points(5), vg.Points(3)}}} {
				var xys plotter.XYs
				for _, b := range r.Buckets {
					if b.Count > 0 && q.v(b) > 0 {
						xys = append(xys, plotter.XY{X: float64(b.MaxSize), Y: q.v(b)})
					}
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return nil, err
				}
				l.Color, l.Dashes, l.Width = variantColors[r.Variant], q.dash, vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(fmt.Sprintf("%s %s", r.Variant, q.name), l)
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("cluster-%s-%02.0f.png", k.wl, 100*k.load))
		if err := perf.SaveLegendBeside(p, 9*vg.Inch, 5*vg.Inch, path); err != nil {
			return nil, err
		}
		paths = append(paths, path)
		if path, err := plotBacklog(groups[k], dir); err != nil {
			return nil, err
		} else if path != "" {
			paths = append(paths, path)
		}
	}
	// Offered against delivered: where each variant stops keeping up.
	wls := map[string][]*Result{}
	var names []string
	for _, r := range results {
		if _, ok := wls[r.Workload]; !ok {
			names = append(names, r.Workload)
		}
		wls[r.Workload] = append(wls[r.Workload], r)
	}
	for _, w := range names {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: carried against offered, message Gb/s per host", w)
		p.X.Label.Text = "offered (Gb/s per host)"
		p.Y.Label.Text = "carried in the period's second half (Gb/s per host)"
		p.Add(plotter.NewGrid())
		lines := 0
		for _, v := range Variants {
			var xys plotter.XYs
			for _, r := range wls[w] {
				if r.Variant == v {
					xys = append(xys, plotter.XY{X: r.OfferedGbps, Y: r.Carried * r.OfferedGbps})
				}
			}
			if len(xys) < 2 {
				continue
			}
			slices.SortFunc(xys, func(a, b plotter.XY) int {
				switch {
				case a.X < b.X:
					return -1
				case a.X > b.X:
					return 1
				}
				return 0
			})
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			l.Color, pts.Color, l.Width = variantColors[v], variantColors[v], vg.Points(1.5)
			p.Add(l, pts)
			p.Legend.Add(string(v), l, pts)
			lines++
		}
		if lines == 0 {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("cluster-%s-load.png", w))
		if err := perf.SaveLegendBeside(p, 8*vg.Inch, 5*vg.Inch, path); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// plotBacklog writes the bytes outstanding over time of one workload and
// load, one line per variant ("" where no run has two samples): a flat
// line keeps up, a rising one does not.
func plotBacklog(runs []*Result, dir string) (string, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s at %.0f%% load: requests sent and not yet delivered", runs[0].Workload, 100*runs[0].Load)
	p.X.Label.Text = "simulated time (ms)"
	p.Y.Label.Text = "backlog (MB, all hosts)"
	p.Add(plotter.NewGrid())
	lines := 0
	for _, r := range runs {
		if len(r.Backlog) < 2 {
			continue
		}
		xys := make(plotter.XYs, len(r.Backlog))
		for i, b := range r.Backlog {
			xys[i] = plotter.XY{X: b.Ms, Y: float64(b.Bytes) / 1e6}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", err
		}
		l.Color, l.Width = variantColors[r.Variant], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (growth %+.3f)", r.Variant, r.BacklogGrowth), l)
		lines++
	}
	if lines == 0 {
		return "", nil
	}
	path := filepath.Join(dir, fmt.Sprintf("cluster-%s-%02.0f-backlog.png", runs[0].Workload, 100*runs[0].Load))
	return path, perf.SaveLegendBeside(p, 9*vg.Inch, 5*vg.Inch, path)
}
