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
//     named exist, `go` packages and `make -C DIR` targets exist. A block
//     that cannot run on a bare machine (a physical NIC, a cluster, a
//     registry) says why on the line before it: <!-- not run: WHY -->.
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
	"unicode"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
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

var mdLinkTextRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slugs gives GitHub's anchors for headings: lower case, every character
// but letters, digits, spaces, hyphens and underscores dropped, spaces
// to hyphens, and -1, -2, ... after a repeated one.
func slugs(heads []string) []string {
	seen := map[string]int{}
	var out []string
	for _, h := range heads {
		h = mdLinkTextRE.ReplaceAllString(h, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		s := b.String()
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

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

// needsNotRun matches what no bare machine runs: a physical NIC's PCI
// address, containers and clusters, package installs, services.
var needsNotRun = regexp.MustCompile(`\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b|^(sudo\s+)?(apt-get|apt|docker|podman|kubectl|systemctl|dpdk-devbind\.py)\b`)

func checkCommands(p *page, e *docEnv) []string {
	var problems []string
	for _, b := range p.blocks {
		if !isShell(b.lang) {
			continue
		}
		where := fmt.Sprintf("%s:%d", p.rel, b.line)
		marked := strings.HasPrefix(b.directive, "not run:")
		if marked && strings.TrimSpace(strings.TrimPrefix(b.directive, "not run:")) == "" {
			problems = append(problems, where+": <!-- not run: --> says no reason")
		}
		for _, cmd := range shellCommands(b.body) {
			if !marked && needsNotRun.MatchString(strings.Join(cmd, " ")) {
				problems = append(problems, fmt.Sprintf("%s: %q needs <!-- not run: WHY --> before its block", where, strings.Join(cmd, " ")))
			}
			problems = append(problems, e.checkCommand(where, cmd)...)
		}
	}
	for _, s := range p.codeSpans() {
		where := fmt.Sprintf("%s:%d", p.rel, s.line)
		words := strings.Fields(s.target)
		switch {
		case len(words) == 0:
		case filepath.Base(words[0]) == "homa-dpdk" && len(words) > 1:
			problems = append(problems, e.checkCommand(where, shellWords(s.target))...)
		case len(words) > 1 && isSubcommand(e.root, words[0]) && strings.Contains(s.target, " --"):
			problems = append(problems, e.checkCommand(where, append([]string{"homa-dpdk"}, shellWords(s.target)...))...)
		case len(words) == 1:
			if problem := e.checkPath(where, words[0]); problem != "" {
				problems = append(problems, problem)
			}
		}
		if m := testNameRE.FindStringSubmatch(s.target); m != nil && !e.testExists(m[1]) {
			problems = append(problems, fmt.Sprintf("%s: no test %s (no func %s( in a _test.go, no class or def %s in python/tests)", where, m[1], m[1], m[1]))
		}
	}
	return problems
}

// testNameRE matches inline code that names a test: `TestThing_case`,
// or `package TestThing_case`.
var testNameRE = regexp.MustCompile(`^(?:[\w/]+ )?(Test[A-Z]\w*)$`)

// testExists reports whether a Go test function or a Python test class or
// method has that name.
func (e *docEnv) testExists(name string) bool {
	if e.tests == nil {
		e.tests = map[string]bool{}
		goRE := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
		pyRE := regexp.MustCompile(`(?m)^\s*(?:class|def) (Test\w+|test\w+)`)
		for f := range e.tracked {
			var re *regexp.Regexp
			switch {
			case strings.HasSuffix(f, "_test.go"):
				re = goRE
			case strings.HasPrefix(f, "python/tests/") && strings.HasSuffix(f, ".py"):
				re = pyRE
			default:
				continue
			}
			b, err := os.ReadFile(filepath.Join(docsRoot, f))
			if err != nil {
				continue
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				e.tests[m[1]] = true
			}
		}
	}
	return e.tests[name]
}

func isShell(lang string) bool {
	return lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
}

func isSubcommand(c *cobra.Command, name string) bool {
	for _, s := range c.Commands() {
		if s.Name() == name {
			return true
		}
	}
	return false
}

// checkCommand checks one command line: a homa-dpdk command's
// subcommands and flags, a script, a go package, a make target, and every
// word that names a repository path.
func (e *docEnv) checkCommand(where string, cmd []string) []string {
	var problems []string
	for _, w := range cmd {
		if p := e.checkPath(where, w); p != "" {
			problems = append(problems, p)
		}
	}
	cmd = stripPrefixes(cmd)
	if len(cmd) == 0 {
		return problems
	}
	prog := cmd[0]
	switch {
	case filepath.Base(prog) == "homa-dpdk":
		problems = append(problems, e.checkHomaDPDK(where, cmd[1:])...)
	case (prog == "bash" || prog == "sh") && len(cmd) > 1:
		if !e.exists(cmd[1]) {
			problems = append(problems, fmt.Sprintf("%s: %s: no such script", where, cmd[1]))
		}
	case strings.HasPrefix(prog, "./scripts/") || strings.HasPrefix(prog, "scripts/"):
		if !e.exists(prog) {
			problems = append(problems, fmt.Sprintf("%s: %s: no such script", where, prog))
		}
	case prog == "go" && len(cmd) > 1:
		for _, a := range cmd[2:] {
			if strings.HasPrefix(a, "./") && !e.exists(strings.TrimSuffix(strings.TrimPrefix(a, "./"), "/...")) && a != "./..." {
				problems = append(problems, fmt.Sprintf("%s: go %s %s: no such package", where, cmd[1], a))
			}
		}
	case prog == "make":
		problems = append(problems, e.checkMake(where, cmd[1:])...)
	}
	return problems
}

var assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// stripPrefixes drops environment assignments and the commands that run
// another (sudo, exec, time, nohup, timeout N, ip netns exec NS).
func stripPrefixes(cmd []string) []string {
	for len(cmd) > 0 {
		switch {
		case assignmentRE.MatchString(cmd[0]):
			cmd = cmd[1:]
		case cmd[0] == "sudo" || cmd[0] == "exec" || cmd[0] == "time" || cmd[0] == "nohup":
			cmd = cmd[1:]
		case cmd[0] == "timeout" && len(cmd) > 1:
			cmd = cmd[2:]
		case cmd[0] == "ip" && len(cmd) > 3 && cmd[1] == "netns" && cmd[2] == "exec":
			cmd = cmd[4:]
		default:
			return cmd
		}
	}
	return cmd
}

// checkPath checks a word that names a repository path (its first
// component a tracked top-level entry), alone or after "key:" or "key=".
func (e *docEnv) checkPath(where, w string) string {
	w = strings.Trim(w, `"'(),;`)
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == ':' || r == '=' }) {
		part = strings.TrimPrefix(part, "./")
		if strings.ContainsAny(part, "$<>*{}[]|…") || !strings.Contains(part, "/") || strings.Contains(part, "...") {
			continue
		}
		first, _, _ := strings.Cut(part, "/")
		if first == "homa-dpdk" || !e.topLevel[first] {
			continue
		}
		if !e.exists(strings.TrimSuffix(part, "/")) {
			return fmt.Sprintf("%s: %s: no such file or directory in the repository", where, part)
		}
	}
	return ""
}

// checkHomaDPDK walks args down the command tree: words while the command
// has subcommands must name one, then every --flag (until --, where EAL's
// arguments begin) must be the command's or inherited.
func (e *docEnv) checkHomaDPDK(where string, args []string) []string {
	c := e.root
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") || !c.HasSubCommands() {
			break
		}
		next, _, err := c.Find([]string{a})
		if err != nil || next == c {
			return []string{fmt.Sprintf("%s: %s has no subcommand %q", where, c.CommandPath(), a)}
		}
		c = next
	}
	c.InitDefaultHelpFlag()
	var problems []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var found bool
		if strings.HasPrefix(a, "--") {
			found = c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil
		} else {
			found = len(name) == 1 && (c.Flags().ShorthandLookup(name) != nil || c.InheritedFlags().ShorthandLookup(name) != nil)
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: %s has no flag %s", where, c.CommandPath(), a))
		}
	}
	return problems
}

