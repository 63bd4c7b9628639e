package throughput

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
	var tp Result
	src := `{"sizes":[{"size_bytes":1000000,"window":4},{"size_bytes":8000000,"window":4},{"size_bytes":64000000,"window":2}],"runs":[
		{"transport":"homa-memif","size_bytes":1000000,"window":4,"gbps":2.15,"cpu_s_per_gb":3.5},
		{"transport":"homa-memif","size_bytes":8000000,"window":4,"gbps":2.4,"cpu_s_per_gb":3.1},
		{"transport":"homa-memif","size_bytes":64000000,"window":2,"gbps":2.5,"cpu_s_per_gb":3},
		{"transport":"homa-ring","size_bytes":1000000,"window":4,"gbps":3.4,"cpu_s_per_gb":2.2},
		{"transport":"homa-ring","size_bytes":8000000,"window":4,"gbps":3.9,"cpu_s_per_gb":2},
		{"transport":"homa-ring","size_bytes":64000000,"window":2,"gbps":4.1,"cpu_s_per_gb":1.9},
		{"transport":"tcp-loopback","size_bytes":1000000,"window":4,"gbps":35.27,"cpu_s_per_gb":0.27},
		{"transport":"tcp-loopback","size_bytes":8000000,"window":4,"gbps":30.1,"cpu_s_per_gb":0.3},
		{"transport":"tcp-loopback","size_bytes":64000000,"window":2,"gbps":25.5,"cpu_s_per_gb":0.33},
		{"transport":"tcp-veth","size_bytes":1000000,"window":4,"gbps":8.31,"cpu_s_per_gb":0.47},
		{"transport":"tcp-veth","size_bytes":8000000,"window":4,"gbps":8.1,"cpu_s_per_gb":0.5}]}`
	if err := json.Unmarshal([]byte(src), &tp); err != nil {
		t.Fatal(err)
	}
	imgs, err := tp.Report().WriteFiles(dir)
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
