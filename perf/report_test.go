package perf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// chart is a Chart that writes its text, or nothing when it has none.
type chart string

func (c chart) Save(path string) (bool, error) {
	if c == "" {
		return false, nil
	}
	return true, os.WriteFile(path, []byte(c), 0o644)
}

func testReport() Report {
	return Report{Name: "rtt", Title: "rtt: a title", Heading: "rtt: the terminal's heading", Method: "how", Distortions: "what distorts it",
		Tables: []Table{{Title: "P50", Header: []string{"size", "homa-ring P50 µs", "homa-ring P99 µs"}, Rows: [][]string{{"100 B", "5.0", "9.0"}}}},
		Terse:  func(t Table) Table { return t.Without(" P99 µs") },
		Notes:  []string{"a note of the scenario's"},
		Series: SeriesOf([]string{"homa-ring", "tcp-veth", "homa-ring"}, func(s string) (string, string) {
			if s == "tcp-veth" {
				return s, "no netns"
			}
			return s, ""
		}),
		Loops:  []LoopStats{{Loop: "daemon", Passes: 7, MaxGapUs: 3, MaxGapFound: true}, {Loop: "other"}},
		Smoke:  "tiny counts.",
		JSON:   "rtt.json",
		Result: map[string]int{"x": 1},
		Page:   "rtt.md",
		Plots:  []Plot{{File: "rtt.png", Chart: chart("png")}, {File: "none.png", Chart: chart("")}},
	}
}

// Every part of a report stands in its place: the scenario's notes, what
// joins Homa's hosts in its series, the series skipped, the loops and the
// smoke note, in that order, in the text and the section alike.
func TestReport_notesInOrder(t *testing.T) {
	r := testReport()
	want := []string{"a note of the scenario's", linkNotes["homa-ring"], "tcp-veth skipped: no netns",
		"Polling loop daemon: 7 passes, longest gap between two passes 3.0 µs.", "Polling loop other: no longest gap reported.",
		"Smoke run: tiny counts."}
	if got := r.AllNotes(); !slices.Equal(got, want) {
		t.Errorf("notes\n%q\nwant\n%q", got, want)
	}
	s := r.Section([]string{"rtt.png"})
	if s.Name != "rtt" || s.Title != "rtt: a title" || s.Method != "how" || s.Distortions != "what distorts it" ||
		!slices.Equal(s.Notes, want) || len(s.Tables) != 1 || !slices.Equal(s.Images, []string{"rtt.png"}) {
		t.Errorf("section %+v", s)
	}
	var b strings.Builder
	r.Text(&b)
	text := b.String()
	if !strings.HasPrefix(text, "rtt: the terminal's heading\nP50\nsize   homa-ring P50 µs\n100 B               5.0\n") ||
		strings.Contains(text, "P99") || !strings.HasSuffix(text, "Smoke run: tiny counts.\n") {
		t.Errorf("text:\n%s", text)
	}
}

// A series is named once, skipped where any of its runs was.
func TestSeriesOf_onceEach(t *testing.T) {
	type run struct{ name, why string }
	got := SeriesOf([]run{{"a", ""}, {"b", ""}, {"a", "down"}}, func(r run) (string, string) { return r.name, r.why })
	if !slices.Equal(got, []Series{{"a", "down"}, {"b", ""}}) {
		t.Errorf("%+v", got)
	}
}

// The files: the result's JSON, the plots that had something to draw
// (the images), the page with the section under the report's title; and
// the line that says where they are.
func TestReport_writesItsFiles(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	if err := testReport().Write(&b, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "results in "+dir+" (rtt.json, rtt.md, rtt.png)\n") {
		t.Errorf("text:\n%s", b.String())
	}
	var v map[string]int
	if j, err := os.ReadFile(filepath.Join(dir, "rtt.json")); err != nil || json.Unmarshal(j, &v) != nil || v["x"] != 1 {
		t.Errorf("rtt.json: %s %v", j, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.png")); err == nil {
		t.Error("a chart with nothing to draw wrote a file")
	}
	page, _ := os.ReadFile(filepath.Join(dir, "rtt.md"))
	for _, want := range []string{"# rtt: a title\n\n**P50**\n\n| size | homa-ring P50 µs | homa-ring P99 µs |", "- tcp-veth skipped: no netns",
		"![rtt](rtt.png)", "**Method.** how", "**Known distortions.** what distorts it"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("rtt.md lacks %q:\n%s", want, page)
		}
	}
	// perf all's report.md has the same section under its own heading.
	path := filepath.Join(dir, "report.md")
	r := testReport()
	if err := WriteReport(path, "report", []string{"meta"}, []Section{r.Section([]string{"rtt.png"})}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	if !strings.Contains(string(md), "# report\n\n- meta\n\n## rtt: a title\n\n**P50**") || !strings.Contains(string(md), "- Smoke run: tiny counts.") {
		t.Errorf("report.md:\n%s", md)
	}
}

// A table without a header after Terse stays off the terminal.
func TestReport_terseDropsTables(t *testing.T) {
	r := Report{Title: "t", Tables: []Table{{Header: []string{"a"}, Rows: [][]string{{"1"}}}, {Title: "long", Header: []string{"b"}}},
		Terse: func(t Table) Table {
			if t.Title == "long" {
				return Table{}
			}
			return t
		}}
	var b strings.Builder
	r.Text(&b)
	if b.String() != "t\na\n1\n" {
		t.Errorf("text %q", b.String())
	}
}
