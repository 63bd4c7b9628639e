// Package ncclring is `homa-dpdk perf nccl`: NCCL's ring all-reduce over
// host buffers through the homa NCCL net plugin (nccl/), beside the same
// ring over libhoma directly (what the plugin costs) and gloo's
// all_reduce, in one run. It serves the demo's hosts in this process (a
// worker socket each, the ring switch between them, as perf collectives
// does), runs nccl/build/bench-allreduce in both modes and
// python/examples/collectives_bench.py --gloo-sweep as jobs of 2 and 4
// ranks (rank r on host r), and writes nccl-tests' columns per size and
// the goal rows.
package ncclring

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/torchjob"
)

// Modes are the bench's: through the plugin's v10 table, and the same
// ring over libhoma directly.
var Modes = []string{"plugin", "libhoma"}

// Config is one run.
type Config struct {
	Ranks   []int  // job sizes, each a job of its own (2 and 4)
	Max     int    // the largest all-reduce, bytes (sizes double from 8 B)
	Iters   int    // timed all-reduces per size; 0: by size, as the bench and the sweep choose
	Bench   string // nccl/build/bench-allreduce (its plugin beside it)
	Python  string // the interpreter with torch, for gloo
	Root    string // the repository: python/examples/collectives_bench.py
	Dir     string // results directory: nccl.json, nccl.md, each job's logs
	Timeout time.Duration
	Out     io.Writer // progress lines
}

// DefaultConfig is the full run: 8 B to 64 MiB, 2 and 4 ranks.
func DefaultConfig() Config {
	return Config{Ranks: []int{2, 4}, Max: 64 << 20, Bench: "nccl/build/bench-allreduce", Python: "/usr/bin/python3",
		Root: ".", Timeout: 20 * time.Minute}
}

// Smoke makes c the smoke size (CI): 2 ranks, 8 B to 64 KiB, 5 timed
// all-reduces a size.
func (c *Config) Smoke() {
	c.Ranks, c.Max, c.Iters = []int{2}, 64<<10, 5
}

// Validate checks c before anything starts.
func (c Config) Validate() error {
	if len(c.Ranks) == 0 {
		return errors.New("--ranks: want at least one job size")
	}
	for _, n := range c.Ranks {
		if n < 2 || n > 8 {
			return fmt.Errorf("--ranks: %d ranks; want 2..8 (the bench forks 8 at most, a demo host each)", n)
		}
	}
	if c.Max < 8 || c.Max&(c.Max-1) != 0 {
		return fmt.Errorf("--max %d: want a power of two of 8 bytes or more", c.Max)
	}
	if c.Iters < 0 || c.Iters > 1000 {
		return fmt.Errorf("--iters %d: want 0 (by size) to 1000", c.Iters)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", c.Timeout)
	}
	if _, err := os.Stat(c.Bench); err != nil {
		return fmt.Errorf("the bench: %w (build it with `make -C nccl`; run from the repository's root, or give --bench)", err)
	}
	if _, err := os.Stat(filepath.Join(c.Root, "python", "examples", "collectives_bench.py")); err != nil {
		return fmt.Errorf("gloo's sweep: %w (run from the repository's root, or give --root)", err)
	}
	if err := exec.Command(c.Python, "-c", "import torch.distributed").Run(); err != nil {
		return fmt.Errorf("%s cannot import torch.distributed (%v): scripts/setup.sh installs python3-torch", c.Python, err)
	}
	return nil
}

// Point is one size of one series, in nccl-tests' columns.
type Point struct {
	Bytes    int     `json:"bytes"`
	Iters    int     `json:"iters"`
	Msgs     int     `json:"msgs,omitempty"` // isends per rank per all-reduce (the bench's modes)
	TimeUs   float64 `json:"time_us"`        // median of the iterations, each the slowest rank's
	AlgBW    float64 `json:"algbw_gbps"`     // bytes / time, GB/s (nccl-tests' unit)
	BusBW    float64 `json:"busbw_gbps"`     // algbw x 2(n-1)/n, GB/s
	CPUPerGB float64 `json:"cpu_s_per_gb"`   // CPU seconds of all ranks per GB reduced (bytes x iters)
}

// Job is one job size's series.
type Job struct {
	Ranks   int     `json:"ranks"`
	Plugin  []Point `json:"plugin"`
	Libhoma []Point `json:"libhoma"`
	Gloo    []Point `json:"gloo"`
	Seconds float64 `json:"seconds"`
}

// Result is the run.
type Result struct {
	CPUs  int         `json:"cpus"`
	Jobs  []Job       `json:"jobs"`
	Goals []perf.Goal `json:"goals"` // the goals for the NCCL shape, this run's figures or why none
}

