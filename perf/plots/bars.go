package plots

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
func (g GroupedBars) Save(path string) (bool, error) {
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
			return false, err
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
			return false, err
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
	return true, SaveLegendBeside(p, width+2*vg.Inch, 4*vg.Inch, path)
}