var makeTargetRE = regexp.MustCompile(`(?m)^([A-Za-z0-9_.\- ]+):`)

func (e *docEnv) checkMake(where string, args []string) []string {
	dir := "."
	var targets []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-C" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasPrefix(args[i], "-") || strings.Contains(args[i], "="):
		default:
			targets = append(targets, args[i])
		}
	}
	b, err := os.ReadFile(filepath.Join(docsRoot, dir, "Makefile"))
	if err != nil {
		return []string{fmt.Sprintf("%s: make -C %s: no Makefile", where, dir)}
	}
	have := map[string]bool{}
	for _, m := range makeTargetRE.FindAllStringSubmatch(string(b), -1) {
		for _, t := range strings.Fields(m[1]) {
			have[t] = true
		}
	}
	var problems []string
	for _, t := range targets {
		if !have[t] {
			problems = append(problems, fmt.Sprintf("%s: make -C %s: no target %s", where, dir, t))
		}
	}
	return problems
}

// shellCommands splits a shell block into commands: continuation lines
// joined, comments and here-documents dropped, split at ;, &&, ||, | and &.
func shellCommands(body string) [][]string {
	var out [][]string
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + lines[i]
		}
		words := shellWords(l)
		cmd := []string{}
		for j := 0; j < len(words); j++ {
			w := words[j]
			if strings.HasPrefix(w, "<<") { // a here-document: skip to its end
				end := strings.Trim(strings.TrimPrefix(w, "<<"), `'"-`)
				if end == "" && j+1 < len(words) {
					end = strings.Trim(words[j+1], `'"`)
				}
				for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != end {
					i++
				}
				i++
				continue
			}
			switch w {
			case ";", "&&", "||", "|", "&":
				if len(cmd) > 0 {
					out = append(out, cmd)
				}
				cmd = []string{}
			default:
				cmd = append(cmd, w)
			}
		}
		if len(cmd) > 0 {
			out = append(out, cmd)
		}
	}
	return out
}

