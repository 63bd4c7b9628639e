package perf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestParseLoopLine(t *testing.T) {
	p, gap, ok := parseLoopLine("loop: 264886 passes, longest gap between passes 5.787223ms")
	if !ok || p != 264886 || gap < 5787.2 || gap > 5787.3 {
		t.Errorf("got %d passes, %v µs, %v", p, gap, ok)
	}
	if _, _, ok := parseLoopLine("loop: stopped"); ok {
		t.Error("parsed a line without figures")
	}
}

func TestProgress_plain(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, "rtt", 2)
	p.Step("homa-memif 100 B")
	p.Set(0.5) // not a terminal: nothing
	p.Step("homa-memif 1 KB")
	p.Done()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "rtt: [1/2] homa-memif 100 B" || !strings.HasPrefix(lines[2], "rtt: done in") {
		t.Errorf("progress wrote %q", b.String())
	}
	var nilP *Progress
	nilP.Step("x")
	nilP.Set(1)
	nilP.Done()
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	r := &RTTResult{Method: "m", Distortions: "d", Series: []RTTSeries{
		{Transport: "homa-memif", Points: []RTTPoint{{Size: 100, P50Us: 10, P99Us: 20}, {Size: 1000, P50Us: 12, P99Us: 30}}},
		{Transport: "homa-ring", Points: []RTTPoint{{Size: 100, P50Us: 5, P99Us: 8}, {Size: 1000, P50Us: 6, P99Us: 10}}},
		{Transport: "tcp-loopback", Points: []RTTPoint{{Size: 100, P50Us: 20, P99Us: 40}, {Size: 1000, P50Us: 24, P99Us: 60}}},
		{Transport: "tcp-veth", Skipped: "no netns"},
	}, Loops: []LoopStats{{Loop: "x", Passes: 5, MaxGapUs: 3, MaxGapFound: true}}}
	r.Ratios = rttRatios(r.Series)
	if len(r.Ratios) != 4 || r.Ratios[0].LoopbackP50 != 2 || r.Ratios[1].LoopbackP99 != 2 || r.Ratios[2].LoopbackP50 != 4 {
		t.Errorf("ratios %+v", r.Ratios)
	}
	imgs, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := &ThroughputResult{Sizes: []ThroughputSize{{Size: 1_000_000, Window: 4}, {Size: 64_000_000, Window: 2}}, Runs: []ThroughputRun{
		{Transport: "homa-memif", Size: 1_000_000, Window: 4, Gbps: 2, CPUPerGB: 4},
		{Transport: "homa-memif", Size: 64_000_000, Window: 2, Gbps: 3, CPUPerGB: 3},
		{Transport: "homa-ring", Size: 1_000_000, Window: 4, Gbps: 4, CPUPerGB: 2},
		{Transport: "homa-ring", Size: 64_000_000, Window: 2, Gbps: 6, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: 1_000_000, Window: 4, Gbps: 8, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: 64_000_000, Window: 2, Gbps: 12, CPUPerGB: 0.5},
		{Transport: "tcp-veth", Skipped: "no netns"}}}
	tp.Ratios = throughputRatios(tp.Runs)
	timgs, err := tp.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.md")
	if err := WriteReport(path, "report", []string{"meta"}, []Section{r.Section(imgs), tp.Section(timgs)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{
		"| size | homa-memif P50 µs | homa-memif P99 µs | homa-ring P50 µs | homa-ring P99 µs | tcp-loopback P50 µs | tcp-loopback P99 µs |",
		"| 100 B | 10.0 | 20.0 | 5.0 | 8.0 | 20.0 | 40.0 |",
		"| size | lo/homa-memif P50 | lo/homa-memif P99 | lo/homa-ring P50 | lo/homa-ring P99 |",
		"| 100 B | 2.00 | 2.00 | 4.00 | 5.00 |", "![rtt](rtt.png)",
		"homa-ring: the daemon's two hosts on a net_ring pair",
		"![throughput](throughput-gbps.png)", "tcp-veth skipped: no netns", "longest gap between two passes 3.0 µs",
		"| 1 MB | homa-memif / tcp-loopback | 0.25 | 4.00 |", "| 1 MB | homa-ring / tcp-loopback | 0.50 | 2.00 |",
		"| 64 MB | homa-memif / tcp-loopback | 0.25 | 6.00 |", "| 64 MB | homa-ring / tcp-loopback | 0.50 | 2.00 |",
		"| size | transport | window | Gbps |", "| 64 MB | homa-ring | 2 | 6.00 | 1.00 |",
		"## throughput: messages streamed (1 MB and 64 MB), Homa workers vs kernel TCP",
		"Messages and windows: 1 MB (4 outstanding), 64 MB (2 outstanding).", "**Method.** m"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range append(imgs, timgs...) {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
}

// smokeProgram skips a smoke test that cannot run here (no DPDK, one
// CPU, -short) and otherwise builds the program it runs (buildHomaDPDK).
func smokeProgram(t *testing.T) string {
	t.Helper()
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("the scenario needs two CPUs")
	}
	if testing.Short() {
		t.Skip("builds the program and runs the daemon: not in -short")
	}
	return buildHomaDPDK(t)
}

// buildHomaDPDK builds the homa-dpdk program, which the scenarios run as
// the daemon (demo --workers), into a temporary directory.
func buildHomaDPDK(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "homa-dpdk")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/homa-dpdk/homa-dpdk/cmd/homa-dpdk")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the daemon: %v\n%s", err, out)
	}
	return bin
}

