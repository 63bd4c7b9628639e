package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// Table is a results table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Without is the table without the columns whose header ends with
// suffix.
func (t Table) Without(suffix string) Table {
	var keep []int
	out := Table{}
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
	line(t.Header)
	for _, r := range t.Rows {
		line(r)
	}
}

// Markdown writes the table in markdown.
func (t Table) Markdown(w io.Writer) {
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
		if s.Error != "" {
			fmt.Fprintf(&b, "**Failed:** %s\n\n", oneLine(s.Error))
		}
		for _, t := range s.Tables {
			t.Markdown(&b)
			b.WriteString("\n")
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if len(s.Notes) > 0 {
			b.WriteString("\n")
		}
		for _, img := range s.Images {
			fmt.Fprintf(&b, "![%s](%s)\n\n", s.Name, img)
		}
		if s.Method != "" {
			fmt.Fprintf(&b, "**Method.** %s\n\n", s.Method)
		}
		if s.Distortions != "" {
			fmt.Fprintf(&b, "**Known distortions.** %s\n\n", s.Distortions)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }

func LoopNotes(loops []LoopStats) []string {
	var out []string
	for _, l := range loops {
		if l.MaxGapFound {
			out = append(out, fmt.Sprintf("Polling loop %s: %d passes, longest gap between two passes %.1f µs.", l.Loop, l.Passes, l.MaxGapUs))
		} else {
			out = append(out, fmt.Sprintf("Polling loop %s: no longest gap reported.", l.Loop))
		}
	}
	return out
}

// LinkNotes say what joins the daemon's hosts in each of Homa's series
// among transports.
func LinkNotes(transports []string) []string {
	what := map[string]string{
		"homa-memif": fmt.Sprintf("homa-memif: the daemon's two hosts on net_memif ports, each byte copied into and out of memif's shared rings; MTU %d.",
			HomaLinkMTU["memif"]),
		"homa-ring": fmt.Sprintf("homa-ring: the daemon's two hosts on a net_ring pair in its one process, the mbufs passed from one to the other "+
			"with no copy in the link (the analogue of a NIC's DMA); MTU %d.", HomaLinkMTU["ring"]),
	}
	var out []string
	for _, t := range transports {
		if n, ok := what[t]; ok {
			out = append(out, n)
		}
	}
	return out
}

// WriteFile writes path with what write puts in it.
func WriteFile(path string, write func(io.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	write(f)
	return f.Close()
}

// SkipNotes are "TRANSPORT skipped: WHY" for each of xs that a scenario
// could not measure (skipped gives its transport and why; "": measured).
func SkipNotes[T any](xs []T, skipped func(T) (transport, why string)) []string {
	var out []string
	for _, x := range xs {
		if t, why := skipped(x); why != "" {
			out = append(out, fmt.Sprintf("%s skipped: %s", t, why))
		}
	}
	return out
}

// PrintNotes prints notes a line each, then the loops (PrintLoops).
func PrintNotes(w io.Writer, notes []string, loops []LoopStats) {
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	PrintLoops(w, loops)
}
