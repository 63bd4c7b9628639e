package layout

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/internal/mdanchor"
)

// The design the code cites is in the repository: code, tests and pages
// outside docs/ cite a design decision or a wire rule by a link into
// docs/ (docs/decisions.md#4-priorities-are-real-queues,
// docs/wire.md#the-common-header), never by the name of a document a
// clone does not hold, and every docs/PAGE.md#anchor they cite is a
// heading of that page.

// citedExts are the kinds of file whose text is checked.
var citedExts = []string{".go", ".c", ".h", ".cc", ".cpp", ".hpp", ".py", ".sh", ".lua", ".md", ".yaml", ".yml"}

var (
	// designNameRE is a citation by a document's name or a decision's
	// number, which must point into docs/ on its line or the next.
	designNameRE = regexp.MustCompile(`\b(DESIGN|WIRE)(\.md)?\b|\b[Dd]ecision [0-9]+\b`)
	// outsideDocRE is a path to a document outside the repository.
	outsideDocRE = regexp.MustCompile(`\bshared/[A-Za-z0-9_./-]*\.md\b|\.\./shared/`)
	// docsCiteRE is a cited page and anchor of docs/.
	docsCiteRE = regexp.MustCompile(`\bdocs/([a-z0-9_-]+\.md)#([A-Za-z0-9_-]+)`)
)

// thisFile is excluded: it names what it looks for.
const thisFile = "internal/layout/citations_test.go"

// citationProblems returns what is wrong with the citations in the text
// of file rel (a path from the repository root); anchors gives the
// anchors of a page of docs/ (false: no such page).
func citationProblems(rel, text string, anchors func(page string) ([]string, bool)) []string {
	var problems []string
	lines := strings.Split(text, "\n")
	inDocs := strings.HasPrefix(rel, "docs/")
	for i, l := range lines {
		if !inDocs {
			if m := designNameRE.FindString(l); m != "" {
				next := ""
				if i+1 < len(lines) {
					next = lines[i+1]
				}
				if !strings.Contains(l, "docs/") && !strings.Contains(next, "docs/") {
					problems = append(problems, fmt.Sprintf("%s:%d: cites %q without a link into docs/ (docs/decisions.md, docs/wire.md)", rel, i+1, m))
				}
			}
			if m := outsideDocRE.FindString(l); m != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: cites %q, a document outside the repository: cite its page in docs/", rel, i+1, m))
			}
		}
		for _, m := range docsCiteRE.FindAllStringSubmatch(l, -1) {
			heads, ok := anchors(m[1])
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s:%d: cites docs/%s, which does not exist", rel, i+1, m[1]))
			case !slices.Contains(heads, m[2]):
				problems = append(problems, fmt.Sprintf("%s:%d: cites docs/%s#%s: the page has no such heading", rel, i+1, m[1], m[2]))
			}
		}
	}
	return problems
}

// headingSlugs returns GitHub's anchors (mdanchor.Slugs) for the
// Markdown headings of text, outside fenced code.
func headingSlugs(text string) []string {
	var heads []string
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(l[level:], " ") {
			continue
		}
		heads = append(heads, strings.TrimSpace(l[level:]))
	}
	return mdanchor.Slugs(heads)
}

// trackedFiles lists the files git tracks or would (untracked, not
// ignored) that are in the work tree, from the repository root.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the test reads the repository's file list)", err)
	}
	var files []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := sc.Text()
		if fi, err := os.Lstat(filepath.Join(root, f)); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		files = append(files, f)
	}
	return files
}

// docAnchors reads the anchors of the pages of docs/ under root, once each.
func docAnchors(root string) func(string) ([]string, bool) {
	cache := map[string][]string{}
	return func(page string) ([]string, bool) {
		if a, ok := cache[page]; ok {
			return a, true
		}
		b, err := os.ReadFile(filepath.Join(root, "docs", page))
		if err != nil {
			return nil, false
		}
		cache[page] = headingSlugs(string(b))
		return cache[page], true
	}
}

func TestCitations_pointIntoDocs(t *testing.T) {
	root := repoRoot(t)
	anchors := docAnchors(root)
	checked := 0
	for _, rel := range trackedFiles(t, root) {
		if rel == thisFile || !slices.Contains(citedExts, filepath.Ext(rel)) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, p := range citationProblems(rel, string(b), anchors) {
			t.Error(p)
		}
	}
	if checked < 100 {
		t.Errorf("only %d files checked: the file list is not the repository's", checked)
	}
}

// TestCitations_catchMistakes shows each check failing on text made wrong
// on purpose, and passing on citations done right.
func TestCitations_catchMistakes(t *testing.T) {
	page := "# Decisions\n\n## 4. Priorities are real queues\n\n```\n## not a heading\n```\n\n## Tests\n\n## Tests\n"
	anchors := func(p string) ([]string, bool) {
		if p == "decisions.md" {
			return headingSlugs(page), true
		}
		return nil, false
	}
	if got, want := headingSlugs(page), []string{"decisions", "4-priorities-are-real-queues", "tests", "tests-1"}; !slices.Equal(got, want) {
		t.Errorf("headingSlugs: %q, want %q", got, want)
	}
	bad := strings.Join([]string{
		"// real queues (DESIGN decision 4): each",
		"// kernel Homa's defaults (WIRE.md) with no address",
		"// the client last (DESIGN: a server whose client left first crashed).",
		"// as decision 8 says.",
		"-- the layout of ../../shared/WIRE.md",
		"",
		"// see docs/decisions.md#4-priorities-are-queues",
		"// see docs/nowhere.md#anything",
	}, "\n")
	got := citationProblems("nicq/doc.go", bad, anchors)
	for _, w := range []string{":1: cites \"DESIGN\"", ":2: cites \"WIRE.md\"", ":3: cites \"DESIGN\"", ":4: cites \"decision 8\"",
		":5: cites \"../shared/\"", ":7: cites docs/decisions.md#4-priorities-are-queues", ":8: cites docs/nowhere.md"} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("no problem mentions %q; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
	good := strings.Join([]string{
		"// Homa's eight priority levels are real queues (decision 4,",
		"// docs/decisions.md#4-priorities-are-real-queues): each",
		"// see docs/decisions.md#tests-1",
	}, "\n")
	if got := citationProblems("nicq/doc.go", good, anchors); len(got) != 0 {
		t.Errorf("citations done right: %q", got)
	}
	if got := citationProblems("docs/decisions.md", "## 4. Priorities are real queues (decision 4)", anchors); len(got) != 0 {
		t.Errorf("a page of docs/ names its own decisions: %q", got)
	}
}
