// Package collectives is `homa-dpdk perf collectives`: the PyTorch
// backend "homa" (whichever implementation registers it) against gloo,
// kernel TCP, in the same jobs. It serves the demo's hosts in this
// process (one worker socket each, joined by the ring switch), runs
// python/examples/collectives_bench.py and then
// python/examples/ddp_bench.py as jobs of 2 and of 4 ranks (one Python
// process per rank, env:// rendezvous), and turns what rank 0 reports
// (all_reduce latency and bus bandwidth from 4 B to 64 MiB, send/recv
// ping-pong, homa's ring and recursive doubling at every size; DDP
// training steps over homa, over gloo and without communication, and
// whether homa's trajectory is gloo's) into tables, the goal rows and
// plots.
package collectives

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/torchjob"
)

// Config is one run.
type Config struct {
	Ranks      []int  // job sizes, each a job of its own (2 and 4)
	Quick      bool   // sizes up to 1 MiB, fewer repetitions (the bench's --quick)
	Algorithms bool   // also homa's ring and recursive doubling at every size
	DDP        bool   // also the DDP training step (ddp_bench.py)
	DDPOnly    bool   // the DDP training step alone, no collectives_bench.py
	DDPSteps   int    // timed steps per variant
	DDPWarmup  int    // untimed steps per variant before
	DDPBatch   int    // samples per rank per step
	DDPWidth   int    // the MLP's input and hidden width (1024: ~10 MiB of gradients)
	DDPOut     int    // the MLP's output width
	Python     string // the interpreter with torch (Debian's /usr/bin/python3)
	Root       string // the repository: python/ and python/examples/collectives_bench.py
	Dir        string // results directory: collectives.json, the plots, each rank's log
	Timeout    time.Duration
	Out        io.Writer // progress lines
}

// DefaultConfig is the full run.
func DefaultConfig() Config {
	return Config{Ranks: []int{2, 4}, Algorithms: true, DDP: true, DDPSteps: 50, DDPWarmup: 5, DDPBatch: 1, DDPWidth: 1024, DDPOut: 512,
		Python: "/usr/bin/python3", Root: ".", Timeout: 20 * time.Minute}
}

// Smoke makes c the smoke size (CI): sizes up to 1 MiB, and a few DDP
// steps of a small model (0.6 MiB of gradients).
func (c *Config) Smoke() {
	c.Quick = true
	c.DDPSteps, c.DDPWarmup, c.DDPWidth, c.DDPOut = 5, 2, 256, 128
}

// Validate checks cfg before anything starts.
func (c Config) Validate() error {
	if len(c.Ranks) == 0 {
		return errors.New("--ranks: want at least one job size")
	}
	for _, n := range c.Ranks {
		if n < 2 || n > 16 {
			return fmt.Errorf("--ranks: %d ranks; want 2..16 (a demo host each)", n)
		}
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", c.Timeout)
	}
	if c.DDPOnly && !c.DDP {
		return errors.New("--ddp-only with --no-ddp: nothing to run")
	}
	if c.DDP && (c.DDPSteps < 1 || c.DDPWarmup < 0 || c.DDPBatch < 1 || c.DDPWidth < 1 || c.DDPOut < 1) {
		return fmt.Errorf("DDP: %d steps, %d warm-up, batch %d, width %d, out %d; want steps, batch and widths >= 1",
			c.DDPSteps, c.DDPWarmup, c.DDPBatch, c.DDPWidth, c.DDPOut)
	}
	for _, s := range c.scripts() {
		if _, err := os.Stat(filepath.Join(c.Root, "python", "examples", s)); err != nil {
			return fmt.Errorf("the benchmark script: %w (run from the repository's root, or give --root)", err)
		}
	}
	if err := exec.Command(c.Python, "-c", "import torch.distributed").Run(); err != nil {
		return fmt.Errorf("%s cannot import torch.distributed (%v): scripts/setup.sh installs python3-torch", c.Python, err)
	}
	return nil
}

// runner is what torchjob.Launch needs of cfg.
func (c Config) runner() torchjob.Runner {
	return torchjob.Runner{Python: c.Python, Timeout: c.Timeout, Out: c.Out}
}

// scripts are the per-rank scripts the run needs.
func (c Config) scripts() []string {
	var s []string
	if !c.DDPOnly {
		s = append(s, "collectives_bench.py")
	}
	if c.DDP {
		s = append(s, "ddp_bench.py")
	}
	return s
}

// Point is one size of a measurement: microseconds per call and bus
// bandwidth (NCCL's tests' definition) by variant ("homa", "gloo",
// "homa_ring", "homa_doubling"); what the bench's JSON holds.
type Point map[string]float64

// Job is one job's results.
type Job struct {
	Ranks     int     `json:"ranks"`
	AllReduce []Point `json:"all_reduce"`
	PingPong  []Point `json:"ping_pong"`
	DDP       *DDP    `json:"ddp,omitempty"`
	DDPError  string  `json:"ddp_error,omitempty"` // why the DDP job gave no results
	Seconds   float64 `json:"seconds"`
}

