// Package torchjob is what the scenarios that run jobs of ranks over
// the demo's hosts share (perf collectives, perf nccl): the demo's hosts
// served in the harness's process, a worker socket each, and a job of
// Python processes, one a rank, with env:// rendezvous.
package torchjob

import (
	"bufio"
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
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Runner is how a job's processes run.
type Runner struct {
	Python  string        // the interpreter with torch (Debian's /usr/bin/python3)
	Timeout time.Duration // longest a job may take: its processes are killed after
	Out     io.Writer     // rank 0's progress lines
}

// ServeHosts serves the demo's hosts 10.0.0.1 to 10.0.0.<hosts> (2 at
// least) in this process, joined by its ring switch, a worker socket
// each in results/sockets (10.0.0.<i>.sock), and returns that directory
// once the last socket is there. stop ends them, removes the directory
// and returns their error with their log; a second call returns nil.
func ServeHosts(results string, hosts int) (dir string, stop func() error, err error) {
	dir = filepath.Join(results, "sockets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	end, err := serveHosts(dir, hosts)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() error {
		defer os.RemoveAll(dir)
		return end()
	}, nil
}

// serveHosts is ServeHosts in dir.
func serveHosts(dir string, hosts int) (stop func() error, err error) {
	var dlog strings.Builder
	served := make(chan error, 1)
	quit := make(chan struct{})
	go func() {
		served <- demo.ServeWorkers(demo.WorkersConfig{Dir: dir, Hosts: max(hosts, 2), Stop: quit, Out: &dlog})
	}()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		close(quit)
		if err := <-served; err != nil {
			return fmt.Errorf("the demo's hosts: %w\n%s", err, dlog.String())
		}
		return nil
	}
	last := filepath.Join(dir, fmt.Sprintf("10.0.0.%d.sock", max(hosts, 2)))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(last); err == nil {
			return stop, nil
		}
		select {
		case err := <-served:
			stopped = true
			return nil, fmt.Errorf("the demo's hosts ended: %v\n%s", err, dlog.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the demo's sockets did not appear:\n%s", dlog.String())
		}
	}
}

// Launch runs python/examples/script with args as a job of n ranks (a
// process each, env:// rendezvous on a free port), each rank's output in
// logDir/<log>-<rank>.log and rank 0's progress lines to cfg.Out as well.
func Launch(cfg Runner, root, sockets string, n int, script string, args []string, logDir, log string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	args = append([]string{filepath.Join(root, "python", "examples", script)}, args...)
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
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("%s-%d.log", log, r)))
		if err != nil {
			return err
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
					if strings.HasPrefix(line, "all_reduce ") || strings.HasPrefix(line, "ping_pong ") || strings.HasPrefix(line, "ddp") {
						fmt.Fprintf(cfg.Out, "  %d ranks: %s\n", n, line)
					}
				}
			}()
			defer pw.Close()
		} else {
			c.Stderr = f
		}
		if err := c.Start(); err != nil {
			return err
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
		return fmt.Errorf("the %d-rank job of %s failed: %s", n, script, strings.Join(failed, "; "))
	}
	return nil
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

// Jobs serves the demo's hosts for the largest of ranks in dir
// (ServeHosts) and runs job for each number of ranks in turn, with the
// hosts' socket directory and a log directory of its own (dir/ranks-N);
// then it stops the hosts.
func Jobs[J any](dir string, ranks []int, job func(sockets, logDir string, n int) (J, error)) ([]J, error) {
	sockets, stop, err := ServeHosts(dir, slices.Max(ranks))
	if err != nil {
		return nil, err
	}
	defer stop()
	var out []J
	for _, n := range ranks {
		logDir := filepath.Join(dir, fmt.Sprintf("ranks-%d", n))
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return nil, err
		}
		j, err := job(sockets, logDir, n)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, stop()
}

// Command is the body of a job scenario's command once its flags are
// read: the results directory made (its absolute path into *dir, where
// the ranks' logs go), EAL up in this process for the demo's hosts, run,
// and the result's report written there. The result is returned for the
// command to judge.
func Command[R perf.Reporter](inv perf.Invocation, f *perf.Flags, dir *string, run func() (R, error)) (R, error) {
	var res R
	d, err := f.Dir()
	if err != nil {
		return res, err
	}
	if *dir, err = filepath.Abs(d); err != nil {
		return res, err
	}
	if _, err := dpdk.Init(dpdk.ArgsOr(inv.EAL, "0,1", dpdk.ProbeMemory())); err != nil {
		return res, err
	}
	defer dpdk.Cleanup()
	if res, err = run(); err != nil {
		return res, err
	}
	return res, res.Report().Write(inv.Out, d)
}
