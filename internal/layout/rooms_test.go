package layout

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// sourceLines counts the non-test source lines below dir, in every
// language the project is written in (Go, C, C++ and headers, Python,
// shell), by top-level folder: tests, test data and build outputs left
// out.
func sourceLines(t *testing.T, root string) map[string]int {
	t.Helper()
	rooms := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tests" || name == "build" || name == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".c", ".h", ".cc", ".cpp", ".hpp", ".py", ".sh":
		default:
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "test_") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		room, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		rooms[room] += fileLines(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rooms
}

// TestLayout_noRoomOverAQuarter keeps every top-level folder (a room of
// the house: perf's harness, the engine, ...) under a quarter of the
// project's non-test source, so that no one part grows to crowd the rest.
func TestLayout_noRoomOverAQuarter(t *testing.T) {
	rooms := sourceLines(t, repoRoot(t))
	total := 0
	for _, n := range rooms {
		total += n
	}
	if total < 10000 {
		t.Fatalf("%d non-test source lines found: the rule checks nothing", total)
	}
	for room, n := range rooms {
		if 4*n > total {
			t.Errorf("%s/ holds %d of the project's %d non-test source lines (%.1f%%), more than a quarter", room, n, total, 100*float64(n)/float64(total))
		}
	}
}
