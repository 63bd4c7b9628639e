package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
)

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
		if !e.exists(strings.TrimSuffix(part, "/")) && !e.ignored(part) {
			return fmt.Sprintf("%s: %s: no such file or directory in the repository", where, part)
		}
	}
	return ""
}

// ignored reports whether git ignores rel: a build's output
// (native/build/examples/hello), which a page may name though no clone
// has it before the build; the blocks that build it run.
func (e *docEnv) ignored(rel string) bool {
	return exec.Command("git", "-C", docsRoot, "check-ignore", "-q", "--no-index", rel).Run() == nil
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
