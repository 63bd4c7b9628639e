package collectives

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// DDP is one job's DistributedDataParallel training steps, as
// python/examples/ddp_bench.py writes them (rank 0), and what Summarize
// makes of them. Three replicas of one MLP step in turn: DDP over homa,
// DDP over gloo, and DDP over gloo under no_sync() (compute, no
// all_reduce: the baseline for the communication share).
type DDP struct {
	Ranks     int     `json:"ranks"`
	Model     string  `json:"model"`
	Params    int     `json:"params"`
	GradBytes int     `json:"grad_bytes"` // float32 gradients all_reduced per step
	Batch     int     `json:"batch"`      // samples per rank per step
	Warmup    int     `json:"warmup"`     // untimed steps per variant before
	Steps     int     `json:"steps"`      // timed steps per variant
	LR        float64 `json:"lr"`
	Torch     string  `json:"torch"`     // torch.__version__
	HomaImpl  string  `json:"homa_impl"` // the class of the process group "homa" made: which implementation ran

	// StepMs is each timed step's milliseconds (its slowest rank's) by
	// variant: "homa", "gloo", "compute".
	StepMs map[string][]float64 `json:"step_ms"`

	// homa's trajectory against gloo's (the same seeds and batches): the
	// largest relative difference of the two replicas' losses at any step
	// on any rank; the largest difference of any parameter at the end,
	// absolute and relative to the largest parameter; and how far
	// training moved any parameter from its initial value, the scale the
	// parameter difference is judged against.
	LossMaxRelDiff  float64 `json:"loss_max_rel_diff"`
	ParamMaxAbsDiff float64 `json:"param_max_abs_diff"`
	ParamMaxRelDiff float64 `json:"param_max_rel_diff"`
	ParamMaxUpdate  float64 `json:"param_max_update"`
	// ReplicaMaxAbsDiff is, per backend, the largest difference between
	// a rank's parameters and rank 0's at the end (DDP keeps them equal).
	ReplicaMaxAbsDiff map[string]float64 `json:"replica_max_abs_diff"`
	FinalLoss         map[string]float64 `json:"final_loss"`

	// Filled by Summarize.
	Stats     map[string]StepStats `json:"stats"`      // by variant
	CommShare map[string]float64   `json:"comm_share"` // 1 - compute/step (medians), by backend
	Differ    string               `json:"differ,omitempty"`
	Seconds   float64              `json:"seconds"`
	// LoadAvg is /proc/loadavg just before the job: other work on the
	// machine, which slows the variants alike only as far as it is even.
	LoadAvg string `json:"loadavg_before"`
}

// StepStats are a variant's step times in milliseconds.
type StepStats struct {
	Median float64 `json:"median_ms"`
	P90    float64 `json:"p90_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
}

// Tolerances of the trajectory check. All_reduce sums in an order of its
// algorithm's (gloo's and homa's differ), so float32 gradients may differ
// in their last bits and the trajectories by a few ulps a step: measured
// here, 4 ranks, 55 steps, losses 2e-7 apart (relative) and parameters
// 3e-6 of the largest update; 2 ranks agree exactly. Gradients off by
// 1e-4 (relative) on every all_reduce move the parameters by 1e-4 of the
// update, the resolution of the check; a wrong sum, a missing part or a
// stale bucket moves them by the size of an update.
const (
	// LossTolerance bounds the relative difference of the losses.
	LossTolerance = 1e-5
	// ParamTolerance bounds the parameters' difference as a fraction of
	// how far training moved them (ParamMaxUpdate), and the replicas'.
	ParamTolerance = 1e-4
)

// ddpVariants are the variants in the order the tables and plots show
// them.
var ddpVariants = []string{"homa", "gloo", "compute"}

// validate checks what the bench wrote against what was asked.
func (d *DDP) validate(ranks int) error {
	if d.Ranks != ranks {
		return fmt.Errorf("%d ranks; want %d", d.Ranks, ranks)
	}
	for _, k := range ddpVariants {
		if n := len(d.StepMs[k]); n == 0 || n != d.Steps {
			return fmt.Errorf("%d %s steps; want %d (and at least one)", n, k, d.Steps)
		}
	}
	return nil
}

// Summarize computes the step statistics, the communication shares and
// the trajectory verdict (Differ, "" when homa's and gloo's agree).
func (d *DDP) Summarize() {
	d.Stats = map[string]StepStats{}
	for _, k := range ddpVariants {
		if ts := d.StepMs[k]; len(ts) > 0 {
			s := slices.Clone(ts)
			slices.Sort(s)
			d.Stats[k] = StepStats{Median: quantile(s, 0.5), P90: quantile(s, 0.9), Min: s[0], Max: s[len(s)-1]}
		}
	}
	d.CommShare = map[string]float64{}
	if c := d.Stats["compute"].Median; c > 0 {
		for _, k := range []string{"homa", "gloo"} {
			if m := d.Stats[k].Median; m > 0 {
				d.CommShare[k] = 1 - c/m
			}
		}
	}
	d.Differ = d.differ()
}

// differ says how homa's trajectory is not gloo's, or "".
func (d *DDP) differ() string {
	var why []string
	if !(d.LossMaxRelDiff <= LossTolerance) { // NaN fails too
		why = append(why, fmt.Sprintf("losses differ by up to %.2e (relative; tolerance %.0e)", d.LossMaxRelDiff, LossTolerance))
	}
	lim := ParamTolerance * d.ParamMaxUpdate
	switch {
	case !(d.ParamMaxUpdate > 0):
		why = append(why, "training moved no parameter, so the check proves nothing")
	case !(d.ParamMaxAbsDiff <= lim):
		why = append(why, fmt.Sprintf("parameters differ by up to %.2e (%.2g of the largest update %.2e; tolerance %.0e)",
			d.ParamMaxAbsDiff, d.ParamMaxAbsDiff/d.ParamMaxUpdate, d.ParamMaxUpdate, ParamTolerance))
	}
	for _, k := range []string{"homa", "gloo"} {
		v, ok := d.ReplicaMaxAbsDiff[k]
		if ok && !(v <= lim) {
			why = append(why, fmt.Sprintf("%s's replicas differ across ranks by up to %.2e", k, v))
		}
	}
	return strings.Join(why, "; ")
}

// StepRatio is homa's median step over gloo's (0 without both).
func (d *DDP) StepRatio() float64 {
	h, g := d.Stats["homa"].Median, d.Stats["gloo"].Median
	if h <= 0 || g <= 0 {
		return 0
	}
	return h / g
}

// quantile is the q-quantile of sorted s, interpolated between the two
// nearest ranks.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// Check is the run's verdict beyond the figures: an error naming each job
// whose DDP job failed or whose homa trajectory is not gloo's (the
// scenario fails then, after writing its results).
func (r *Result) Check() error {
	var bad []string
	for _, j := range r.Jobs {
		switch {
		case j.DDPError != "":
			bad = append(bad, fmt.Sprintf("%d ranks: the job failed: %s", j.Ranks, j.DDPError))
		case j.DDP != nil && j.DDP.Differ != "":
			bad = append(bad, fmt.Sprintf("%d ranks: homa's trajectory is not gloo's: %s", j.Ranks, j.DDP.Differ))
		}
	}
	if len(bad) > 0 {
		return errors.New("the DDP training step: " + strings.Join(bad, "; "))
	}
	return nil
}

// loadAvg is /proc/loadavg's first three fields ("" where there is none).
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
