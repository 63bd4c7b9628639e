package collectives

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run's results (as the bench writes them) become the tables, the goal
// rows and one plot per figure; the goal rows follow the figures.
func TestReport_tablesGoalsAndPlots(t *testing.T) {
	var job2, job4 Job
	for i, j := range []*Job{&job2, &job4} {
		j.Ranks = 2 + 2*i
		for _, size := range []float64{4, 64 << 10, 64 << 20} {
			j.AllReduce = append(j.AllReduce, Point{"bytes": size, "homa_us": 20, "gloo_us": 250, "homa_busbw_gbps": 6, "gloo_busbw_gbps": 5,
				"homa_ring_us": 30, "homa_doubling_us": 25})
			j.PingPong = append(j.PingPong, Point{"bytes": size, "homa_us": 15, "gloo_us": 200})
		}
	}
	job4.AllReduce[1]["gloo_us"] = 100 // 0.2x at 64 KiB: the 4-rank goal (0.25x) is met, the 2-rank one (0.1x) would not be
	job2.DDP, job4.DDP = testDDP(2, 30, 40), testDDP(4, 50, 40)
	r := &Result{Jobs: []Job{job2, job4}}
	r.Goals = Goals(Figures(r))
	met := map[string]bool{
		"all_reduce latency at 4 B, 2 ranks, homa over gloo":          true, // 20/250
		"all_reduce latency at 64 KiB, 4 ranks, homa over gloo":       true, // 20/100
		"all_reduce bus bandwidth at 64 MiB, 2 ranks, homa over gloo": true, // 6/5
		"DDP training step time, 2 ranks, homa over gloo":             true, // 30/40
		"DDP training step time, 4 ranks, homa over gloo":             false,
		"all_reduce latency at 1 KiB, 2 ranks, homa over gloo":        false, // no 1 KiB size: absent
		"all_reduce bus bandwidth at 64 MiB, 4 ranks, homa over gloo": true,
		"all_reduce latency at 4 B, 4 ranks, homa over gloo":          true,
		"all_reduce latency at 64 KiB, 2 ranks, homa over gloo":       true,
		"all_reduce latency at 1 KiB, 4 ranks, homa over gloo":        false,
		"all_reduce latency at 1 MiB, 2 ranks, homa over gloo":        false, // no 1 MiB size: absent
	}
	if len(r.Goals) != len(met) {
		t.Fatalf("goals %+v", r.Goals)
	}
	for _, g := range r.Goals {
		if want, ok := met[g.Goal]; !ok || g.Met != want {
			t.Errorf("goal %q: got %.2f, met %v, absent %q; want met %v", g.Goal, g.Figure, g.Met, g.Absent, want)
		}
	}
	var text bytes.Buffer
	dir := t.TempDir()
	if err := r.Report().Write(&text, dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"64 MiB", "64 KiB", "12.50", "doubling/ring", "homa/gloo", "0.75", "50%", "equal", "7 of 11 met",
		"no all_reduce at 1 KiB", "collectives.json, collectives.md, collectives-allreduce-latency.png"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, text.String())
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "collectives.md"))
	if !strings.Contains(string(md), "| ranks |") || !strings.Contains(string(md), "under no_sync()") {
		t.Errorf("markdown has no table:\n%s", md)
	}
	imgs, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(imgs) != 6 {
		t.Fatalf("plots %v; want 6", imgs)
	}
	for _, p := range imgs {
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`"homa_ring_us"`)) {
		t.Fatalf("json: %v %s", err, b)
	}
}

func TestConfig_validate(t *testing.T) {
	for _, c := range []Config{{Ranks: nil, Timeout: 1}, {Ranks: []int{1}, Timeout: 1}, {Ranks: []int{17}, Timeout: 1}, {Ranks: []int{2}}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c := DefaultConfig()
	c.Root = t.TempDir()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "collectives_bench.py") {
		t.Errorf("a root without the bench: %v", err)
	}
}
