package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Figures in the pages are generated from one committed perf run, never
// typed: the lines between <!-- figures: PATH --> and <!-- /figures -->
// are what figuresTable makes of the JSON at PATH (perf all's all.json,
// or a scenario's own JSON beside it), and -update-figures writes them.
var updateFigures = flag.Bool("update-figures", false, "rewrite the pages' generated figures from the JSON their markers name")

const (
	figuresOpen  = "<!-- figures: "
	figuresClose = "<!-- /figures -->"
)

// headlineGoals are the goal rows the README shows, by their names in
// perf all's goals table: the round trip and the stream against kernel
// TCP, what the worker path adds, the engine's cost and a fresh daemon's
// warm-up. Other pages show every goal row of their JSON.
var headlineGoals = []string{
	"RTT P50 at 100 B, TCP over Homa",
	"RTT P50 at 10 KB, TCP over Homa",
	"RTT P50 at 1 MB, TCP over Homa",
	"1 MB streaming throughput, Homa over TCP",
	"1 MB streaming CPU per GB, Homa over TCP",
	"Send-side copies per payload byte, 1 MB on ring",
	"worker RTT P50 minus in-daemon RTT P50, µs (100 B)",
	"ns per packet event, engine alone (1 MB streaming; small RPCs in the cost section)",
	"no warm-up penalty",
}

// figuresRun is what a table reads of a run's JSON.
type figuresRun struct {
	Started time.Time `json:"started"`
	Smoke   bool      `json:"smoke"`
	CPUs    int       `json:"cpus"`
	Build   string    `json:"build"`
	CPU     string    `json:"cpu_model"`
	Goals   []struct {
		Goal   string  `json:"goal"`
		Figure float64 `json:"figure"`
		Want   string  `json:"want"`
		Met    bool    `json:"met"`
		Absent string  `json:"absent"`
	} `json:"goals"`
}

func readRun(rel string) (figuresRun, error) {
	var run figuresRun
	b, err := os.ReadFile(filepath.Join(docsRoot, rel))
	if err != nil {
		return run, err
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return run, fmt.Errorf("%s: %v", rel, err)
	}
	return run, nil
}

// figuresTable renders the lines a page shows of the JSON at rel
// (relative to the repository) for page: a line naming the run (its
// command, build and machine) and linking its report, then its goal rows,
// in the README only the headline rows of perf all's. A scenario's JSON that names no build of its own was written
// by the same program on the same machine as the all.json beside it
// (perf all, then the scenario, from one results directory), whose build
// and machine it takes.
func figuresTable(rel, page string) (string, error) {
	run, err := readRun(rel)
	if err != nil {
		return "", err
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	name := strings.TrimSuffix(filepath.Base(rel), ".json")
	command, report := "perf all", dir+"/report.md"
	headline := page == "README.md" && name == "all"
	if name != "all" {
		command, report = "perf "+name+" --quick", dir+"/"+name+".md"
		if run.Build == "" {
			all, err := readRun(dir + "/all.json")
			if err != nil {
				return "", fmt.Errorf("%s names no build and has no all.json beside it: %v", rel, err)
			}
			run.Build, run.CPUs, run.CPU, run.Started = all.Build, all.CPUs, all.CPU, all.Started
		}
	}
	switch {
	case run.Smoke:
		return "", fmt.Errorf("%s is a smoke run: its figures mean nothing", rel)
	case run.Build == "" || strings.Contains(run.Build, "commit unknown") || strings.Contains(run.Build, "modified"):
		return "", fmt.Errorf("%s: the run's build %q names no clean commit", rel, run.Build)
	}
	if _, err := os.Stat(filepath.Join(docsRoot, report)); err != nil {
		return "", fmt.Errorf("%s: no report beside it: %v", rel, err)
	}
	link, err := filepath.Rel(filepath.Dir(page), report)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "From one run of `./homa-dpdk %s` ([its report](%s)), %s, on %d CPUs (%s), %s.\n",
		command, filepath.ToSlash(link), run.Build, run.CPUs, run.CPU, run.Started.UTC().Format("2006-01-02"))
	out.WriteString("Each figure is a ratio against the peer measured in the same run, or as the row says; the goal is the project's target.\n\n")
	out.WriteString("| goal | this run | want | met |\n| :--- | ---: | ---: | :--- |\n")
	rows := 0
	for _, g := range run.Goals {
		if headline && !containsString(headlineGoals, g.Goal) {
			continue
		}
		rows++
		switch {
		case g.Absent != "":
			fmt.Fprintf(&out, "| %s | — | %s | (%s) |\n", g.Goal, g.Want, g.Absent)
		case g.Met:
			fmt.Fprintf(&out, "| %s | %.2f | %s | yes |\n", g.Goal, g.Figure, g.Want)
		default:
			fmt.Fprintf(&out, "| %s | %.2f | %s | no |\n", g.Goal, g.Figure, g.Want)
		}
	}
	if want := len(headlineGoals); headline && rows != want {
		return "", fmt.Errorf("%s has %d of the %d headline goal rows (headlineGoals)", rel, rows, want)
	}
	if rows == 0 {
		return "", fmt.Errorf("%s has no goal rows", rel)
	}
	return out.String(), nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// figuresSpans finds each generated span of a page: the path its opening
// marker names and the byte offsets of the lines between the markers.
type figuresSpan struct {
	rel        string
	start, end int
}

func figuresSpans(page string) ([]figuresSpan, error) {
	var spans []figuresSpan
	for off := 0; ; {
		open := strings.Index(page[off:], "\n"+figuresOpen) // a marker starts its line
		if open < 0 {
			return spans, nil
		}
		open += off + 1
		eol := strings.Index(page[open:], "\n")
		if eol < 0 {
			return nil, fmt.Errorf("a figures marker ends the page")
		}
		marker := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(page[open+len(figuresOpen):open+eol]), "-->"))
		start := open + eol + 1
		close := strings.Index(page[start:], figuresClose)
		if close < 0 {
			return nil, fmt.Errorf("figures of %s: no %s", marker, figuresClose)
		}
		spans = append(spans, figuresSpan{marker, start, start + close})
		off = start + close
	}
}

