// Package collectives is `homa-dpdk perf collectives`: the PyTorch
// backend (python/homa_dpdk/torch.py) against gloo, kernel TCP, in the
// same jobs. It serves the demo's hosts in this process (one worker
// socket each, joined by the ring switch), runs
// python/examples/collectives_bench.py as a job of 2 and of 4 ranks (one
// Python process per rank, env:// rendezvous), and turns what rank 0
// reports (all_reduce latency and bus bandwidth from 4 B to 64 MiB,
// send/recv ping-pong, homa's ring and recursive doubling at every size)
// into tables, the goal rows and plots.
package collectives

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homa-dpdk/homa-dpdk/demo"
)

// Config is one run.
type Config struct {
	Ranks      []int  // job sizes, each a job of its own (2 and 4)
	Quick      bool   // sizes up to 1 MiB, fewer repetitions (the bench's --quick)
	Algorithms bool   // also homa's ring and recursive doubling at every size
	Python     string // the interpreter with torch (Debian's /usr/bin/python3)
	Root       string // the repository: python/ and python/examples/collectives_bench.py
	Dir        string // results directory: collectives.json, the plots, each rank's log
	Timeout    time.Duration
	Out        io.Writer // progress lines
}

// DefaultConfig is the full run.
func DefaultConfig() Config {
	return Config{Ranks: []int{2, 4}, Algorithms: true, Python: "/usr/bin/python3", Root: ".", Timeout: 20 * time.Minute}
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
	script := filepath.Join(c.Root, "python", "examples", "collectives_bench.py")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("the benchmark script: %w (run from the repository's root, or give --root)", err)
	}
	if err := exec.Command(c.Python, "-c", "import torch.distributed").Run(); err != nil {
		return fmt.Errorf("%s cannot import torch.distributed (%v): scripts/setup.sh installs python3-torch", c.Python, err)
	}
	return nil
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
	Seconds   float64 `json:"seconds"`
}

// Result is the run.
type Result struct {
	Jobs  []Job  `json:"jobs"`
	Goals []Goal `json:"goals"`
}

// Goal is one of issue's goal rows with this run's figure.
type Goal struct {
	What string  `json:"what"`
	Want string  `json:"want"`
	Got  float64 `json:"got"`
	Met  bool    `json:"met"`
}

// Run serves max(Ranks) hosts and runs one job per entry of Ranks.
func Run(cfg Config) (*Result, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	sockets := filepath.Join(cfg.Dir, "sockets")
	if err := os.MkdirAll(sockets, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(sockets)
	hosts := slices.Max(cfg.Ranks)
	var dlog strings.Builder
	served := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		served <- demo.ServeWorkers(demo.WorkersConfig{Dir: sockets, Hosts: max(hosts, 2), Stop: stop, Out: &dlog})
	}()
	stopped := false
	stopDemo := func() error {
		if stopped {
			return nil
		}
		stopped = true
		close(stop)
		if err := <-served; err != nil {
			return fmt.Errorf("the demo's hosts: %w\n%s", err, dlog.String())
		}
		return nil
	}
	defer stopDemo()
	last := filepath.Join(sockets, fmt.Sprintf("10.0.0.%d.sock", max(hosts, 2)))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(last); err == nil {
			break
		}
		select {
		case err := <-served:
			stopped = true
			return nil, fmt.Errorf("the demo's hosts ended: %v\n%s", err, dlog.String())
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the demo's sockets did not appear:\n%s", dlog.String())
		}
	}
	res := &Result{}
	for _, n := range cfg.Ranks {
		fmt.Fprintf(cfg.Out, "collectives: %d ranks, homa and gloo ...\n", n)
		start := time.Now()
		job, err := runJob(cfg, root, sockets, n)
		if err != nil {
			return nil, err
		}
		job.Seconds = time.Since(start).Seconds()
		res.Jobs = append(res.Jobs, *job)
	}
	if err := stopDemo(); err != nil {
		return nil, err
	}
	res.Goals = goals(res)
	return res, nil
}

