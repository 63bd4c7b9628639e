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

// plotGroupedBars draws a group of bars per group (the x axis: sizes),
// one bar per series in each (transports), coloured by series, with
// each bar's value above it; values[i][j] is series i in group j (0: no
// bar).
func plotGroupedBars(title, ylabel string, groups, series []string, values [][]float64, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	n := max(len(series), 1)
	w := vg.Points(max(10, min(40, 160/float64(n))))
	top := 0.0
	for i, name := range series {
		vals := make(plotter.Values, len(groups))
		copy(vals, values[i])
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = colorOf(name)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(bars)
		p.Legend.Add(name, bars)
		var xys plotter.XYs
		var labels []string
		for j, v := range vals {
			top = max(top, v)
			if v > 0 {
				xys, labels = append(xys, plotter.XY{X: float64(j), Y: v}), append(labels, fmt.Sprintf("%.2f", v))
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for k := range l.TextStyle {
			l.TextStyle[k].Font.Size = vg.Points(7)
		}
		l.Offset = vg.Point{X: bars.Offset - w/2, Y: vg.Points(2)}
		p.Add(l)
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.3+1e-9 // room for the legend
	p.Legend.Top = true
	width := max(6*vg.Inch, vg.Length(len(groups)*len(series))*w*1.3)
	return p.Save(width, 4*vg.Inch, path)
}