// TestDocs_figuresAreGenerated holds every page's figures to the run its
// marker names, and the README to its headline table: it fails when a
// figure was typed, or the run changed without the page.
func TestDocs_figuresAreGenerated(t *testing.T) {
	headlines := 0
	for _, page := range docPages(t) {
		path := filepath.Join(docsRoot, page)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		spans, err := figuresSpans(text)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		rewritten := text
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if page == "README.md" && filepath.Base(s.rel) == "all.json" {
				headlines++
			}
			want, err := figuresTable(s.rel, page)
			if err != nil {
				t.Errorf("%s: %v", page, err)
				continue
			}
			if got := text[s.start:s.end]; got != want {
				if !*updateFigures {
					t.Errorf("%s: the figures are not what %s gives (go test ./cmd/homa-dpdk -run TestDocs_figures -update-figures):\n got:\n%s\nwant:\n%s", page, s.rel, got, want)
				}
				rewritten = rewritten[:s.start] + want + rewritten[s.end:]
			}
		}
		if *updateFigures && rewritten != text {
			if err := os.WriteFile(path, []byte(rewritten), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if headlines != 1 {
		t.Errorf("README.md has %d headline tables (<!-- figures: docs/reports/.../all.json -->), want 1", headlines)
	}
}

// TestDocs_figuresRefuseAnUntraceableRun shows a table refusing a smoke
// run, a run whose build names no clean commit and one without the
// headline rows.
func TestDocs_figuresRefuseAnUntraceableRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte("# report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clean := `"build": "homa-dpdk (devel) (commit 0123456789ab; go1.26; DPDK 22.11.1)"`
	row := `"goals": [{"goal": "no warm-up penalty", "figure": 1.1, "want": "<= 1.50", "met": true}]`
	for name, body := range map[string]string{
		"smoke":         `{"smoke": true, ` + clean + `, ` + row + `}`,
		"modified":      `{"build": "homa-dpdk (devel) (commit 0123456789ab, modified; go1.26; DPDK 22.11.1)", ` + row + `}`,
		"unknown":       `{"build": "homa-dpdk (devel) (commit unknown; go1.26; DPDK 22.11.1)", ` + row + `}`,
		"no build":      `{` + row + `}`,
		"no headline":   `{` + clean + `, ` + row + `}`,
		"no goals":      `{` + clean + `, "goals": []}`,
		"not even JSON": `{`,
	} {
		f := filepath.Join(dir, "all.json")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		root, err := filepath.Abs(docsRoot)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := figuresTable(rel, "README.md"); err == nil {
			t.Errorf("%s: the table took it", name)
		}
	}
}
