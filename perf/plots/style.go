// Package plots draws the perf harness's charts: the series' colours,
// sizes on a log axis, grouped bars and line charts, each saved with its
// legend in a column of its own. A scenario puts its charts in its
// report (perf.Report.Plots); the report saves them beside itself.
package plots

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var seriesColors = map[string]color.Color{
	"homa-memif":   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"homa-ring":    color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"tcp-loopback": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"tcp-veth":     color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// Palette is the colours of series without one of their own, in order.
var Palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// ColorOf is the colour of a series of the harness's transports
// (homa-memif, homa-ring, tcp-loopback, tcp-veth); black for another.
func ColorOf(name string) color.Color {
	if c, ok := seriesColors[name]; ok {
		return c
	}
	return color.Black
}

// Dashed and Dotted are dash patterns: a second percentile beside the
// first (P99 beside P50), a reference line, another job size.
var (
	Dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	Dotted = []vg.Length{vg.Points(2), vg.Points(2)}
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
			ticks[i].Label = perf.SizeName(int(math.Round(ticks[i].Value)))
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
	r := leg.Rectangle(dc)
	col := r.Max.X - r.Min.X + vg.Points(12)
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
