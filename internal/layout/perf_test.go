package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/homa-dpdk/homa-dpdk"

// pureHarness are the perf harness's packages that start DPDK programs but
// never bring DPDK up themselves (perf/cluster runs no DPDK at all): they
// build without cgo. Only perf/pmd, the forwarding benchmark, and
// perf/collectives, which serves the demo's hosts to torch ranks, run
// DPDK in their own process.
var pureHarness = []string{"./perf", "./perf/cluster", "./perf/cost", "./perf/enginebench", "./perf/floor", "./perf/plots", "./perf/rate",
	"./perf/rtt", "./perf/slowdown", "./perf/starts", "./perf/testpmdpath", "./perf/throughput"}

// goTool returns the go command, or skips the test when there is none.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Skip("no go command to list packages with")
	}
	return p
}

func TestPerf_importsNeitherDpdkNorLcore(t *testing.T) {
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}"}, pureHarness...)
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, cgoFiles, _ := strings.Cut(l, " ")
		switch {
		case path == module+"/dpdk" || path == module+"/lcore":
			t.Errorf("%v depend on %s: DPDK in-process belongs in perf/pmd", pureHarness, path)
		case strings.HasPrefix(path, module+"/") && cgoFiles != "0":
			t.Errorf("%v depend on %s, which uses cgo", pureHarness, path)
		}
	}
}

func TestPerf_buildsWithoutCgo(t *testing.T) {
	args := append([]string{"build"}, pureHarness...)
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
