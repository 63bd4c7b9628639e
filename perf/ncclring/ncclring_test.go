package ncclring

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The smoke size end to end: the demo's hosts in this process, the bench
// built and run through the plugin and over libhoma, gloo's sweep, the
// report. Skipped where the demo cannot run (no EAL) or torch is missing.
func TestRun_smokeOverTheDemosHosts(t *testing.T) {
	dpdktest.Need(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("make", "-s", "-C", filepath.Join(root, "nccl"), "build/libnccl-net-homa.so", "build/bench-allreduce")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin and the bench: %v\n%s", err, out)
	}
	cfg := DefaultConfig()
	cfg.Smoke()
	cfg.Root, cfg.Bench, cfg.Dir = root, filepath.Join(root, "nccl/build/bench-allreduce"), t.TempDir()
	var progress bytes.Buffer
	cfg.Out = &progress
	if err := exec.Command(cfg.Python, "-c", "import torch.distributed").Run(); err != nil {
		t.Skipf("skipping: %s has no torch (scripts/setup.sh installs python3-torch): %v", cfg.Python, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Ranks != 2 {
		t.Fatalf("jobs %+v", res.Jobs)
	}
	j := res.Jobs[0]
	for name, pts := range map[string][]Point{"plugin": j.Plugin, "libhoma": j.Libhoma, "gloo": j.Gloo} {
		if len(pts) != 14 || pts[0].Bytes != 8 || pts[13].Bytes != 64<<10 {
			t.Errorf("%s: %d sizes: %+v", name, len(pts), pts)
			continue
		}
		for _, p := range pts {
			if p.TimeUs <= 0 || p.BusBW <= 0 || p.CPUPerGB <= 0 || p.Iters != 5 {
				t.Errorf("%s: %+v", name, p)
			}
		}
	}
	if j.Plugin[0].Msgs != 2 {
		t.Errorf("2 ranks, 8 B: %d isends a rank; want 2 (a step each way)", j.Plugin[0].Msgs)
	}
	if len(res.Goals) != 15 || res.Goals[0].Absent != "" {
		t.Errorf("goals %+v", res.Goals)
	}
	if md := page(t, res); !strings.Contains(md, "**2 ranks, NCCL ring through the plugin (nccl-tests' columns)**") {
		t.Errorf("report:\n%s", md)
	}
}
