package perf

import (
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SizeTicks marks a log axis of message sizes in bytes: a labelled tick
// at each power of ten, in B, KB and MB (10^3 and 10^6 bytes, as the
// scenarios' sizes are), and unlabelled ticks between.
type SizeTicks struct{}

// Ticks returns the ticks for [min, max].
func (SizeTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = SizeName(int(math.Round(ticks[i].Value)))
		}
	}
	return ticks
}

// SaveLegendBeside writes p to path (PNG, or SVG by its extension) with
// the legend in a column of its own on the right, so that it covers no
// data; w is the whole image's width.
func SaveLegendBeside(p *plot.Plot, w, h vg.Length, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	cw, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	leg := p.Legend
	p.Legend = plot.NewLegend() // p draws none of its own
	defer func() { p.Legend = leg }()
	col := legendWidth(&leg, dc) + vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -col, 0, 0))
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = vg.Points(6), -vg.Points(24)
	leg.Draw(draw.Crop(dc, w-col, 0, 0, 0))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// legendWidth is how wide leg draws on c.
func legendWidth(leg *plot.Legend, c draw.Canvas) vg.Length {
	r := leg.Rectangle(c)
	return r.Max.X - r.Min.X
}
