package demo

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The PyTorch backend (python/homa_dpdk/torch.py) against gloo and
// against results computed from every rank's input: all_reduce with
// every reduction op, broadcast from every root, all_gather, reduce,
// isend/irecv with tags on non-contiguous tensors, a 12 MB send in
// chunks, barrier, over twelve dtypes (all of torch 1.13's with CPU arithmetic but complex32 and the quantized ones) and four shapes
// (python/tests/torch_ranks.py), with 2 and 4 ranks on the four hosts of
// one demo daemon (--hosts 4), each rank a process of Debian's Python;
// then a rank that dies mid-job, in a collective and in an irecv waited
// for from C++.
func TestTorch_backendAgainstGlooTwoAndFourRanks(t *testing.T) {
	py, root := needTorch(t)
	dir, _ := serveTorchHosts(t)
	runRanks(t, py, filepath.Join(root, "python/tests/torch_ranks.py"), dir, 0, func(n, r int, err error, log string) {
		if err != nil || !strings.Contains(log, "checks passed") {
			t.Fatalf("%d ranks, rank %d: %v\n%s", n, r, err, log)
		}
	})
	// Several operations in flight, waited for through their futures as
	// DDP's reducer does (python/tests/torch_async.py).
	runRanks(t, py, filepath.Join(root, "python/tests/torch_async.py"), dir, 6, func(n, r int, err error, log string) {
		if err != nil || !strings.Contains(log, "async checks passed") {
			t.Fatalf("%d ranks, rank %d (async): %v\n%s", n, r, err, log)
		}
	})
	// A rank that dies: the others' collectives fail with an error that
	// names it, within seconds (python/tests/torch_kill.py).
	for i, args := range [][]string{nil, {"--irecv"}} {
		runRanks(t, py, filepath.Join(root, "python/tests/torch_kill.py"), dir, 2+2*i, func(n, r int, err error, log string) {
			if r == n-1 {
				return // the rank that exits
			}
			if err != nil || !strings.Contains(log, "failed after") || !strings.Contains(log, "is that rank gone?") {
				t.Fatalf("%d ranks %v, rank %d with a dead rank: %v\n%s", n, args, r, err, log)
			}
		}, args...)
	}
}

// needTorch skips (or, with HOMA_REQUIRE_DPDK, fails) a test that needs
// DPDK and Debian's torch; it returns that Python and the repository root.
func needTorch(t *testing.T) (py, root string) {
	t.Helper()
	dpdktest.Need(t)
	py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch.distributed").Run(); err != nil {
		if dpdktest.Required() {
			t.Fatal("torch is missing for /usr/bin/python3 (scripts/setup.sh installs python3-torch)")
		}
		t.Skip("torch is missing")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return py, root
}

// serveTorchHosts runs the demo daemon with 4 hosts whose sockets are in
// dir, until the test ends or stop is called (idempotent).
func serveTorchHosts(t *testing.T) (dir string, stop func()) {
	t.Helper()
	dir = t.TempDir()
	var out lockedBuilder // the demo writes it while a failure reads it
	served := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		served <- ServeWorkers(WorkersConfig{Dir: dir, Hosts: 4, Stop: done, Out: &out}) // until stop: no fixed time
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			if err := <-served; err != nil {
				t.Errorf("the demo: %v\n%s", err, out.String())
			}
		})
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "10.0.0.4.sock")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's sockets did not appear within 30 s:\n%s", out.String())
		}
	}
	return dir, stop
}

// A daemon that stops under a running job: every rank's next collective
// fails with an error within seconds, not a hang: its session ended, or
// its message to a rank whose session ended first failed
// (python/tests/torch_daemon_stop.py; 2 ranks).
func TestTorch_daemonStopFailsCollectives(t *testing.T) {
	py, root := needTorch(t)
	dir, stop := serveTorchHosts(t)
	const n = 2
	logs := make([]lockedBuilder, n)
	outs := make([]io.Writer, n)
	for r := range outs {
		outs[r] = &logs[r]
	}
	cmds := startRanks(t, py, []string{filepath.Join(root, "python/tests/torch_daemon_stop.py")}, dir, 29580+os.Getpid()%300*4, outs)
	defer killAfter(cmds, 60*time.Second).Stop()
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ready := 0
		for r := range n {
			if strings.Contains(logs[r].String(), fmt.Sprintf("rank %d: ready", r)) {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ranks did not get ready:\n%s\n%s", logs[0].String(), logs[1].String())
		}
	}
	stop()
	for r, c := range cmds {
		err := c.Wait()
		log := logs[r].String()
		t.Logf("rank %d: %s", r, strings.TrimSpace(lastLine(log)))
		// Its own session ended, or (when the other rank's ended first)
		// its message to that rank failed: an error either way, in time.
		if err != nil || !strings.Contains(log, "failed after") ||
			!strings.Contains(log, "session has ended") && !strings.Contains(log, "is that rank gone?") {
			t.Fatalf("rank %d after the daemon stopped: %v\n%s", r, err, log)
		}
	}
}

// lockedBuilder is a strings.Builder that a command writes while the
// test reads it.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runRanks runs script (with args) as 2 and then 4 ranks of one job on
// the demo's hosts (sockets in dir), and hands each rank's outcome to
// check.
func runRanks(t *testing.T, py, script, dir string, portOff int, check func(n, r int, err error, log string), args ...string) {
	t.Helper()
	for i, n := range []int{2, 4} {
		logs := make([]strings.Builder, n)
		outs := make([]io.Writer, n)
		for r := range outs {
			outs[r] = &logs[r]
		}
		cmds := startRanks(t, py, append([]string{script}, args...), dir, 29600+i+portOff+os.Getpid()%300*4, outs)
		timer := killAfter(cmds, 90*time.Second)
		for r, c := range cmds {
			err := c.Wait()
			t.Logf("%d ranks, rank %d: %s", n, r, strings.TrimSpace(lastLine(logs[r].String())))
			check(n, r, err, logs[r].String())
		}
		timer.Stop()
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// startRanks starts len(outs) ranks of one job, each py with args (env://
// rendezvous on 127.0.0.1:port, the demo's host sockets in dir), rank r
// writing its output to outs[r].
func startRanks(t *testing.T, py string, args []string, dir string, port int, outs []io.Writer) []*exec.Cmd {
	t.Helper()
	n := len(outs)
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		c := exec.Command(py, args...)
		c.Dir = t.TempDir()
		c.Env = append(os.Environ(), "MASTER_ADDR=127.0.0.1", fmt.Sprintf("MASTER_PORT=%d", port),
			fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n), fmt.Sprintf("LOCAL_RANK=%d", r),
			"HOMA_DPDK_SOCKET_DIR="+dir, "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
		c.Stdout, c.Stderr = outs[r], outs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	return cmds
}

// killAfter kills cmds once d has passed, unless stopped first.
func killAfter(cmds []*exec.Cmd, d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
	})
}
