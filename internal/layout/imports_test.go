package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePrefix = "github.com/homa-dpdk/homa-dpdk/"

// The import direction (docs/design.md#the-rules-the-repository-keeps):
// cmd → {daemon, demo, perf} → {host,
// hub} → {engine, nicq, lcore, shm, dpdk, wire, ...}. rank gives each
// package its layer (sub-packages take their parent's); a package imports
// only lower layers, or its own tree. host and hub never import each
// other, hub stays off the DPDK binding, and config is read only by the
// daemon, the demo (its embedded default config) and the program.
func rank(pkg string) int {
	top, _, _ := strings.Cut(pkg, "/")
	switch top {
	case "cmd":
		return 4
	case "perf":
		return 3
	case "daemon", "demo":
		return 2
	case "host", "hub":
		return 1
	case "config":
		return 1 // below daemon, demo and cmd, which alone may import it
	}
	return 0
}

// importRule returns why pkg may not import dep ("" when it may); both
// are paths inside the module (host, engine/memnet, perf/workerrtt).
func importRule(pkg, dep string) string {
	top, _, _ := strings.Cut(pkg, "/")
	dtop, _, _ := strings.Cut(dep, "/")
	switch {
	case top == dtop:
		return ""
	case top == "host" && dtop == "hub", top == "hub" && dtop == "host":
		return "host and hub never import each other"
	case top == "hub" && (dtop == "dpdk" || dtop == "lcore" || dtop == "nicq"):
		return "hub is pure Go: no DPDK binding, no polling loops"
	case dtop == "config" && top != "daemon" && top != "demo" && top != "cmd":
		return "config is read by daemon, demo and cmd only"
	case dtop == "internal":
		return ""
	case rank(dep) > rank(pkg) || (rank(dep) == rank(pkg) && rank(pkg) > 0 && !(top == "demo" && dtop == "daemon")):
		return "imports run cmd → {daemon, demo, perf} → {host, hub} → {engine, nicq, lcore, shm, dpdk, wire}"
	}
	return ""
}

// moduleImports returns, for every package directory of the module, the
// module packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(p, modulePrefix); ok {
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImports_runOneWay(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "hub")); err != nil {
		t.Fatal("no hub/ package")
	}
	for pkg, deps := range moduleImports(t, root) {
		for _, dep := range deps {
			if why := importRule(pkg, dep); why != "" {
				t.Errorf("%s imports %s: %s", pkg, dep, why)
			}
		}
	}
}

// The rule itself, on imports that break it and on some that do not.
func TestImportRule_refusesWhatDesignForbids(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"cmd/homa-dpdk", "daemon", true},
		{"daemon", "host", true},
		{"daemon", "config", true},
		{"demo", "hub", true},
		{"demo", "daemon", true},
		{"perf/workerrtt", "demo", true},
		{"perf/workerrtt", "perf", true},
		{"host", "engine", true},
		{"hub", "shm", true},
		{"engine/memnet", "engine", true},
		{"perf/slowdown", "engine/workload", true},
		{"engine", "engine/workload", true},
		{"engine/workload", "perf", false},
		{"host", "hub", false},
		{"hub", "host", false},
		{"hub", "dpdk", false},
		{"host", "config", false},
		{"demo", "config", true},
		{"perf", "config", false},
		{"hub", "config", false},
		{"engine", "host", false},
		{"host", "daemon", false},
		{"daemon", "demo", false},
		{"daemon", "perf", false},
		{"perf", "cmd/homa-dpdk", false},
		{"wire", "hub", false},
	} {
		if got := importRule(tc.pkg, tc.dep) == ""; got != tc.ok {
			t.Errorf("%s importing %s: allowed %v, want %v (%s)", tc.pkg, tc.dep, got, tc.ok, importRule(tc.pkg, tc.dep))
		}
	}
}

// The workload model is below the engine: engine/workload imports wire
// alone from the module, so that the engine's own tests, the cluster
// simulation and the slowdown scenario can all offer its traffic.
func TestImports_workloadBelowTheEngine(t *testing.T) {
	imports := moduleImports(t, repoRoot(t))
	if _, ok := imports["engine/workload"]; !ok {
		t.Fatal("no engine/workload package, or it imports nothing of the module (it reads wire's framing)")
	}
	for _, dep := range imports["engine/workload"] {
		if dep != "wire" {
			t.Errorf("engine/workload imports %s: the workload model takes wire's framing alone", dep)
		}
	}
}
