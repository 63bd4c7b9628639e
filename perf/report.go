package perf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ResultsDir makes the results directory: out, or results/<timestamp>.
func ResultsDir(out string) (string, error) {
	if out == "" {
		out = filepath.Join("results", time.Now().Format("2006-01-02T15-04-05"))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// WriteJSON writes v as indented JSON to path, creating its directory.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Table is a results table, with its title where it has one.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
}

// Without is the table without the columns whose header ends with
// suffix.
func (t Table) Without(suffix string) Table {
	var keep []int
	out := Table{Title: t.Title}
	for i, h := range t.Header {
		if !strings.HasSuffix(h, suffix) {
			keep = append(keep, i)
			out.Header = append(out.Header, h)
		}
	}
	for _, row := range t.Rows {
		var r []string
		for _, i := range keep {
			if i < len(row) {
				r = append(r, row[i])
			}
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}

// Text writes the table aligned in columns.
func (t Table) Text(w io.Writer) {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len([]rune(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if t.Title != "" {
		fmt.Fprintln(w, t.Title)
	}
	line(t.Header)
	for _, r := range t.Rows {
		line(r)
	}
}

// Markdown writes the table in markdown, its title above it.
func (t Table) Markdown(w io.Writer) {
	if t.Title != "" {
		fmt.Fprintf(w, "**%s**\n\n", t.Title)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.Header, " | "))
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---:"
	}
	seps[0] = ":---"
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range t.Rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

// Section is one scenario in the markdown report.
type Section struct {
	Name        string   // scenario name, e.g. "rtt"
	Title       string   // heading
	Method      string   // how it was measured
	Distortions string   // known distortions on the machine
	Tables      []Table  // results
	Notes       []string // further lines (loop gaps, skips, errors)
	Images      []string // plot files, relative to the report's directory
	Error       string   // the scenario failed: why
}

// WriteReport writes the markdown report of sections to path.
func WriteReport(path, title string, meta []string, secs []Section) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	for _, m := range meta {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	if len(meta) > 0 {
		b.WriteString("\n")
	}
	for _, s := range secs {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		s.body(&b)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// body writes the section below its heading.
func (s Section) body(b *strings.Builder) {
	if s.Error != "" {
		fmt.Fprintf(b, "**Failed:** %s\n\n", strings.ReplaceAll(strings.TrimSpace(s.Error), "\n", " "))
	}
	for _, t := range s.Tables {
		t.Markdown(b)
		b.WriteString("\n")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(s.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, img := range s.Images {
		fmt.Fprintf(b, "![%s](%s)\n\n", s.Name, img)
	}
	if s.Method != "" {
		fmt.Fprintf(b, "**Method.** %s\n\n", s.Method)
	}
	if s.Distortions != "" {
		fmt.Fprintf(b, "**Known distortions.** %s\n\n", s.Distortions)
	}
}

// Report is what one run of a scenario reports, filled by the scenario
// and written here alone: as the terminal's text (Text), as its section of
// perf all's report (Section) and as its files (WriteFiles: its JSON, its
// plots, a markdown page of its own). The parts stand in one order in
// all three: the tables, the scenario's notes, what joins Homa's hosts in
// each series (LinkNotes), the series skipped and why, the polling loops'
// longest gaps (LoopNotes) and a smoke run's word on its figures.
type Report struct {
	Name, Title         string // the scenario's name and its section's title
	Heading             string // the terminal's first line ("": Title)
	Method, Distortions string
	Tables              []Table
	// Terse is a table as the terminal shows it (nil: whole), so that it
	// fits in a line; a table without a header is not shown there.
	Terse  func(Table) Table
	Notes  []string
	Series []Series
	Loops  []LoopStats
	Smoke  string // what a smoke run's figures are worth ("": not one)
	JSON   string // the result's file, e.g. "rtt.json" ("": none)
	Result any    // what JSON holds
	Page   string // a markdown page of its own, e.g. "cluster.md" ("": none)
	Plots  []Plot
}

// Series is one series a scenario measured (a transport on a link): its
// name, and why it has no figures when it was skipped.
type Series struct{ Name, Skipped string }

// SeriesOf are the series of xs (runs, points), each named once, in the
// order they first come, skipped where any of its runs was.
func SeriesOf[T any](xs []T, of func(T) (name, skipped string)) []Series {
	var out []Series
	for _, x := range xs {
		name, why := of(x)
		i := slices.IndexFunc(out, func(s Series) bool { return s.Name == name })
		if i < 0 {
			out = append(out, Series{Name: name, Skipped: why})
		} else if why != "" {
			out[i].Skipped = why
		}
	}
	return out
}

// Plot is a chart of a report and its file beside the report.
type Plot struct {
	File  string
	Chart Chart
}

// Chart is what a plot draws (perf/plots has the harness's charts): it
// saves itself into path, or says it had nothing to draw (false, and no
// file).
type Chart interface {
	Save(path string) (bool, error)
}

// linkNotes say what joins the daemon's hosts in each of Homa's series.
var linkNotes = map[string]string{
	"homa-memif": fmt.Sprintf("homa-memif: the daemon's two hosts on net_memif ports, each byte copied into and out of memif's shared rings; MTU %d.",
		HomaLinkMTU["memif"]),
	"homa-ring": fmt.Sprintf("homa-ring: the daemon's two hosts on a net_ring pair in its one process, the mbufs passed from one to the other "+
		"with no copy in the link (the analogue of a NIC's DMA); MTU %d.", HomaLinkMTU["ring"]),
}

// AllNotes are the report's notes, each part in its place.
func (r Report) AllNotes() []string {
	notes := slices.Clone(r.Notes)
	for _, s := range r.Series {
		if n, ok := linkNotes[s.Name]; ok {
			notes = append(notes, n)
		}
	}
	for _, s := range r.Series {
		if s.Skipped != "" {
			notes = append(notes, fmt.Sprintf("%s skipped: %s", s.Name, s.Skipped))
		}
	}
	for _, l := range r.Loops {
		if l.MaxGapFound {
			notes = append(notes, fmt.Sprintf("Polling loop %s: %d passes, longest gap between two passes %.1f µs.", l.Loop, l.Passes, l.MaxGapUs))
		} else {
			notes = append(notes, fmt.Sprintf("Polling loop %s: no longest gap reported.", l.Loop))
		}
	}
	if r.Smoke != "" {
		notes = append(notes, "Smoke run: "+r.Smoke)
	}
	return notes
}

// Section is the report's section of perf all's report, with the plots'
// images (WriteFiles' names).
func (r Report) Section(images []string) Section {
	return Section{Name: r.Name, Title: r.Title, Method: r.Method, Distortions: r.Distortions,
		Tables: r.Tables, Notes: r.AllNotes(), Images: images}
}

// Text writes the report for the terminal: its heading, its tables
// (Terse) and its notes.
func (r Report) Text(w io.Writer) {
	fmt.Fprintln(w, cmp.Or(r.Heading, r.Title))
	for _, t := range r.Tables {
		if r.Terse != nil {
			t = r.Terse(t)
		}
		if len(t.Header) > 0 {
			t.Text(w)
		}
	}
	for _, n := range r.AllNotes() {
		fmt.Fprintln(w, n)
	}
}

// WriteFiles writes the report's files into dir: its JSON, its plots and
// its page; it returns the plots' files it wrote, the report's images.
func (r Report) WriteFiles(dir string) ([]string, error) {
	if r.JSON != "" {
		if err := WriteJSON(filepath.Join(dir, r.JSON), r.Result); err != nil {
			return nil, err
		}
	}
	var images []string
	for _, p := range r.Plots {
		ok, err := p.Chart.Save(filepath.Join(dir, p.File))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", p.File, err)
		}
		if ok {
			images = append(images, p.File)
		}
	}
	if r.Page != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n\n", r.Title)
		r.Section(images).body(&b)
		if err := os.WriteFile(filepath.Join(dir, r.Page), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return images, nil
}

// Write ends a scenario's command: the text on w, the files in dir, and
// a line that says where they are.
func (r Report) Write(w io.Writer, dir string) error {
	r.Text(w)
	images, err := r.WriteFiles(dir)
	if err != nil {
		return err
	}
	files := slices.DeleteFunc([]string{r.JSON, r.Page}, func(f string) bool { return f == "" })
	fmt.Fprintf(w, "results in %s (%s)\n", dir, strings.Join(append(files, images...), ", "))
	return nil
}
