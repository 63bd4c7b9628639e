package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// isPNG fails t unless path is a PNG image of some size.
func isPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: %v", path, b)
	}
}

// A line chart draws its lines (log axes, dashes, glyphs, a line without
// points left out); one with no point draws nothing and writes no file.
func TestLines_save(t *testing.T) {
	dir := t.TempDir()
	size := func(v float64) float64 { return v }
	c := Lines{Title: "RTT", X: "size", Y: "µs", LogX: true, LogY: true, YMin: 1, Lines: []Line{
		{Name: "homa-ring P50", XY: XYs([]float64{100, 1000, 1e6}, size, func(v float64) float64 { return v / 10 }), Glyph: Ring},
		{Name: "homa-ring P99", XY: plotter.XYs{{X: 100, Y: 20}, {X: 1e6, Y: 2e5}}, Dashes: Dashed, Glyph: Box},
		{Name: "tcp-veth P50"},
	}}
	ok, err := c.Save(filepath.Join(dir, "a.png"))
	if err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	isPNG(t, filepath.Join(dir, "a.png"))
	ok, err = Lines{Title: "empty", Lines: []Line{{Name: "x"}}}.Save(filepath.Join(dir, "b.png"))
	if err != nil || ok {
		t.Errorf("an empty chart: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.png")); err == nil {
		t.Error("an empty chart wrote its file")
	}
}

// XYs leaves out the points of no value, which a log axis cannot place.
func TestXYs_positiveOnly(t *testing.T) {
	xy := XYs([]int{1, 2, 3}, func(v int) float64 { return float64(v) }, func(v int) float64 { return float64(v - 2) })
	if len(xy) != 1 || xy[0].X != 3 || xy[0].Y != 1 {
		t.Errorf("%v", xy)
	}
}

// Grouped bars: a group per size, a bar per series, labelled.
func TestGroupedBars_save(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bars.png")
	g := GroupedBars{Title: "Gbps", YLabel: "Gbps", Groups: []string{"1 MB", "8 MB"}, Series: []string{"homa-ring", "tcp-veth"},
		Values: [][]float64{{3, 4}, {8, 0}}}
	if ok, err := g.Save(path); err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	isPNG(t, path)
}

// Sizes on a log axis are ticked in the harness's units.
func TestSizeTicks_labels(t *testing.T) {
	var labels []string
	for _, tk := range (SizeTicks{}).Ticks(100, 1e6) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if len(labels) == 0 || labels[0] != "100 B" || labels[len(labels)-1] != "1 MB" {
		t.Errorf("%v", labels)
	}
}
