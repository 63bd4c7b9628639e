package slowdown

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot draws, per workload × load, the P99 (solid) and P50
// (dashed) slowdown against message size (each size bucket at its median
// size, log x axis), Homa beside TCP, as the papers plot it. It returns
// the files written.
func Plot(res *Result, dir string) ([]string, error) {
	type key struct {
		w    string
		load float64
	}
	var order []key
	byKey := map[key][]*RunResult{}
	for _, r := range res.Runs {
		k := key{r.Workload, r.Load}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	colors := map[string]color.Color{"homa": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, "tcp": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}}
	var files []string
	for _, k := range order {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s at %.0f%% load, %s bottleneck", k.w, k.load*100, rateName(byKey[k][0].RateBps))
		p.X.Label.Text = "message size"
		p.Y.Label.Text = "slowdown (RTT / unloaded RTT)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = perf.SizeTicks{}
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = 1
		maxY := 2.0
		for _, r := range byKey[k] {
			for qi, q := range []string{"P99", "P50"} {
				var xy plotter.XYs
				for _, b := range r.Buckets {
					v := b.P99
					if qi == 1 {
						v = b.P50
					}
					if b.Count == 0 || v <= 0 {
						continue
					}
					xy = append(xy, plotter.XY{X: float64(b.MedianSize), Y: max(v, 1)})
					maxY = max(maxY, v)
				}
				if len(xy) == 0 {
					continue
				}
				l, pts, err := plotter.NewLinePoints(xy)
				if err != nil {
					return files, err
				}
				c := colors[r.Transport]
				if c == nil {
					c = color.Black
				}
				l.Color, pts.Color = c, c
				l.Width = vg.Points(1.5)
				pts.Shape = draw.CircleGlyph{}
				pts.Radius = vg.Points(2)
				if qi == 1 {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				}
				p.Add(l, pts)
				name := map[string]string{"homa": "Homa", "tcp": "TCP"}[r.Transport]
				if name == "" {
					name = r.Transport
				}
				p.Legend.Add(name+" "+q, l, pts)
			}
		}
		p.Y.Max = maxY * 1.1
		p.Add(plotter.NewGrid())
		name := filepath.Join(dir, fmt.Sprintf("slowdown-%s-%.0f.png", strings.ToLower(k.w), k.load*100))
		if err := perf.SaveLegendBeside(p, 8.5*vg.Inch, 4.5*vg.Inch, name); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}