// Run serves max(Ranks) hosts and runs each job size: the bench in each
// mode, then gloo's sweep.
func Run(cfg Config) (*Result, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	bench, err := filepath.Abs(cfg.Bench)
	if err != nil {
		return nil, err
	}
	jobs, err := torchjob.Jobs(cfg.Dir, cfg.Ranks, func(sockets, logDir string, n int) (Job, error) {
		start := time.Now()
		job := Job{Ranks: n}
		for _, mode := range Modes {
			fmt.Fprintf(cfg.Out, "nccl: %d ranks, the ring %s ...\n", n, via(mode))
			pts, err := runBench(cfg, bench, sockets, logDir, n, mode)
			if err != nil {
				return job, err
			}
			if mode == "plugin" {
				job.Plugin = pts
			} else {
				job.Libhoma = pts
			}
		}
		fmt.Fprintf(cfg.Out, "nccl: %d ranks, gloo's all_reduce ...\n", n)
		gloo, err := runGloo(cfg, root, sockets, logDir, n)
		job.Gloo, job.Seconds = gloo, time.Since(start).Seconds()
		return job, err
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Jobs: jobs}
	res.CPUs = runtime.NumCPU()
	res.Goals = Goals(res)
	return res, nil
}

func via(mode string) string {
	if mode == "plugin" {
		return "through the plugin"
	}
	return "over libhoma directly"
}

// runBench runs the bench as a job of n ranks in mode, rank r on host
// r+1's socket, and reads its lines.
func runBench(cfg Config, bench, sockets, logDir string, n int, mode string) ([]Point, error) {
	socks := make([]string, n)
	for r := range n {
		socks[r] = filepath.Join(sockets, fmt.Sprintf("10.0.0.%d.sock", r+1))
	}
	args := []string{"--ranks", strconv.Itoa(n), "--mode", mode, "--max", strconv.Itoa(cfg.Max)}
	if cfg.Iters > 0 {
		args = append(args, "--iters", strconv.Itoa(cfg.Iters))
	}
	logPath := filepath.Join(logDir, mode+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	c := exec.Command(bench, args...)
	c.Env = append(os.Environ(), "HARNESS_SOCKETS="+strings.Join(socks, ","))
	var out bytes.Buffer
	c.Stdout = io.MultiWriter(&out, log)
	c.Stderr = log
	if err := c.Start(); err != nil {
		return nil, err
	}
	timer := time.AfterFunc(cfg.Timeout, func() { c.Process.Kill() })
	defer timer.Stop()
	if err := c.Wait(); err != nil {
		return nil, fmt.Errorf("the %d-rank %s bench failed: %v (log %s):\n%s", n, mode, err, logPath, perfTail(logPath))
	}
	pts, err := ParseBench(&out, n, mode)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logPath, err)
	}
	return pts, nil
}

func perfTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ParseBench reads the bench's JSON lines, which must be of n ranks and
// mode, one a size, smallest first.
func ParseBench(r io.Reader, n int, mode string) ([]Point, error) {
	var pts []Point
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var p struct {
			Point
			Ranks int    `json:"ranks"`
			Mode  string `json:"mode"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return nil, fmt.Errorf("a bench line %q: %w", line, err)
		}
		if p.Ranks != n || p.Mode != mode {
			return nil, fmt.Errorf("a bench line of %d ranks, mode %q; want %d, %q", p.Ranks, p.Mode, n, mode)
		}
		if len(pts) > 0 && p.Bytes <= pts[len(pts)-1].Bytes {
			return nil, fmt.Errorf("the bench's sizes are out of order at %d bytes", p.Bytes)
		}
		pts = append(pts, p.Point)
	}
	if len(pts) == 0 {
		return nil, errors.New("the bench printed no sizes")
	}
	return pts, sc.Err()
}

// runGloo runs collectives_bench.py --gloo-sweep as a job of n ranks.
func runGloo(cfg Config, root, sockets, logDir string, n int) ([]Point, error) {
	out := filepath.Join(logDir, "gloo.json")
	args := []string{"--gloo-sweep", strconv.Itoa(cfg.Max), "--iters", strconv.Itoa(cfg.Iters), "--json", out}
	run := torchjob.Runner{Python: cfg.Python, Timeout: cfg.Timeout, Out: cfg.Out}
	if err := torchjob.Launch(run, root, sockets, n, "collectives_bench.py", args, logDir, "gloo-rank"); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("gloo's rank 0 wrote no results: %w", err)
	}
	var g struct {
		Ranks int     `json:"ranks"`
		Gloo  []Point `json:"gloo"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	if g.Ranks != n || len(g.Gloo) == 0 {
		return nil, fmt.Errorf("%s: %d ranks, %d sizes; want %d ranks", out, g.Ranks, len(g.Gloo), n)
	}
	for i := range g.Gloo {
		g.Gloo[i].Bandwidths(n)
	}
	return g.Gloo, nil
}

// Bandwidths sets p's algbw and busbw from its bytes and time, for n
// ranks, as nccl-tests: algbw = bytes / time (GB/s), busbw = algbw x
// 2(n-1)/n.
func (p *Point) Bandwidths(n int) {
	if p.TimeUs <= 0 {
		return
	}
	p.AlgBW = float64(p.Bytes) / p.TimeUs / 1e3
	p.BusBW = p.AlgBW * 2 * float64(n-1) / float64(n)
}
