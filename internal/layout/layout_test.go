// Package layout holds tests of the repository's own rules
// (docs/design.md#the-rules-the-repository-keeps): cgo only in dpdk/, the
// pure-Go packages free of it, the import direction, the sizes, and
// citations of the design that point into docs/.
package layout

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s", dir)
	}
	return dir
}

func TestCgo_onlyInDpdk(t *testing.T) {
	root := repoRoot(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if bytes.Contains(b, []byte("\nimport \"C\"")) && !strings.HasPrefix(rel, "dpdk"+string(filepath.Separator)) {
			t.Errorf("%s imports C: cgo belongs in dpdk/ only", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
