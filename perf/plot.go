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

func ColorOf(name string) color.Color {
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
	p.X.Label.Text = "message size"
	p.Y.Label.Text = "RTT (µs)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = SizeTicks{}, plot.LogTicks{Prec: -1}
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
			line.Color, points.Color = ColorOf(s.Transport), ColorOf(s.Transport)
			line.Dashes = q.dash
			line.Width = vg.Points(1.5)
			if q.dash != nil {
				points.Shape = draw.BoxGlyph{}
			}
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s %s", s.Transport, q.name), line, points)
		}
	}
	return SaveLegendBeside(p, 9*vg.Inch, 5*vg.Inch, path)
}

// PlotGroupedBars draws a group of bars per group (the x axis: sizes),
// one bar per series in each (transports), coloured by series, with
// each bar's value above it; values[i][j] is series i in group j (0: no
// bar).
func PlotGroupedBars(title, ylabel string, groups, series []string, values [][]float64, path string) error {
	return GroupedBars{Title: title, YLabel: ylabel, Groups: groups, Series: series, Values: values}.Save(path)
}

// GroupedBars is a bar chart with a group of bars per group (the x axis)
// and one bar per series in each, each bar labelled above it.
type GroupedBars struct {
	Title, YLabel string
	Groups        []string
	Series        []string    // legend names, in bar order
	Values        [][]float64 // Values[i][j]: series i in group j (0: no bar)
	// Labels[i][j] is bar (i, j)'s label; nil: its value, "%.2f".
	Labels [][]string
	// Color gives series i's colour; nil: the harness's by series name.
	Color func(i int) color.Color
	// BarWidth is each bar's width; 0: from the number of series.
	BarWidth vg.Length
}

// Save draws the chart into path (PNG), its legend beside it.
func (g GroupedBars) Save(path string) error {
	p := plot.New()
	p.Title.Text = g.Title
	p.Y.Label.Text = g.YLabel
	p.Add(plotter.NewGrid())
	n := max(len(g.Series), 1)
	w := g.BarWidth
	if w == 0 {
		w = vg.Points(max(10, min(40, 160/float64(n))))
	}
	top := 0.0
	for i, name := range g.Series {
		vals := make(plotter.Values, len(g.Groups))
		copy(vals, g.Values[i])
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = ColorOf(name)
		if g.Color != nil {
			bars.Color = g.Color(i)
		}
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(bars)
		p.Legend.Add(name, bars)
		var xys plotter.XYs
		var labels []string
		for j, v := range vals {
			top = max(top, v)
			if v <= 0 {
				continue
			}
			label := fmt.Sprintf("%.2f", v)
			if g.Labels != nil {
				label = g.Labels[i][j]
			}
			xys, labels = append(xys, plotter.XY{X: float64(j), Y: v}), append(labels, label)
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
	p.NominalX(g.Groups...)
	p.X.Min, p.X.Max = -0.6, float64(len(g.Groups))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.15+1e-9 // room for the value labels
	width := max(6*vg.Inch, vg.Length(len(g.Groups)*n)*w*1.3)
	return SaveLegendBeside(p, width+2*vg.Inch, 4*vg.Inch, path)
}

// startsColor is the colour of a link's starts in the starts plots: that
// of its rtt series.
func startsColor(link string) color.Color { return ColorOf(HomaSeries(link)) }

// plotStartsFirst draws each start's first RPCs, RTT against the RPC's
// number (a line per start, coloured by link, log RTT), with each link's
// median steady P50 dashed across.
func plotStartsFirst(r *StartsResult, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("First %d %s RPCs of each fresh daemon", r.FirstRPCs, SizeName(r.SmallSize))
	p.X.Label.Text = "RPC of the start"
	p.Y.Label.Text = "RTT (µs)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	named := map[string]bool{}
	for _, x := range r.Runs {
		xys := make(plotter.XYs, 0, len(x.First))
		for k, f := range x.First {
			if f.Us > 0 {
				xys = append(xys, plotter.XY{X: float64(k + 1), Y: f.Us})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color, line.Width = startsColor(x.Link), vg.Points(0.8)
		p.Add(line)
		if !named[x.Link] {
			named[x.Link] = true
			p.Legend.Add(HomaSeries(x.Link)+" (a line per start)", line)
		}
	}
	for _, s := range r.Links {
		if s.SteadyP50Us <= 0 || len(r.Runs) == 0 {
			continue
		}
		line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: s.SteadyP50Us}, {X: float64(max(r.FirstRPCs, 2)), Y: s.SteadyP50Us}})
		if err != nil {
			return err
		}
		line.Color, line.Width, line.Dashes = startsColor(s.Link), vg.Points(2), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(HomaSeries(s.Link)+" steady P50 (median of the starts)", line)
	}
	return SaveLegendBeside(p, 9.5*vg.Inch, 5*vg.Inch, path)
}

// plotStartsLarge draws each start's large P50 against its number, a
// series of points per link.
func plotStartsLarge(r *StartsResult, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s P50 of each fresh daemon", SizeName(r.LargeSize))
	p.X.Label.Text = "start"
	p.Y.Label.Text = "P50 RTT (µs)"
	p.Add(plotter.NewGrid())
	top := 0.0
	for _, s := range r.Links {
		var xys plotter.XYs
		for _, x := range r.Runs {
			if x.Link == s.Link && x.Error == "" && x.Large.P50Us > 0 {
				xys = append(xys, plotter.XY{X: float64(x.Start), Y: x.Large.P50Us})
				top = max(top, x.Large.P50Us)
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = startsColor(s.Link), startsColor(s.Link)
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(line, points)
		p.Legend.Add(HomaSeries(s.Link), line, points)
	}
	p.Y.Min, p.Y.Max = 0, top*1.1+1e-9 // from 0, so the spread reads as a fraction
	return SaveLegendBeside(p, 8.5*vg.Inch, 4*vg.Inch, path)
}