// Result is the run.
type Result struct {
	Jobs  []Job       `json:"jobs"`
	Goals []perf.Goal `json:"goals"` // every collectives goal of the issue, with this run's figure or why none
}

// Run serves max(Ranks) hosts and runs one job per entry of Ranks.
func Run(cfg Config) (*Result, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	jobs, err := torchjob.Jobs(cfg.Dir, cfg.Ranks, func(sockets, logDir string, n int) (Job, error) {
		start := time.Now()
		job, err := runJob(cfg, root, sockets, logDir, n)
		if err == nil {
			job.Seconds = time.Since(start).Seconds()
		}
		return job, err
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Jobs: jobs}
	res.Goals = Goals(Figures(res))
	return res, nil
}

// runJob runs the benches as jobs of n ranks, one after the other
// (collectives_bench.py unless DDPOnly, then ddp_bench.py with DDP), and
// reads rank 0's JSON.
func runJob(cfg Config, root, sockets, logDir string, n int) (Job, error) {
	job := Job{Ranks: n}
	if !cfg.DDPOnly {
		fmt.Fprintf(cfg.Out, "collectives: %d ranks, homa and gloo ...\n", n)
		out := filepath.Join(logDir, "bench.json")
		args := []string{"--json", out}
		if cfg.Quick {
			args = append(args, "--quick")
		}
		if cfg.Algorithms {
			args = append(args, "--algorithms")
		}
		if err := torchjob.Launch(cfg.runner(), root, sockets, n, "collectives_bench.py", args, logDir, "rank"); err != nil {
			return job, err
		}
		if err := readJSON(out, &job); err != nil {
			return job, err
		}
		if job.Ranks != n || len(job.AllReduce) == 0 {
			return job, fmt.Errorf("%s: %d ranks, %d sizes; want %d ranks", out, job.Ranks, len(job.AllReduce), n)
		}
	}
	if cfg.DDP {
		d, err := runDDP(cfg, root, sockets, n, logDir)
		if err != nil { // the job's other results stand; Check fails the run
			fmt.Fprintf(cfg.Out, "  %d ranks: the DDP job failed: %v\n", n, err)
			job.DDPError = err.Error()
		}
		job.DDP = d
	}
	return job, nil
}

// runDDP runs ddp_bench.py as a job of n ranks and reads and summarizes
// rank 0's JSON.
func runDDP(cfg Config, root, sockets string, n int, logDir string) (*DDP, error) {
	fmt.Fprintf(cfg.Out, "collectives: %d ranks, DDP training steps over homa, gloo and none ...\n", n)
	start, load := time.Now(), loadAvg()
	out := filepath.Join(logDir, "ddp.json")
	args := []string{"--json", out, "--steps", strconv.Itoa(cfg.DDPSteps), "--warmup", strconv.Itoa(cfg.DDPWarmup),
		"--batch", strconv.Itoa(cfg.DDPBatch), "--width", strconv.Itoa(cfg.DDPWidth), "--out", strconv.Itoa(cfg.DDPOut)}
	if err := torchjob.Launch(cfg.runner(), root, sockets, n, "ddp_bench.py", args, logDir, "ddp-rank"); err != nil {
		return nil, err
	}
	var d DDP
	if err := readJSON(out, &d); err != nil {
		return nil, err
	}
	if err := d.validate(n); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	d.Summarize()
	d.Seconds, d.LoadAvg = time.Since(start).Seconds(), load
	return &d, nil
}

// readJSON reads rank 0's results from path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("rank 0 wrote no results: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Figures are the run's figures for the goal rows
// (Goals): per job, homa's all_reduce time over gloo's and
// its bus bandwidth over gloo's at each size, and its DDP step over
// gloo's (none when the trajectories differ).
func Figures(r *Result) []GoalFigures {
	out := make([]GoalFigures, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		f := GoalFigures{Ranks: j.Ranks, LatencyRatio: map[int]float64{}, BusBWRatio: map[int]float64{}}
		for _, p := range j.AllReduce {
			size := int(p["bytes"])
			if p["homa_us"] > 0 && p["gloo_us"] > 0 {
				f.LatencyRatio[size] = p["homa_us"] / p["gloo_us"]
			}
			if p["homa_busbw_gbps"] > 0 && p["gloo_busbw_gbps"] > 0 {
				f.BusBWRatio[size] = p["homa_busbw_gbps"] / p["gloo_busbw_gbps"]
			}
		}
		if j.DDPError != "" {
			f.DDPAbsent = "the DDP job failed"
		}
		if d := j.DDP; d != nil {
			if d.Differ != "" {
				f.DDPAbsent = "homa's trajectory differs from gloo's"
			} else {
				f.DDPStepRatio = d.StepRatio()
			}
		}
		out = append(out, f)
	}
	return out
}