// shellWords splits a line as the shell would, near enough: quotes
// group, # starts a comment, operators are words of their own.
func shellWords(l string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	rs := []rune(l)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '#' && !inWord:
			end()
			return words
		case unicode.IsSpace(r):
			end()
		case r == ';' || r == '|' || r == '&':
			end()
			op := string(r)
			if i+1 < len(rs) && (rs[i+1] == '&' || rs[i+1] == '|') && r != ';' {
				op += string(rs[i+1])
				i++
			}
			words = append(words, op)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words
}

// ---- included code

// runners are the files that run others: tests, the Python tests, CI and
// the scripts it runs. An included file must be named by one of them, or
// (Go) be in a package with tests.
func (e *docEnv) runners() []string {
	var out []string
	for f := range e.tracked {
		if strings.HasSuffix(f, "_test.go") || (strings.HasPrefix(f, "python/tests/") && strings.HasSuffix(f, ".py")) ||
			f == ".ci/run" || f == "scripts/test.sh" {
			out = append(out, f)
		}
	}
	ci, _ := os.ReadFile(filepath.Join(docsRoot, ".ci/run"))
	for _, m := range regexp.MustCompile(`scripts/[a-z-]+\.sh`).FindAllString(string(ci), -1) {
		out = append(out, m)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// exercised reports whether a test builds or runs file.
func (e *docEnv) exercised(file string) bool {
	if strings.HasSuffix(file, ".go") {
		dir := filepath.Dir(file)
		for f := range e.tracked {
			if filepath.Dir(f) == dir && strings.HasSuffix(f, "_test.go") {
				return true
			}
		}
	}
	for _, r := range e.runners() {
		b, err := os.ReadFile(filepath.Join(docsRoot, r))
		if err == nil && strings.Contains(string(b), file) {
			return true
		}
	}
	return false
}

func checkIncludes(p *page, e *docEnv) []string {
	var problems []string
	for _, b := range p.blocks {
		where := fmt.Sprintf("%s:%d", p.rel, b.line)
		spec, ok := strings.CutPrefix(b.directive, "code:")
		if !ok {
			if b.lang == "go" || b.lang == "python" {
				problems = append(problems, fmt.Sprintf("%s: a %s block is not included from a file a test runs (<!-- code: PATH#REGION -->)", where, b.lang))
			}
			continue
		}
		file, region, _ := strings.Cut(strings.TrimSpace(spec), "#")
		src, err := os.ReadFile(filepath.Join(docsRoot, file))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: code: %v", where, err))
			continue
		}
		want := string(src)
		if region != "" {
			want, err = extractRegion(want, region)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: code: %s: %v", where, file, err))
				continue
			}
		}
		if b.body != want {
			problems = append(problems, fmt.Sprintf("%s: the block differs from %s; it should read:\n%s", where, strings.TrimSpace(spec), want))
		}
		if !e.exercised(file) {
			problems = append(problems, fmt.Sprintf("%s: %s: no test, CI step or script CI runs names it (or, for Go, tests its package)", where, file))
		}
	}
	return problems
}

