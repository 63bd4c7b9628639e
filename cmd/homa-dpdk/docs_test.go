package main

// The documentation's own tests: README.md and docs/*.md say only what
// exists. Each check is a function from a page's text to a list of
// problems, so that TestDocs_checksCatchMistakes can show each one
// failing on a page made wrong on purpose.
//
// The conventions the pages follow (docs/testing.md, "The docs test",
// says the same for their authors):
//
//   - A fenced Go or Python block is included from a file that a test
//     builds or runs: the line right before it is
//     <!-- code: PATH --> or <!-- code: PATH#REGION -->, and the block
//     equals the file, or the lines between "#region REGION" and
//     "#endregion" comments in it, less their common indentation.
//   - A shell block is checked line by line: each homa-dpdk command names
//     subcommands and flags that exist, scripts and repository paths
//     named exist, `go` packages and `make -C DIR` targets exist. Then it
//     runs, and must exit 0 within a minute (docs_run_test.go). A block
//     that cannot run here (a physical NIC, a cluster, a registry, more
//     than a minute) says why on the line before it: <!-- not run: WHY -->.
//   - A YAML block (or a YAML file a shell block writes from a
//     here-document) uses only keys that config/example.yaml documents,
//     and one that is a whole config (it has ports) passes config check.
//   - Inline code that starts with homa-dpdk (or a subcommand of it and
//     a --flag) is checked as a command line; inline code that looks
//     like a repository path must name one that exists, and a test named
//     in inline code (TestThing_case) must exist.

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
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

const (
	readmeMaxLines = 250
	docMaxLines    = 400
)

// docsRoot is the repository, from this package's directory.
const docsRoot = "../.."

// docPages are the pages under test, relative to the repository.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(docsRoot, m)
		pages = append(pages, rel)
	}
	return pages
}

func readPage(t *testing.T, rel string) *page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return parsePage(rel, string(b))
}

// report fails t with every problem, one a line.
func report(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

func TestDocs_lengths(t *testing.T) {
	for _, rel := range docPages(t) {
		report(t, checkLength(readPage(t, rel)))
	}
}

func TestDocs_linksResolve(t *testing.T) {
	// Other pages that link into these are checked too (their anchors
	// move when a section does).
	extra := []string{"python/README.md", "native/README.md", "deploy/bare-metal.md"}
	env := newDocEnv(t)
	for _, rel := range append(docPages(t), extra...) {
		if _, err := os.Stat(filepath.Join(docsRoot, rel)); err != nil {
			continue
		}
		report(t, checkLinks(readPage(t, rel), env))
	}
}

func TestDocs_everyDocLinkedFromREADME(t *testing.T) {
	readme := readPage(t, "README.md")
	linked := map[string]bool{}
	for _, l := range readme.links() {
		target, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(target)] = true
	}
	for _, rel := range docPages(t)[1:] {
		if !linked[rel] {
			t.Errorf("README.md does not link %s", rel)
		}
	}
}

// TestDocs_readmeStartsWithTheTwoCommands holds the front door: the
// README's first block is the demo, then every test (scripts/demo.sh and
// scripts/test.sh say they are the README's first and second commands).
func TestDocs_readmeStartsWithTheTwoCommands(t *testing.T) {
	readme := readPage(t, "README.md")
	if len(readme.blocks) == 0 {
		t.Fatal("README.md has no code block")
	}
	cmds := shellCommands(readme.blocks[0].body)
	if len(cmds) < 2 || strings.Join(cmds[0], " ") != "./scripts/demo.sh" || strings.Join(cmds[1], " ") != "./scripts/test.sh" {
		t.Errorf("README.md's first block runs %q; want ./scripts/demo.sh, then ./scripts/test.sh", cmds)
	}
}

func TestDocs_commandsExist(t *testing.T) {
	env := newDocEnv(t)
	for _, rel := range docPages(t) {
		report(t, checkCommands(readPage(t, rel), env))
	}
}

func TestDocs_includedCodeMatches(t *testing.T) {
	env := newDocEnv(t)
	for _, rel := range docPages(t) {
		report(t, checkIncludes(readPage(t, rel), env))
	}
}

func TestDocs_configKeysExist(t *testing.T) {
	env := newDocEnv(t)
	for _, rel := range docPages(t) {
		report(t, checkYAML(readPage(t, rel), env))
	}
}

