package perf

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var seriesColors = map[string]color.Color{
	"homa-memif":   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"homa-ring":    color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"tcp-loopback": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"tcp-veth":     color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

func colorOf(name string) color.Color {
	if c, ok := seriesColors[name]; ok {
		return c
	}
	return color.Black
}

// PlotRTT draws P50 (solid) and P99 (dashed) against message size for
// every transport, log-log, into a PNG (or SVG, by path's extension).
func PlotRTT(r *RTTResult, path string) error {
	p := plot.New()
	p.Title.Text = "Round-trip time, one RPC at a time"
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "RTT (µs)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for _, s := range r.Series {
		if s.Skipped != "" || len(s.Points) == 0 {
			continue
		}
		for _, q := range []struct {
			name string
			val  func(RTTPoint) float64
			dash []vg.Length
		}{
			{"P50", func(p RTTPoint) float64 { return p.P50Us }, nil},
			{"P99", func(p RTTPoint) float64 { return p.P99Us }, []vg.Length{vg.Points(5), vg.Points(3)}},
		} {
			xys := make(plotter.XYs, 0, len(s.Points))
			for _, pt := range s.Points {
				if v := q.val(pt); v > 0 {
					xys = append(xys, plotter.XY{X: float64(pt.Size), Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color, points.Color = colorOf(s.Transport), colorOf(s.Transport)
			line.Dashes = q.dash
			line.Width = vg.Points(1.5)
			if q.dash != nil {
				points.Shape = draw.BoxGlyph{}
			}
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s %s", s.Transport, q.name), line, points)
		}
	}
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}

// plotBars draws one bar per label.
func plotBars(title, ylabel string, labels []string, values []float64, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	w := vg.Points(40)
	for i, v := range values {
		vals := make(plotter.Values, len(values))
		vals[i] = v
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = colorOf(labels[i])
		bars.LineStyle.Width = 0
		p.Add(bars)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(values))-0.4
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, top*1.1+1e-9
	for i, v := range values {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: float64(i), Y: v}},
			Labels: []string{fmt.Sprintf("%.2f", v)}})
		if err != nil {
			return err
		}
		l.Offset = vg.Point{X: -vg.Points(10), Y: vg.Points(3)}
		p.Add(l)
	}
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