// runJob runs the bench as a job of n ranks and reads rank 0's JSON.
func runJob(cfg Config, root, sockets string, n int) (*Job, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(cfg.Dir, fmt.Sprintf("ranks-%d", n))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(logDir, "bench.json")
	args := []string{filepath.Join(root, "python", "examples", "collectives_bench.py"), "--json", out}
	if cfg.Quick {
		args = append(args, "--quick")
	}
	if cfg.Algorithms {
		args = append(args, "--algorithms")
	}
	pyPath := filepath.Join(root, "python")
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pyPath += ":" + p
	}
	cmds := make([]*exec.Cmd, n)
	files := make([]*os.File, n)
	var progress sync.WaitGroup
	for r := range n {
		c := exec.Command(cfg.Python, args...)
		c.Env = append(os.Environ(), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n), fmt.Sprintf("LOCAL_RANK=%d", r),
			"HOMA_DPDK_SOCKET_DIR="+sockets, "PYTHONPATH="+pyPath, "OMP_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1")
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("rank-%d.log", r)))
		if err != nil {
			return nil, err
		}
		files[r] = f
		c.Stdout = f
		if r == 0 { // its progress lines to cfg.Out as well
			pr, pw := io.Pipe()
			c.Stderr = pw
			progress.Add(1)
			go func() {
				defer progress.Done()
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					line := sc.Text()
					fmt.Fprintln(f, line)
					if strings.HasPrefix(line, "all_reduce ") || strings.HasPrefix(line, "ping_pong ") {
						fmt.Fprintf(cfg.Out, "  %d ranks: %s\n", n, line)
					}
				}
			}()
			defer pw.Close()
		} else {
			c.Stderr = f
		}
		if err := c.Start(); err != nil {
			return nil, err
		}
		cmds[r] = c
	}
	timer := time.AfterFunc(cfg.Timeout, func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
	})
	defer timer.Stop()
	var failed []string
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("rank %d: %v (log %s)", r, err, files[r].Name()))
		}
		if r == 0 {
			c.Stderr.(*io.PipeWriter).Close()
			progress.Wait()
		}
		files[r].Close()
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("the %d-rank job failed: %s", n, strings.Join(failed, "; "))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("rank 0 wrote no results: %w", err)
	}
	var job Job
	if err := json.Unmarshal(b, &job); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	if job.Ranks != n || len(job.AllReduce) == 0 {
		return nil, fmt.Errorf("%s: %d ranks, %d sizes; want %d ranks", out, job.Ranks, len(job.AllReduce), n)
	}
	return &job, nil
}

// freePort is a TCP port of 127.0.0.1 free now, for the job's store.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// goals are the goal rows: all_reduce latency at least 10x
// lower than gloo's for tensors up to 64 KiB (the worst size of each
// job), and gloo's bus bandwidth or better at the largest size.
func goals(r *Result) []Goal {
	var out []Goal
	for _, j := range r.Jobs {
		worst, have := 0.0, false
		for _, p := range j.AllReduce {
			if p["bytes"] > 64<<10 || p["homa_us"] <= 0 {
				continue
			}
			ratio := p["gloo_us"] / p["homa_us"]
			if !have || ratio < worst {
				worst, have = ratio, true
			}
		}
		if have {
			out = append(out, Goal{What: fmt.Sprintf("all_reduce latency up to 64 KiB, gloo over homa (worst size), %d ranks", j.Ranks),
				Want: ">= 10", Got: worst, Met: worst >= 10})
		}
		if n := len(j.AllReduce); n > 0 {
			p := j.AllReduce[n-1]
			if p["gloo_busbw_gbps"] > 0 {
				ratio := p["homa_busbw_gbps"] / p["gloo_busbw_gbps"]
				out = append(out, Goal{What: fmt.Sprintf("all_reduce bus bandwidth at %s, homa over gloo, %d ranks", SizeName(p["bytes"]), j.Ranks),
					Want: ">= 1.00", Got: ratio, Met: ratio >= 1})
			}
		}
	}
	return out
}

// SizeName writes a power-of-two size as the bench's are: 4 B, 1 KiB,
// 64 MiB.
func SizeName(b float64) string {
	n := int64(b)
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