// TestDocs_checksCatchMistakes runs every check on pages made wrong on
// purpose: a broken link and anchor, a made-up subcommand and flag, an
// edited included block, an unmarked block for a physical NIC, an unknown
// config key, a page too long.
func TestDocs_checksCatchMistakes(t *testing.T) {
	env := newDocEnv(t)
	bad := parsePage("docs/bad.md", strings.Join([]string{
		"# Bad",
		"See [the demo](../README.md#no-such-section) and [x](nothing-here.md).",
		"Run `homa-dpdk perf rtt --smokey` or `homa-dpdk perf nonsense`.",
		"The file `perf/no-such-dir/` holds it; `daemon TestNoSuch_thing` checks it.",
		"```sh",
		"./homa-dpdk demo --seconds 1 --colour red",
		"./scripts/no-such.sh",
		"dpdk-devbind.py --bind vfio-pci 0000:3b:00.0",
		"go test ./no/such/package",
		"make -C native no-such-target",
		"```",
		"<!-- code: examples/hello/main.go#call -->",
		"```go",
		"c, err := client.Dial(sock, client.Options{}) // edited",
		"```",
		"```python",
		"print('not included from anywhere')",
		"```",
		"```yaml",
		"protocol:",
		"  max_mesage: 1000",
		"```",
		"```sh",
		"cat > homa.yaml <<'YAML'",
		"ports:",
		"  - device: net_ring0",
		"    address: 10.0.0.300/24",
		"YAML",
		"```",
	}, "\n"))
	type check struct {
		name string
		run  func(*page) []string
		want []string // a substring of some problem, each
	}
	checks := []check{
		{"links", func(p *page) []string { return checkLinks(p, env) },
			[]string{"#no-such-section", "nothing-here.md"}},
		{"commands", func(p *page) []string { return checkCommands(p, env) },
			[]string{"--smokey", "nonsense", "--colour", "scripts/no-such.sh", "perf/no-such-dir/",
				"needs <!-- not run", "./no/such/package", "no-such-target", "TestNoSuch_thing"}},
		{"includes", func(p *page) []string { return checkIncludes(p, env) },
			[]string{"differs from examples/hello/main.go#call", "python block is not included"}},
		{"yaml", func(p *page) []string { return checkYAML(p, env) },
			[]string{"protocol.max_mesage", "config check"}},
	}
	for _, c := range checks {
		got := c.run(bad)
		for _, w := range c.want {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
				t.Errorf("%s: no problem mentions %q; got:\n%s", c.name, w, strings.Join(got, "\n"))
			}
		}
	}
	long := parsePage("docs/long.md", strings.Repeat("line\n", docMaxLines+1))
	if len(checkLength(long)) == 0 {
		t.Errorf("a page of %d lines passed", docMaxLines+1)
	}
	if got := slugs([]string{"The cluster in simulation: `perf cluster`", "Tests", "Tests", "Messages beyond 1 MB"}); !slices.Equal(got,
		[]string{"the-cluster-in-simulation-perf-cluster", "tests", "tests-1", "messages-beyond-1-mb"}) {
		t.Errorf("slugs: %q", got)
	}
}

// ---- pages

// page is a Markdown file split into what the checks read.
type page struct {
	rel    string   // path from the repository root
	lines  []string // every line
	blocks []block  // fenced code blocks
	prose  []para   // text outside fences, by paragraph
	heads  []string // heading texts, in order
}

// block is a fenced code block and the directive on the line before it.
type block struct {
	line      int    // 1-based line of the opening fence
	lang      string // the info string's first word
	body      string // the lines between the fences, each ending in \n
	directive string // "code: PATH#REGION", "not run: WHY" or ""
}

// para is a paragraph of prose, its lines joined by spaces.
type para struct {
	line int
	text string
}

var (
	fenceRE     = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([^`\\s]*)")
	headingRE   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	directiveRE = regexp.MustCompile(`^\s*<!--\s*((?:code|not run):.*?)\s*-->\s*$`)
)

func parsePage(rel, text string) *page {
	p := &page{rel: rel, lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n")}
	var cur *block
	var fence string
	var prose []string
	start := 0
	flush := func() {
		if len(prose) > 0 {
			p.prose = append(p.prose, para{start, strings.Join(prose, " ")})
		}
		prose = nil
	}
	for i, l := range p.lines {
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(l), fence) && strings.Trim(strings.TrimSpace(l), fence[:1]) == "" {
				p.blocks = append(p.blocks, *cur)
				cur = nil
				continue
			}
			cur.body += l + "\n"
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			flush()
			cur = &block{line: i + 1, lang: m[2]}
			fence = m[1]
			if i > 0 {
				if d := directiveRE.FindStringSubmatch(p.lines[i-1]); d != nil {
					cur.directive = d[1]
				}
			}
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			flush()
			p.heads = append(p.heads, m[2])
			prose = []string{m[2]}
			start = i + 1
			flush()
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if len(prose) == 0 {
			start = i + 1
		}
		prose = append(prose, l)
	}
	flush()
	return p
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLinkRE  = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*(\S+)`)
)

type link struct {
	line   int
	target string
}

// links are the page's relative link targets (inline and reference
// style), outside code.
func (p *page) links() []link {
	var out []link
	for _, pr := range p.prose {
		text := codeSpanRE.ReplaceAllString(pr.text, "code")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			out = append(out, link{pr.line, m[1]})
		}
		if m := refLinkRE.FindStringSubmatch(pr.text); m != nil {
			out = append(out, link{pr.line, m[1]})
		}
	}
	return slices.DeleteFunc(out, func(l link) bool {
		return strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:")
	})
}

