package perf

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestPlots draws the throughput plots from a recorded result and checks
// they are PNG images (HOMA_PERF_PLOT_DIR keeps them, to look at).
func TestPlots(t *testing.T) {
	dir := os.Getenv("HOMA_PERF_PLOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	var tp ThroughputResult
	src := `{"size_bytes":1000000,"window":4,"runs":[{"transport":"homa-memif","gbps":2.15,"cpu_s_per_gb":3.5},
		{"transport":"homa-ring","gbps":3.4,"cpu_s_per_gb":2.2},
		{"transport":"tcp-loopback","gbps":35.27,"cpu_s_per_gb":0.27},{"transport":"tcp-veth","gbps":8.31,"cpu_s_per_gb":0.47}]}`
	if err := json.Unmarshal([]byte(src), &tp); err != nil {
		t.Fatal(err)
	}
	imgs, err := tp.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range imgs {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s: %v", name, b)
		}
	}
}
