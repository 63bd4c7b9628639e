// Package perftest has what the scenarios' tests share: the program
// their smoke tests run as the daemon, and the goal rows by name. Only
// tests import it.
package perftest

import (
	"math"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// SmokeProgram skips a smoke test that cannot run here (no DPDK, one
// CPU, -short) and otherwise builds the program it runs (BuildHomaDPDK).
// The test binary's TestMain must be dpdktest.Main.
func SmokeProgram(t *testing.T) string {
	t.Helper()
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("the scenario needs two CPUs")
	}
	if testing.Short() {
		t.Skip("builds the program and runs the daemon: not in -short")
	}
	return BuildHomaDPDK(t)
}

// BuildHomaDPDK builds the homa-dpdk program, which the scenarios run as
// the daemon (demo --workers), into a temporary directory.
func BuildHomaDPDK(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "homa-dpdk")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/homa-dpdk/homa-dpdk/cmd/homa-dpdk")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the daemon: %v\n%s", err, out)
	}
	return bin
}

// GoalsByName are gs by their Goal.
func GoalsByName(gs []perf.Goal) map[string]perf.Goal {
	m := map[string]perf.Goal{}
	for _, g := range gs {
		m[g.Goal] = g
	}
	return m
}

// CheckGoal fails t unless the row name of g has the figure fig, met as
// met says.
func CheckGoal(t *testing.T, g map[string]perf.Goal, name string, fig float64, met bool) {
	t.Helper()
	r, ok := g[name]
	if !ok || r.Absent != "" || r.Figure != fig || r.Met != met {
		t.Errorf("%s: %+v, want figure %v met %v", name, r, fig, met)
	}
}

// Near says whether a and b are equal but for rounding.
func Near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