// codeSpans are the page's inline code, with the line of its paragraph.
func (p *page) codeSpans() []link {
	var out []link
	for _, pr := range p.prose {
		for _, m := range codeSpanRE.FindAllStringSubmatch(pr.text, -1) {
			out = append(out, link{pr.line, m[1]})
		}
	}
	return out
}

// ---- lengths

func checkLength(p *page) []string {
	limit := docMaxLines
	if p.rel == "README.md" {
		limit = readmeMaxLines
	}
	if n := len(p.lines); n > limit {
		return []string{fmt.Sprintf("%s: %d lines, more than %d: split it by task", p.rel, n, limit)}
	}
	return nil
}

// ---- links

// docEnv is what the checks compare pages with: the command tree, the
// repository's files, the config's documented keys.
type docEnv struct {
	root     *cobra.Command
	tracked  map[string]bool // files git tracks, and their directories
	topLevel map[string]bool // first components of tracked paths
	anchors  map[string][]string
	config   map[string]any  // config/example.yaml, parsed
	tests    map[string]bool // test functions, classes and methods by name, once read
}

func newDocEnv(t *testing.T) *docEnv {
	t.Helper()
	e := &docEnv{root: rootCmd(), tracked: map[string]bool{}, topLevel: map[string]bool{}, anchors: map[string][]string{}}
	out, err := exec.Command("git", "-C", docsRoot, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the docs test reads the repository's file list)", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := sc.Text()
		if _, err := os.Lstat(filepath.Join(docsRoot, f)); err != nil {
			continue // deleted in the work tree
		}
		e.tracked[f] = true
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			e.tracked[d] = true
		}
		first, _, _ := strings.Cut(f, "/")
		e.topLevel[first] = true
	}
	b, err := os.ReadFile(filepath.Join(docsRoot, "config/example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &e.config); err != nil {
		t.Fatalf("config/example.yaml: %v", err)
	}
	return e
}

// exists reports whether rel (a path from the repository root, with or
// without a trailing slash) is a tracked file or directory.
func (e *docEnv) exists(rel string) bool {
	rel = filepath.Clean(rel)
	return e.tracked[rel]
}

// headings returns the anchors of a page (from the repository root).
func (e *docEnv) headings(rel string) ([]string, bool) {
	if a, ok := e.anchors[rel]; ok {
		return a, true
	}
	b, err := os.ReadFile(filepath.Join(docsRoot, rel))
	if err != nil {
		return nil, false
	}
	a := slugs(parsePage(rel, string(b)).heads)
	e.anchors[rel] = a
	return a, true
}

// slugs gives GitHub's anchors for headings (mdanchor.Slugs).
var slugs = mdanchor.Slugs

func checkLinks(p *page, e *docEnv) []string {
	var problems []string
	for _, l := range p.links() {
		path, anchor, _ := strings.Cut(l.target, "#")
		target := p.rel
		if path != "" {
			target = filepath.Join(filepath.Dir(p.rel), path)
			if strings.HasPrefix(filepath.Clean(target), "..") {
				continue // outside the repository
			}
			if !e.exists(target) {
				problems = append(problems, fmt.Sprintf("%s:%d: link %s: no such file", p.rel, l.line, l.target))
				continue
			}
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(target, ".md") {
			problems = append(problems, fmt.Sprintf("%s:%d: link %s: an anchor into a file that is not Markdown", p.rel, l.line, l.target))
			continue
		}
		var heads []string
		if target == p.rel {
			heads = slugs(p.heads)
		} else {
			heads, _ = e.headings(filepath.Clean(target))
		}
		if !slices.Contains(heads, anchor) {
			problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no heading #%s", p.rel, l.line, l.target, target, anchor))
		}
	}
	return problems
}

// ---- commands

// ---- included code

// ---- YAML
