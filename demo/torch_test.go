package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The PyTorch backend (python/homa_dpdk/torch.py) against gloo and
// against results computed from every rank's input: all_reduce with
// every reduction op, broadcast from every root, all_gather, reduce,
// isend/irecv with tags on non-contiguous tensors, a 12 MB send in
// chunks, barrier, over nine dtypes and four shapes
// (python/tests/torch_ranks.py), with 2 and 4 ranks on the four hosts of
// one demo daemon (--hosts 4), each rank a process of Debian's Python.
func TestTorch_backendAgainstGlooTwoAndFourRanks(t *testing.T) {
	dpdktest.Need(t)
	py := "/usr/bin/python3"
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
	dir := t.TempDir()
	var out strings.Builder
	served := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		served <- ServeWorkers(WorkersConfig{Dir: dir, Hosts: 4, Duration: 60 * time.Second, Stop: stop, Out: &out})
	}()
	defer func() {
		close(stop)
		if err := <-served; err != nil {
			t.Errorf("the demo: %v\n%s", err, out.String())
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "10.0.0.4.sock")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's sockets did not appear:\n%s", out.String())
		}
	}
	for i, n := range []int{2, 4} {
		cmds := make([]*exec.Cmd, n)
		logs := make([]strings.Builder, n)
		for r := range n {
			c := exec.Command(py, filepath.Join(root, "python/tests/torch_ranks.py"))
			c.Dir = t.TempDir()
			c.Env = append(os.Environ(), "MASTER_ADDR=127.0.0.1", fmt.Sprintf("MASTER_PORT=%d", 29600+i+os.Getpid()%300*2),
				fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n), fmt.Sprintf("LOCAL_RANK=%d", r),
				"HOMA_DPDK_SOCKET_DIR="+dir, "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
			c.Stdout, c.Stderr = &logs[r], &logs[r]
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[r] = c
		}
		timer := time.AfterFunc(40*time.Second, func() {
			for _, c := range cmds {
				c.Process.Kill()
			}
		})
		for r, c := range cmds {
			err := c.Wait()
			t.Logf("%d ranks, rank %d: %s", n, r, strings.TrimSpace(lastLine(logs[r].String())))
			if err != nil || !strings.Contains(logs[r].String(), "checks passed") {
				timer.Stop()
				t.Fatalf("%d ranks, rank %d: %v\n%s", n, r, err, logs[r].String())
			}
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
