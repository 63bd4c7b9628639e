package plots

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Lines is a line chart, its legend beside it: what every scenario's
// curves are drawn as (RTT or slowdown against message size, a figure
// per start, per step or per shard).
type Lines struct {
	Title, X, Y string // the title and the axes' labels
	// LogX and LogY make an axis logarithmic; a log x axis is of message
	// sizes (SizeTicks) unless XTicks marks it.
	LogX, LogY bool
	XTicks     plot.Ticker
	// YMin and YMax bound the y axis where not 0; YFromZero starts it at
	// 0 (a spread then reads as a fraction of the whole).
	YMin, YMax float64
	YFromZero  bool
	W, H       vg.Length // the image's size; 0: 9 x 5 inches
	Lines      []Line
}

// Line is one line of a chart.
type Line struct {
	Name   string      // in the legend
	XY     plotter.XYs // its points; a line without any is not drawn
	Color  color.Color // nil: ColorOf(Name)
	Dashes []vg.Length // nil: solid (Dashed, Dotted)
	// Glyph marks each point (nil: none); Radius its size (0: 2.5 points).
	Glyph  draw.GlyphDrawer
	Radius vg.Length
	Width  vg.Length // 0: 1.5 points
}

// Ring and Box mark a line's points.
var (
	Ring draw.GlyphDrawer = draw.RingGlyph{}
	Box  draw.GlyphDrawer = draw.BoxGlyph{}
)

// Save draws the chart into path (PNG, or SVG by its extension); false,
// and no file, when no line has a point.
func (c Lines) Save(path string) (bool, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.X, c.Y
	if c.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, SizeTicks{}
	}
	if c.XTicks != nil {
		p.X.Tick.Marker = c.XTicks
	}
	if c.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	drawn := 0
	for _, l := range c.Lines {
		if len(l.XY) == 0 {
			continue
		}
		line, err := plotter.NewLine(l.XY)
		if err != nil {
			return false, err
		}
		line.Color, line.Dashes, line.Width = l.Color, l.Dashes, l.Width
		if line.Color == nil {
			line.Color = ColorOf(l.Name)
		}
		if line.Width == 0 {
			line.Width = vg.Points(1.5)
		}
		things := []plot.Thumbnailer{line}
		p.Add(line)
		if l.Glyph != nil {
			pts, err := plotter.NewScatter(l.XY)
			if err != nil {
				return false, err
			}
			pts.Color, pts.Shape, pts.Radius = line.Color, l.Glyph, l.Radius
			if pts.Radius == 0 {
				pts.Radius = vg.Points(2.5)
			}
			p.Add(pts)
			things = append(things, pts)
		}
		p.Legend.Add(l.Name, things...)
		drawn++
	}
	if drawn == 0 {
		return false, nil
	}
	if c.YMin != 0 || c.YFromZero {
		p.Y.Min = c.YMin
	}
	if c.YMax != 0 {
		p.Y.Max = c.YMax
	}
	w, h := c.W, c.H
	if w == 0 || h == 0 {
		w, h = 9*vg.Inch, 5*vg.Inch
	}
	return true, SaveLegendBeside(p, w, h, path)
}

// XYs are the points (x(v), y(v)) of vs whose y is above 0 (a log axis
// has no room for the rest).
func XYs[T any](vs []T, x, y func(T) float64) plotter.XYs {
	var out plotter.XYs
	for _, v := range vs {
		if yv := y(v); yv > 0 {
			out = append(out, plotter.XY{X: x(v), Y: yv})
		}
	}
	return out
}
