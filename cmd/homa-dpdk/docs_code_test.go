package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"go.yaml.in/yaml/v3"
)

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
