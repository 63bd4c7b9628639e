package collectives

import (
	"bytes"
	"encoding/json"
	"os"
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
	job4.AllReduce[1]["gloo_us"] = 100 // 5x at 64 KiB: the 4-rank latency goal is not met
	r := &Result{Jobs: []Job{job2, job4}}
	r.Goals = goals(r)
	want := []bool{true, true, false, true}
	if len(r.Goals) != len(want) {
		t.Fatalf("goals %+v", r.Goals)
	}
	for i, g := range r.Goals {
		if g.Met != want[i] {
			t.Errorf("goal %q: got %.2f, met %v; want met %v", g.What, g.Got, g.Met, want[i])
		}
	}
	if g := r.Goals[2]; g.Got != 5 {
		t.Errorf("4-rank latency goal: %.2f, want the worst size's 5", g.Got)
	}
	var text, md bytes.Buffer
	Report(r, &text)
	Markdown(r, &md)
	for _, s := range []string{"64 MiB", "64 KiB", "12.50", "doubling/ring"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, text.String())
		}
	}
	if !strings.Contains(md.String(), "| ranks |") {
		t.Errorf("markdown has no table:\n%s", md.String())
	}
	dir := t.TempDir()
	paths, err := Plot(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 {
		t.Fatalf("plots %v; want 4", paths)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`"homa_ring_us"`)) {
		t.Fatalf("json: %v %s", err, b)
	}
}

func TestSizeName(t *testing.T) {
	for n, want := range map[float64]string{4: "4 B", 1000: "1000 B", 1 << 10: "1 KiB", 64 << 20: "64 MiB", 256 << 10: "256 KiB"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%v) = %q, want %q", n, got, want)
		}
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
