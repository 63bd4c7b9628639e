package perf

import (
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

// Section is the rtt result for the report; images are the plot files
// written by WriteFiles.
func (r *RTTResult) Section(images []string) Section {
	s := Section{Name: "rtt", Title: "rtt: unloaded round trip, Homa workers vs kernel TCP", Method: r.Method,
		Distortions: r.Distortions, Tables: []Table{r.Table()}, Images: images, Notes: LoopNotes(r.Loops)}
	var names []string
	for _, x := range r.Series {
		names = append(names, x.Transport)
	}
	s.Tables = append(s.Tables, r.RatioTable())
	s.Notes = append(append([]string{"Ratios are TCP over each Homa series: above 1, Homa is faster."}, LinkNotes(names)...), s.Notes...)
	for _, x := range r.Series {
		if x.Skipped != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s skipped: %s", x.Transport, x.Skipped))
		}
	}
	if r.Smoke {
		s.Notes = append(s.Notes, "Smoke run: tiny counts, the figures mean nothing.")
	}
	return s
}

// WriteFiles writes rtt.json and the plot rtt.png into dir and returns
// the plots' names.
func (r *RTTResult) WriteFiles(dir string) ([]string, error) {
	if err := WriteJSON(filepath.Join(dir, "rtt.json"), r); err != nil {
		return nil, err
	}
	if err := PlotRTT(r, filepath.Join(dir, "rtt.png")); err != nil {
		return nil, err
	}
	return []string{"rtt.png"}, nil
}

// throughputTitle is the throughput section's title, with the sizes.
func throughputTitle(sizes string) string {
	if sizes != "" {
		sizes = " (" + sizes + ")"
	}
	return "throughput: messages streamed" + sizes + ", Homa workers vs kernel TCP"
}

// ThroughputTitle is the throughput section's title without its sizes
// (a failed run's).
var ThroughputTitle = throughputTitle("")

// Section is the throughput result for the report.
func (r *ThroughputResult) Section(images []string) Section {
	var sizes []int
	for _, z := range r.Sizes {
		sizes = append(sizes, z.Size)
	}
	s := Section{Name: "throughput", Title: throughputTitle(SizeList(sizes)), Method: r.Method,
		Distortions: r.Distortions, Tables: []Table{r.Table(), r.RatioTable()}, Images: images}
	s.Notes = append(s.Notes, "Messages and windows: "+r.sizesText()+".", throughputRatiosNote)
	var names []string
	for _, x := range r.Runs {
		if !slices.Contains(names, x.Transport) {
			names = append(names, x.Transport)
		}
	}
	s.Notes = append(s.Notes, LinkNotes(names)...)
	for _, x := range r.Runs {
		if x.Skipped != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s skipped: %s", x.Transport, x.Skipped))
		}
	}
	s.Notes = append(s.Notes, LoopNotes(r.Loops)...)
	if r.Smoke {
		s.Notes = append(s.Notes, "Smoke run: 1 MB alone, one second per transport, the figures mean little.")
	}
	return s
}

// WriteFiles writes throughput.json and the plots into dir and returns
// the plots' names: Gbps and CPU seconds per GB, a group of bars per
// size, a bar per transport.
func (r *ThroughputResult) WriteFiles(dir string) ([]string, error) {
	if err := WriteJSON(filepath.Join(dir, "throughput.json"), r); err != nil {
		return nil, err
	}
	sizes := runSizes(r.Runs)
	var groups, series []string
	for _, size := range sizes {
		groups = append(groups, SizeName(size))
	}
	for _, x := range r.Runs {
		if x.Skipped == "" && !slices.Contains(series, x.Transport) {
			series = append(series, x.Transport)
		}
	}
	gbps, cpu := make([][]float64, len(series)), make([][]float64, len(series))
	for i, name := range series {
		gbps[i], cpu[i] = make([]float64, len(sizes)), make([]float64, len(sizes))
		for _, x := range r.Runs {
			if j := slices.Index(sizes, x.Size); x.Skipped == "" && x.Transport == name && j >= 0 {
				gbps[i][j], cpu[i][j] = x.Gbps, x.CPUPerGB
			}
		}
	}
	title := "Throughput: " + r.sizesText()
	if err := PlotGroupedBars(title, "Gbps (payload)", groups, series, gbps, filepath.Join(dir, "throughput-gbps.png")); err != nil {
		return nil, err
	}
	if err := PlotGroupedBars("CPU per GB of payload", "CPU seconds per GB", groups, series, cpu, filepath.Join(dir, "throughput-cpu.png")); err != nil {
		return nil, err
	}
	return []string{"throughput-gbps.png", "throughput-cpu.png"}, nil
}

// RateTitle is the rate section's title.
const RateTitle = "rate: small RPCs per second and the daemon's memory with 10,000 outstanding, Homa workers vs kernel TCP"

// Section is the rate result for the report.
func (r *RateResult) Section(images []string) Section {
	s := Section{Name: "rate", Title: RateTitle, Method: r.Method, Distortions: r.Distortions,
		Tables: []Table{r.Table(), r.RatioTable(), r.MemoryTable()}, Images: images}
	s.Notes = append(s.Notes, fmt.Sprintf("%d-byte requests and responses, %d outstanding (%d workers x %d; TCP: as many connections, an RPC on each).",
		r.Size, r.Outstanding, r.Workers, r.PerWorker), rateRatiosNote,
		fmt.Sprintf("Memory: the daemon's, with %d RPCs held outstanding at once (B/RPC: the growth from before to held, per RPC held).", r.HeldAsked))
	s.Notes = append(s.Notes, r.MemoryNotes()...)
	var names []string
	for _, x := range r.Runs {
		names = append(names, x.Transport)
		if x.Skipped != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s skipped: %s", x.Transport, x.Skipped))
		}
		for _, f := range x.Refusals {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: the daemon refused work during the run: %s", x.Transport, f))
		}
		if n := x.starvedNote(); n != "" {
			s.Notes = append(s.Notes, n)
		}
	}
	s.Notes = append(s.Notes, LinkNotes(names)...)
	s.Notes = append(s.Notes, LoopNotes(r.Loops)...)
	if r.Smoke {
		s.Notes = append(s.Notes, "Smoke run: half a second per transport, the figures mean little.")
	}
	return s
}

// WriteFiles writes rate.json and the plots (RPCs per second, CPU seconds
// per million RPCs: a bar per transport) into dir and returns the plots'
// names.
func (r *RateResult) WriteFiles(dir string) ([]string, error) {
	if err := WriteJSON(filepath.Join(dir, "rate.json"), r); err != nil {
		return nil, err
	}
	var series []string
	var rate, cpu [][]float64
	for _, x := range r.Runs {
		if x.Skipped == "" {
			series = append(series, x.Transport)
			rate, cpu = append(rate, []float64{x.RPCsPerSec / 1e3}), append(cpu, []float64{x.CPUPerM})
		}
	}
	group := []string{fmt.Sprintf("%s, %d outstanding", SizeName(r.Size), r.Outstanding)}
	if err := PlotGroupedBars("Small RPCs per second", "thousand RPCs per second", group, series, rate, filepath.Join(dir, "rate-rpcs.png")); err != nil {
		return nil, err
	}
	if err := PlotGroupedBars("CPU per million RPCs", "CPU seconds per million RPCs", group, series, cpu, filepath.Join(dir, "rate-cpu.png")); err != nil {
		return nil, err
	}
	return []string{"rate-rpcs.png", "rate-cpu.png"}, nil
}
