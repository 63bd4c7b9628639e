package collectives

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// testDDP is a job's DDP as the bench would write it, summarized: ten
// steps of the given medians (ms), compute 15 ms, trajectories equal.
func testDDP(ranks int, homa, gloo float64) *DDP {
	d := &DDP{Ranks: ranks, Model: "MLP", Params: 2_624_000, GradBytes: 10_496_000, Batch: 4, Warmup: 2, Steps: 10,
		StepMs: map[string][]float64{}, ParamMaxUpdate: 3e-3, ParamMaxAbsDiff: 1e-9, LossMaxRelDiff: 1e-8,
		ReplicaMaxAbsDiff: map[string]float64{"homa": 0, "gloo": 0}, FinalLoss: map[string]float64{"homa": 0.9, "gloo": 0.9}}
	for k, m := range map[string]float64{"homa": homa, "gloo": gloo, "compute": 15} {
		for _, o := range []float64{4.5, -4, 3, -3, 2, -2, 1, -1, 0, 0} { // median m, p90 m+3.15
			d.StepMs[k] = append(d.StepMs[k], m+o)
		}
	}
	d.Summarize()
	return d
}

// Step statistics, communication shares and the ratio come from the
// steps; the verdict is "equal" within the tolerances.
func TestDDP_summarize(t *testing.T) {
	d := testDDP(2, 30, 40)
	if s := d.Stats["homa"]; s.Median != 30 || math.Abs(s.P90-33.15) > 1e-9 || s.Min != 26 || s.Max != 34.5 {
		t.Errorf("homa stats %+v", s)
	}
	if d.CommShare["homa"] != 0.5 || math.Abs(d.CommShare["gloo"]-0.625) > 1e-12 {
		t.Errorf("comm shares %v", d.CommShare)
	}
	if d.StepRatio() != 0.75 || d.Differ != "" {
		t.Errorf("ratio %v differ %q", d.StepRatio(), d.Differ)
	}
	r := &Result{Jobs: []Job{{Ranks: 2, DDP: d}}}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"comm_share"`) || !strings.Contains(string(b), `"p90_ms"`) {
		t.Errorf("json: %v %s", err, b)
	}
}

// Trajectories that part by more than rounding fail the check, and the
// job's step-time goal has no figure then.
func TestDDP_differ(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*DDP)
		want string
	}{
		"losses":       {func(d *DDP) { d.LossMaxRelDiff = 1e-3 }, "losses differ"},
		"NaN loss":     {func(d *DDP) { d.LossMaxRelDiff = math.NaN() }, "losses differ"},
		"parameters":   {func(d *DDP) { d.ParamMaxAbsDiff = 1e-6 }, "parameters differ"},
		"no training":  {func(d *DDP) { d.ParamMaxUpdate = 0 }, "moved no parameter"},
		"homa replica": {func(d *DDP) { d.ReplicaMaxAbsDiff["homa"] = 1e-6 }, "homa's replicas"},
	} {
		d := testDDP(4, 30, 40)
		c.mod(d)
		d.Summarize()
		if !strings.Contains(d.Differ, c.want) {
			t.Errorf("%s: differ %q; want %q", name, d.Differ, c.want)
		}
		r := &Result{Jobs: []Job{{Ranks: 4, DDP: d}}}
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), "4 ranks") {
			t.Errorf("%s: check %v", name, err)
		}
		f := Figures(r)
		if f[0].DDPStepRatio != 0 || f[0].DDPAbsent == "" {
			t.Errorf("%s: figures %+v", name, f[0])
		}
	}
}

// A DDP job that failed leaves the job's other results, a row that says
// so, no figure for its goal, and a failed run.
func TestDDP_jobFailed(t *testing.T) {
	r := &Result{Jobs: []Job{
		{Ranks: 2, DDP: testDDP(2, 30, 40)},
		{Ranks: 4, AllReduce: []Point{{"bytes": 4, "homa_us": 20, "gloo_us": 250}}, DDPError: "rank 3: exit status 1"},
	}}
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "4 ranks: the job failed: rank 3") {
		t.Errorf("check %v", err)
	}
	if f := Figures(r); f[1].DDPAbsent != "the DDP job failed" || f[1].LatencyRatio[4] != 0.08 {
		t.Errorf("figures %+v", f[1])
	}
	var text strings.Builder
	r.Report().Text(&text)
	if !strings.Contains(text.String(), "JOB FAILED: rank 3") || !strings.Contains(text.String(), "0.75") {
		t.Errorf("report:\n%s", text.String())
	}
	r.Jobs = r.Jobs[1:] // every DDP job failed: the trajectory table alone
	if ts := ddpTables(r); len(ts) != 1 || !strings.Contains(ts[0].Title, "trajectory") {
		t.Errorf("tables %+v", ts)
	}
}

func TestDDP_validate(t *testing.T) {
	d := testDDP(2, 30, 40)
	if err := d.validate(2); err != nil {
		t.Error(err)
	}
	if err := d.validate(4); err == nil {
		t.Error("ranks 2 accepted for a 4-rank job")
	}
	d.StepMs["compute"] = d.StepMs["compute"][:3]
	if err := d.validate(2); err == nil || !strings.Contains(err.Error(), "compute") {
		t.Errorf("3 compute steps of 10: %v", err)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	for q, want := range map[float64]float64{0: 1, 0.5: 2.5, 0.9: 3.7, 1: 4} {
		if got := quantile(s, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := quantile([]float64{7}, 0.9); got != 7 {
		t.Errorf("one value: %v", got)
	}
}

func TestConfig_smokeAndDDPFlags(t *testing.T) {
	c := DefaultConfig()
	c.Smoke()
	if !c.Quick || !c.DDP || c.DDPSteps > 10 || c.DDPWidth >= DefaultConfig().DDPWidth {
		t.Errorf("smoke %+v", c)
	}
	for _, mod := range []func(*Config){
		func(c *Config) { c.DDPOnly, c.DDP = true, false },
		func(c *Config) { c.DDPSteps = 0 },
		func(c *Config) { c.DDPBatch = 0 },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c = DefaultConfig()
	c.DDPOnly = true
	if s := c.scripts(); len(s) != 1 || s[0] != "ddp_bench.py" {
		t.Errorf("--ddp-only runs %v", s)
	}
	c.DDPOnly, c.DDP = false, false
	if s := c.scripts(); len(s) != 1 || s[0] != "collectives_bench.py" {
		t.Errorf("--no-ddp runs %v", s)
	}
}
