package layout

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// perfKind sorts the perf harness's packages: the core (perf itself,
// which keeps the table), a scenario (a package that registers one with
// perf.Register), the package that links every scenario into the table
// (perf/scenarios), or a library the scenarios share (perf/homapeer,
// perf/tcppeer, perf/enginebench; perf/perftest, for tests).
func perfKind(t *testing.T, root, pkg string) string {
	switch {
	case pkg == "perf":
		return "core"
	case pkg == "perf/scenarios":
		return "table"
	case !strings.HasPrefix(pkg, "perf/"):
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("perf.Register(")) {
			return "scenario"
		}
	}
	return "library"
}

// The harness's rule (docs/design.md#the-rules-the-repository-keeps): the
// core imports no scenario, no
// scenario imports another, and a library none; perf/scenarios alone
// imports them all, for the program.
func TestScenarios_importOneWay(t *testing.T) {
	root := repoRoot(t)
	imports := moduleImports(t, root)
	scenarios := 0
	for pkg, deps := range imports {
		kind := perfKind(t, root, pkg)
		if kind == "scenario" {
			scenarios++
		}
		for _, dep := range deps {
			dk := perfKind(t, root, dep)
			switch {
			case kind == "" || kind == "table" || pkg == dep:
			case dk == "scenario" && kind == "scenario":
				t.Errorf("scenario %s imports scenario %s: what both need belongs in perf's core or a library", pkg, dep)
			case dk == "scenario" || dk == "table":
				t.Errorf("%s %s imports %s: only perf/scenarios links the scenarios in", kind, pkg, dep)
			case kind == "core" && dk != "":
				t.Errorf("perf's core imports %s: the core imports none of perf's packages", dep)
			}
		}
	}
	if scenarios < 10 {
		t.Errorf("%d scenario packages found (perf.Register in a package under perf/): the rule checks nothing", scenarios)
	}
}

// nonTestLines counts the lines of the non-test Go files of dir (one
// package) or, with tree, of every package below it too.
func nonTestLines(t *testing.T, dir string, tree bool) int {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (!tree || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		n += fileLines(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func fileLines(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// The sizes docs/design.md#the-rules-the-repository-keeps sets:
// cmd/homa-dpdk a command line (≤ 1,000
// non-test lines), perf's core small (≤ 1,500), no package over 15% of
// the project's non-test Go, no Go file over 600 lines.
func TestLayout_sizes(t *testing.T) {
	root := repoRoot(t)
	if n := nonTestLines(t, filepath.Join(root, "cmd", "homa-dpdk"), false); n > 1000 {
		t.Errorf("cmd/homa-dpdk has %d non-test lines, more than 1,000: what it holds belongs in a package", n)
	}
	if n := nonTestLines(t, filepath.Join(root, "perf"), false); n > 1500 {
		t.Errorf("perf's core has %d non-test lines, more than 1,500: a scenario's part belongs in its package", n)
	}
	total := nonTestLines(t, root, true)
	imports := moduleImports(t, root)
	var pkgs []string
	for pkg := range imports {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		if n := nonTestLines(t, filepath.Join(root, pkg), false); float64(n) > 0.15*float64(total) {
			t.Errorf("%s has %d of the project's %d non-test lines, more than 15%%", pkg, n, total)
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			if n := fileLines(t, path); n > 600 {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s has %d lines, more than 600", rel, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