// TestRTTAndThroughput_smoke runs rtt --smoke and throughput --smoke end
// to end: the daemon as a child process, workers over shared memory,
// kernel TCP on loopback and across a veth pair, Homa on both links. It
// measures nothing.
func TestRTTAndThroughput_smoke(t *testing.T) {
	bin := smokeProgram(t)
	dir := t.TempDir()
	var out strings.Builder

	rc := RTTConfigFor(true)
	rc.Self, rc.OutDir, rc.Out = bin, dir, &out
	rc.Progress = NewProgress(&out, "rtt", RTTSteps(rc))
	rr, err := RunRTT(rc)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rr.Series {
		if s.Skipped != "" {
			t.Errorf("%s skipped: %s", s.Transport, s.Skipped)
			continue
		}
		if len(s.Points) != len(SmokeSizes) {
			t.Errorf("%s: %d sizes, want %d", s.Transport, len(s.Points), len(SmokeSizes))
		}
		for _, p := range s.Points {
			if p.Count < 10 || p.P50Us <= 0 || p.P99Us < p.P50Us {
				t.Errorf("%s %d B: %+v", s.Transport, p.Size, p)
			}
		}
	}
	if n := rc.Progress.step; n != RTTSteps(rc) {
		t.Errorf("rtt took %d progress steps, RTTSteps says %d", n, RTTSteps(rc))
	}
	var names []string
	for _, s := range rr.Series {
		names = append(names, s.Transport)
	}
	if want := "homa-memif homa-ring tcp-loopback tcp-veth"; strings.Join(names, " ") != want {
		t.Errorf("series %v, want %s", names, want)
	}
	if len(rr.Ratios) != 2*len(SmokeSizes) {
		t.Errorf("%d ratios, want %d (both Homa series)", len(rr.Ratios), 2*len(SmokeSizes))
	}
	if len(rr.Loops) != len(HomaLinks) {
		t.Errorf("loop stats %+v: want one per link", rr.Loops)
	}
	for _, l := range rr.Loops {
		if !l.MaxGapFound || l.Passes == 0 {
			t.Errorf("loop stats %+v: the daemon's loop line was not read", l)
		}
	}
	if _, err := rr.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	tc := ThroughputConfigFor(true)
	tc.Self, tc.OutDir, tc.Out = bin, dir, &out
	tc.Progress = NewProgress(&out, "throughput", ThroughputSteps(tc))
	tr, err := RunThroughput(tc)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Runs {
		if r.Skipped != "" {
			t.Errorf("%s skipped: %s", r.Transport, r.Skipped)
			continue
		}
		if r.Messages < 1 || r.Gbps <= 0 || r.CPUPerGB <= 0 {
			t.Errorf("%s: %+v", r.Transport, r)
		}
		if IsHoma(r.Transport) && r.DaemonCPU <= 0 {
			t.Errorf("%s: the daemon's CPU time was not read: %+v", r.Transport, r)
		}
	}
	if n := tc.Progress.step; n != ThroughputSteps(tc) {
		t.Errorf("throughput took %d progress steps, ThroughputSteps says %d", n, ThroughputSteps(tc))
	}
	if n := len(tc.Sizes); len(tr.Runs) != 4*n || tr.Runs[0].Transport != "homa-memif" || tr.Runs[n].Transport != "homa-ring" || len(tr.Ratios) != 4*n {
		t.Errorf("runs %+v, ratios %+v: want homa-memif, homa-ring, then TCP, each at %d sizes, and %d ratios", tr.Runs, tr.Ratios, n, 4*n)
	}
	for i, r := range tr.Runs {
		if z := tc.Sizes[i%len(tc.Sizes)]; r.Size != z.Size || r.Window != z.Window {
			t.Errorf("run %d %s: %d bytes, window %d; want %+v", i, r.Transport, r.Size, r.Window, z)
		}
	}
	if _, err := tr.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rtt.json", "rtt.png", "throughput.json", "throughput-gbps.png", "throughput-cpu.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
