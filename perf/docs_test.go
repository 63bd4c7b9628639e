package perf_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// What perf all runs, and in what order, comes from the table: its help
// is made from it, and docs/perf.md must say the same (its scenarios'
// table in the table's order, the scenarios perf all runs and those it
// does not).
func TestAll_helpAndDocsSayWhatItRuns(t *testing.T) {
	runs, skips := perf.AllNames()
	if len(runs) < 5 || !slices.Contains(skips, "cluster") || !slices.Contains(skips, "scale") {
		t.Fatalf("perf all runs %v and leaves %v", runs, skips)
	}
	said := "runs, in this order: " + strings.Join(runs, ", ")
	notRun := "It does not run " + strings.Join(skips, ", ")
	all := perf.AllScenario()
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if help := oneLine(all.Long); !strings.Contains(help, said) || !strings.Contains(help, notRun) {
		t.Errorf("perf all --help does not say %q and %q:\n%s", said, notRun, all.Long)
	}
	b, err := os.ReadFile(filepath.Join("..", "docs", "perf.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := oneLine(string(b))
	if !strings.Contains(docs, "`perf all` "+said) || !strings.Contains(docs, notRun+":") {
		t.Errorf("docs/perf.md does not say \"`perf all` %s\" and %q", said, notRun+":")
	}
	var listed, visible []string
	for _, m := range regexp.MustCompile("(?m)^\\| `homa-dpdk perf ([a-z-]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		listed = append(listed, m[1])
	}
	for _, s := range perf.Scenarios() {
		if !s.Hidden {
			visible = append(visible, s.Name)
		}
	}
	if !slices.Equal(listed, visible) {
		t.Errorf("docs/perf.md's table lists %v; the table (perf --help) has %v", listed, visible)
	}
}

// The harness's pages hold no path of one machine: a run's results are
// DIR, or results/ under the repository.
func TestDocs_noMachinePaths(t *testing.T) {
	machine := regexp.MustCompile(`(^|[\s(` + "`" + `])/(tmp|root|home|work|var/tmp)/`)
	for _, page := range []string{"perf.md", "cluster.md"} {
		b, err := os.ReadFile(filepath.Join("..", "docs", page))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if machine.MatchString(l) {
				t.Errorf("docs/%s:%d names a path of one machine: %s", page, i+1, l)
			}
		}
	}
}