var regionRE = regexp.MustCompile(`^\s*(?://|#)\s*#(region|endregion)\b\s*(\S*)`)

// extractRegion returns the lines between "#region NAME" and the next
// "#endregion" (as // or # comments), less their common indentation.
func extractRegion(src, name string) (string, error) {
	var lines []string
	in, found := false, false
	for _, l := range strings.Split(src, "\n") {
		m := regionRE.FindStringSubmatch(l)
		switch {
		case m != nil && m[1] == "region" && m[2] == name:
			in, found = true, true
		case m != nil && m[1] == "endregion" && in:
			in = false
		case m != nil:
		case in:
			lines = append(lines, l)
		}
	}
	if !found {
		return "", fmt.Errorf("no region %q", name)
	}
	indent, set := "", false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if !set {
			indent, set = lead, true
		}
		for !strings.HasPrefix(lead, indent) {
			indent = indent[:len(indent)-1]
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimPrefix(l, indent) + "\n")
	}
	return b.String(), nil
}

// ---- YAML

// heredocYAMLRE matches a shell line that writes a YAML file from a
// here-document: cat > homa.yaml <<'YAML'.
var heredocYAMLRE = regexp.MustCompile(`^\s*cat\s*>\s*\S+\.ya?ml\s*<<-?\s*'?"?(\w+)`)

// yamlBlocks are the page's YAML blocks and the YAML files its shell
// blocks write from here-documents.
func yamlBlocks(p *page) []block {
	var out []block
	for _, b := range p.blocks {
		switch {
		case b.lang == "yaml" || b.lang == "yml":
			out = append(out, b)
		case isShell(b.lang):
			lines := strings.Split(b.body, "\n")
			for i := 0; i < len(lines); i++ {
				m := heredocYAMLRE.FindStringSubmatch(lines[i])
				if m == nil {
					continue
				}
				doc := block{line: b.line + i + 1, lang: "yaml"}
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != m[1]; i++ {
					doc.body += lines[i] + "\n"
				}
				out = append(out, doc)
			}
		}
	}
	return out
}

func checkYAML(p *page, e *docEnv) []string {
	var problems []string
	for _, b := range yamlBlocks(p) {
		where := fmt.Sprintf("%s:%d", p.rel, b.line)
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(b.body), &doc); err != nil {
			problems = append(problems, fmt.Sprintf("%s: YAML: %v", where, err))
			continue
		}
		problems = append(problems, unknownKeys(where, "", doc, e.config)...)
		if _, whole := doc["ports"]; whole {
			// A whole config passes `homa-dpdk config check`, which needs
			// no device: EAL checks those at run time.
			spec, err := config.Load(config.Source{YAML: b.body})
			if err == nil {
				err = daemon.Preflight(spec)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: homa-dpdk config check: %v", where, err))
			}
		}
	}
	return problems
}

// unknownKeys lists the keys of doc that the documented config want does
// not have; a list's items are compared with the union of want's.
func unknownKeys(where, prefix string, doc, want any) []string {
	var problems []string
	switch d := doc.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			return nil // a value the config takes as it is
		}
		for k, v := range d {
			wv, ok := w[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: config key %s%s is not in config/example.yaml", where, prefix, k))
				continue
			}
			problems = append(problems, unknownKeys(where, prefix+k+".", v, wv)...)
		}
	case []any:
		wl, ok := want.([]any)
		if !ok {
			return nil
		}
		union := map[string]any{}
		for _, item := range wl {
			if m, ok := item.(map[string]any); ok {
				for k, v := range m {
					union[k] = v
				}
			}
		}
		for _, item := range d {
			if _, ok := item.(map[string]any); ok {
				problems = append(problems, unknownKeys(where, strings.TrimSuffix(prefix, ".")+"[].", item, union)...)
			}
		}
	}
	return problems
}
