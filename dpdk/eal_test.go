package dpdk_test

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestInit_secondCallRefused(t *testing.T) {
	dpdktest.Need(t)
	if _, err := dpdk.Init([]string{"--no-huge"}); !errors.Is(err, dpdk.ErrAlreadyInitialized) {
		t.Fatalf("second Init: got %v, want ErrAlreadyInitialized", err)
	}
}

func TestLcores_matchArguments(t *testing.T) {
	dpdktest.Need(t)
	if got, want := dpdk.LcoreCount(), runtime.NumCPU(); got != want {
		t.Errorf("LcoreCount = %d, want %d (-l 0-%d)", got, want, want-1)
	}
	if dpdk.MainLcore() != 0 {
		t.Errorf("MainLcore = %d, want 0", dpdk.MainLcore())
	}
	workers := dpdk.WorkerLcores()
	if len(workers) != runtime.NumCPU()-1 {
		t.Errorf("WorkerLcores = %v, want %d of them", workers, runtime.NumCPU()-1)
	}
	for _, w := range workers {
		if cpu := dpdk.LcoreCPU(w); cpu != int(w) {
			t.Errorf("lcore %d on CPU %d, want %d", w, cpu, w)
		}
	}
	if dpdk.SocketCount() < 1 {
		t.Errorf("SocketCount = %d", dpdk.SocketCount())
	}
	// A goroutine's thread is not an lcore.
	if id := dpdk.LcoreID(); id != dpdk.LcoreIDAny && id != dpdk.MainLcore() {
		t.Errorf("LcoreID of a test goroutine = %d", id)
	}
}

// runInitChild runs EAL initialisation with args in a fresh process (EAL
// initialises once per process) and returns what it printed.
func runInitChild(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=init", "HOMA_CHILD_ARGS="+strings.Join(args, "\x1f"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("EAL init with %q succeeded; output:\n%s", args, out)
	}
	return string(out)
}

func TestInit_badArgumentNamed(t *testing.T) {
	dpdktest.Need(t)
	out := runInitChild(t, "--no-huge", "--bogus-option")
	t.Logf("child said: %s", out)
	if !strings.Contains(out, "Invalid argument (errno 22)") || !strings.Contains(out, "unrecognized option '--bogus-option'") {
		t.Errorf("error does not name the bad argument:\n%s", out)
	}
}

func TestInit_unknownVdevNamed(t *testing.T) {
	dpdktest.Need(t)
	out := runInitChild(t, "--no-huge", "-m", "64", "--no-pci", "--file-prefix", "homabadvdev", "--vdev", "net_bogus0")
	t.Logf("child said: %s", out)
	if !strings.Contains(out, "No such device") || !strings.Contains(out, `failed to parse device "net_bogus0"`) {
		t.Errorf("error does not name the unknown device:\n%s", out)
	}
}

func TestNewVdev_unknownDriver(t *testing.T) {
	dpdktest.Need(t)
	_, err := dpdk.NewVdev("net_nosuchdriver0", "")
	if err == nil || !strings.Contains(err.Error(), "net_nosuchdriver0") {
		t.Fatalf("got %v, want an error naming the device", err)
	}
}

func TestPortByName_unknown(t *testing.T) {
	dpdktest.Need(t)
	_, err := dpdk.PortByName("net_absent0")
	if !errors.Is(err, dpdk.ErrNoPort) || !strings.Contains(err.Error(), "net_absent0") {
		t.Fatalf("got %v", err)
	}
}

// DPDK's lines known to be harmless here are left out of the start-up
// log; the others stay, and the hint for a memory failure is given only
// for one.
func TestQuietHarmless_dropsKnownLinesOnly(t *testing.T) {
	log := "rte_pmd_memif_probe(): Failed to register mp action callback: Operation not supported\n" +
		"TELEMETRY: No legacy callbacks, legacy socket not created\n" +
		"EAL: No available 1048576 kB hugepages reported\n" +
		"memif: something real went wrong\n"
	if got := dpdk.QuietHarmless(log); got != "memif: something real went wrong\n" {
		t.Errorf("quietHarmless: %q", got)
	}
	if h := dpdk.MemoryHint("EAL: FATAL: Cannot get hugepage information.\n"); !strings.Contains(h, "--no-huge") {
		t.Errorf("no hint for a hugepage failure: %q", h)
	}
	if h := dpdk.MemoryHint("EAL: No available 1048576 kB hugepages reported\nEAL: FATAL: Invalid 'command line' arguments.\n"); h != "" {
		t.Errorf("a hint for a failure that is not about memory: %q", h)
	}
}
