package scale

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// The table gives each figure over its 1-shard value, and the plot is a
// PNG image.
func TestResult_tableAndPlot(t *testing.T) {
	r := &Result{CPUs: 2, Points: []Point{
		{Shards: 1, EngineRPCsPerSec: 1_000_000, EngineGbps: 60, DemoRPCsPerSec: 1_200_000},
		{Shards: 2, EngineRPCsPerSec: 1_900_000, EngineGbps: 90, DemoRPCsPerSec: 2_100_000},
	}}
	tb := r.Table()
	if len(tb.Rows) != 2 || tb.Rows[1][2] != "1.90" || tb.Rows[1][4] != "1.50" || tb.Rows[1][6] != "1.75" {
		t.Errorf("%+v", tb.Rows)
	}
	dir := t.TempDir()
	if imgs, err := r.Report().WriteFiles(dir); err != nil || len(imgs) != 1 {
		t.Fatalf("plots %v: %v", imgs, err)
	}
	f, err := os.Open(filepath.Join(dir, "scale.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatal(err)
	}
}
