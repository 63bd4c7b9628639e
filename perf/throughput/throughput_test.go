package throughput

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

func TestThroughputRatios_twoHoma(t *testing.T) {
	const mb, mb64 = 1_000_000, 64_000_000
	runs := []perf.StreamRun{
		{Transport: "homa-memif", Size: mb, Gbps: 2, CPUPerGB: 3},
		{Transport: "homa-memif", Size: mb64, Gbps: 4, CPUPerGB: 2},
		{Transport: "homa-ring", Size: mb, Gbps: 5, CPUPerGB: 1.5},
		{Transport: "homa-ring", Size: mb64, Gbps: 8, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: mb, Gbps: 20, CPUPerGB: 0.5},
		{Transport: "tcp-loopback", Size: mb64, Gbps: 16, CPUPerGB: 0.5},
		{Transport: "tcp-veth", Size: mb, Gbps: 10, CPUPerGB: 0.75}, // no 64 MB run
	}
	got := throughputRatios(runs)
	want := []Ratio{
		{Homa: "homa-memif", TCP: "tcp-loopback", Size: mb, Gbps: 0.1, CPUPerGB: 6},
		{Homa: "homa-memif", TCP: "tcp-veth", Size: mb, Gbps: 0.2, CPUPerGB: 4},
		{Homa: "homa-ring", TCP: "tcp-loopback", Size: mb, Gbps: 0.25, CPUPerGB: 3},
		{Homa: "homa-ring", TCP: "tcp-veth", Size: mb, Gbps: 0.5, CPUPerGB: 2},
		{Homa: "homa-memif", TCP: "tcp-loopback", Size: mb64, Gbps: 0.25, CPUPerGB: 4},
		{Homa: "homa-ring", TCP: "tcp-loopback", Size: mb64, Gbps: 0.5, CPUPerGB: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.Homa != w.Homa || g.TCP != w.TCP || g.Size != w.Size || !perftest.Near(g.Gbps, w.Gbps) || !perftest.Near(g.CPUPerGB, w.CPUPerGB) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}
	r := &Result{Runs: runs, Ratios: got}
	if row := strings.Join(r.RatioTable().Rows[3], ","); row != "1 MB,homa-ring / tcp-veth,0.50,2.00" {
		t.Errorf("ratio row %s", row)
	}
	if row := strings.Join(r.RatioTable().Rows[5], ","); row != "64 MB,homa-ring / tcp-loopback,0.50,2.00" {
		t.Errorf("ratio row %s", row)
	}
	// The table: by size, then by transport.
	var order []string
	for _, row := range r.Table().Rows {
		order = append(order, row[0]+" "+row[1])
	}
	if got := strings.Join(order, ","); got != "1 MB homa-memif,1 MB homa-ring,1 MB tcp-loopback,1 MB tcp-veth,"+
		"64 MB homa-memif,64 MB homa-ring,64 MB tcp-loopback" {
		t.Errorf("table rows %s", got)
	}

	// A skipped run, or one without figures, has no ratios.
	runs[2].Skipped = "no ring"
	runs[3].Skipped = "no ring"
	runs[5] = perf.StreamRun{Transport: "tcp-loopback", Size: mb64}
	runs[6] = perf.StreamRun{Transport: "tcp-veth", Skipped: "no netns"}
	if got := throughputRatios(runs); len(got) != 1 || got[0].Homa != "homa-memif" || got[0].TCP != "tcp-loopback" || got[0].Size != mb {
		t.Errorf("with skips: %+v", got)
	}
}

// The default throughput sizes and windows fit the demo's worker regions;
// --smoke streams 1 MB alone.
func TestSizes_defaultAndSmoke(t *testing.T) {
	tc := ConfigFor(false)
	var sizes []int
	for _, z := range tc.Sizes {
		sizes = append(sizes, z.Size)
		if z.Window < 1 || z.Warmup < z.Window {
			t.Errorf("throughput size %+v: want a window and at least a window of warm-up", z)
		}
		// The demo's regions: 128 MiB of arena, 2048 pool pages of 64 KiB.
		if z.Size*z.Window > 128<<20 || z.Window*((z.Size+1<<16-1)>>16) > 2048 {
			t.Errorf("throughput size %+v: more in flight than the demo's worker regions hold", z)
		}
	}
	if !slices.Equal(sizes, []int{512 << 10, 1_000_000, 8_000_000, 64_000_000}) {
		t.Errorf("default throughput sizes %v", sizes)
	}
	if s := ConfigFor(true).Sizes; len(s) != 1 || s[0].Size != 1_000_000 {
		t.Errorf("smoke throughput sizes %+v: want 1 MB alone", s)
	}
	m := throughputMethod(tc)
	if !strings.Contains(m, "64 MB with a window of 2") || !strings.Contains(m, "1 MB with a window of 4") ||
		!strings.Contains(m, "512 KiB with a window of 8") {
		t.Errorf("throughput method %q", m)
	}
}

// TCP streams 8 MB messages on loopback, the peer's 4-byte length prefix
// carrying them.
func TestTCPStream_largeMessages(t *testing.T) {
	srv, err := tcppeer.StartServer("", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := tcppeer.Dial("", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := Config{}
	cfg.Duration = 50 * time.Millisecond
	r, err := tcpStreamSize(cfg, perf.StreamSize{Size: 8_000_000, Window: 2, Warmup: 2}, "tcp-loopback", c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Size != 8_000_000 || r.Window != 2 || r.Messages < 1 || r.Gbps <= 0 {
		t.Errorf("stream: %+v", r)
	}
}

func TestSteps(t *testing.T) {
	tc := ConfigFor(true)
	if n := Steps(tc); n != 2*2+1+2 {
		t.Errorf("Steps %d", n)
	}
	if n := Steps(ConfigFor(false)); n != 2*(1+4)+4+(1+4) {
		t.Errorf("Steps of the default run %d", n)
	}
	tc.Testpmd = "dpdk-testpmd"
	if n := Steps(tc); n != 2+1+2+1 {
		t.Errorf("Steps through testpmd: %d", n)
	}
	tc.Testpmd, tc.Links = "", []string{"ring"}
	if n := Steps(tc); n != 2+1+2 {
		t.Errorf("Steps on ring alone: %d", n)
	}
	if l := perf.LinksFor(nil, "dpdk-testpmd"); len(l) != 1 || l[0] != "memif" || perf.HomaSeries(l[0]) != "homa-memif" {
		t.Errorf("links through testpmd %v", l)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	tp := &Result{Sizes: []perf.StreamSize{{Size: 1_000_000, Window: 4}, {Size: 64_000_000, Window: 2}}, Runs: []perf.StreamRun{
		{Transport: "homa-memif", Size: 1_000_000, Window: 4, Gbps: 2, CPUPerGB: 4},
		{Transport: "homa-memif", Size: 64_000_000, Window: 2, Gbps: 3, CPUPerGB: 3},
		{Transport: "homa-ring", Size: 1_000_000, Window: 4, Gbps: 4, CPUPerGB: 2, Send: &perf.SendBytes{Copied: 1, ZeroCopy: 3}},
		{Transport: "homa-ring", Size: 64_000_000, Window: 2, Gbps: 6, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: 1_000_000, Window: 4, Gbps: 8, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: 64_000_000, Window: 2, Gbps: 12, CPUPerGB: 0.5},
		{Transport: "tcp-veth", Skipped: "no netns"}}}
	tp.Ratios = throughputRatios(tp.Runs)
	timgs, err := tp.Report().WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.md")
	if err := perf.WriteReport(path, "report", []string{"meta"}, []perf.Section{tp.Report().Section(timgs)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{
		"homa-ring: the daemon's two hosts on a net_ring pair",
		"![throughput](throughput-gbps.png)",
		"tcp-veth skipped: no netns",
		"| 1 MB | homa-memif / tcp-loopback | 0.25 | 4.00 |",
		"| 1 MB | homa-ring / tcp-loopback | 0.50 | 2.00 |",
		"| 64 MB | homa-memif / tcp-loopback | 0.25 | 6.00 |",
		"| 64 MB | homa-ring / tcp-loopback | 0.50 | 2.00 |",
		"| size | transport | window | Gbps |",
		"| 64 MB | homa-ring | 2 | 6.00 | 1.00 |",
		"| 0 | 0.00 | 0.25 |", // homa-ring's send copies/B at 1 MB
		"| 0 | 0.00 | — |",    // none read: homa-memif's and TCP's
		"## throughput: messages streamed (1 MB and 64 MB), Homa workers vs kernel TCP",
		"Messages and windows: 1 MB (4 outstanding), 64 MB (2 outstanding)."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range timgs {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
}

// TestThroughput_smoke runs throughput --smoke end to end: the daemon as a
// child process, workers over shared memory, kernel TCP on loopback and
// across a veth pair, Homa on both links. It measures nothing.
func TestThroughput_smoke(t *testing.T) {
	bin := perftest.SmokeProgram(t)
	dir := t.TempDir()
	var out strings.Builder

	tc := ConfigFor(true)
	tc.Self, tc.OutDir = bin, dir
	tc.Progress = perf.NewProgress(&out, "throughput", Steps(tc))
	tr, err := Measure(tc)
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
		if perf.IsHoma(r.Transport) && r.DaemonCPU <= 0 {
			t.Errorf("%s: the daemon's CPU time was not read: %+v", r.Transport, r)
		}
		// The send counters span warm-up and drain too: at least the window's bytes.
		if perf.IsHoma(r.Transport) && (r.Send == nil || r.Send.Total() < uint64(r.Messages)*uint64(r.Size)) {
			t.Errorf("%s: the sender's counters %+v (%s) for %d messages of %d bytes", r.Transport, r.Send, r.SendUnread, r.Messages, r.Size)
		}
	}
	if n := tc.Progress.Steps(); n != Steps(tc) {
		t.Errorf("throughput took %d progress steps, Steps says %d", n, Steps(tc))
	}
	if n := len(tc.Sizes); len(tr.Runs) != 4*n || tr.Runs[0].Transport != "homa-memif" || tr.Runs[n].Transport != "homa-ring" || len(tr.Ratios) != 4*n {
		t.Errorf("runs %+v, ratios %+v: want homa-memif, homa-ring, then TCP, each at %d sizes, and %d ratios", tr.Runs, tr.Ratios, n, 4*n)
	}
	for i, r := range tr.Runs {
		if z := tc.Sizes[i%len(tc.Sizes)]; r.Size != z.Size || r.Window != z.Window {
			t.Errorf("run %d %s: %d bytes, window %d; want %+v", i, r.Transport, r.Size, r.Window, z)
		}
	}
	if _, err := tr.Report().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"throughput.json", "throughput-gbps.png", "throughput-cpu.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// The goal rows read the homa-ring / tcp-veth ratio at 1 MB alone.
func TestGoals_fromThroughput(t *testing.T) {
	r := &Result{Ratios: []Ratio{
		{Homa: "homa-ring", TCP: "tcp-veth", Size: 1_000_000, Gbps: 1.2, CPUPerGB: 1.6},
		{Homa: "homa-memif", TCP: "tcp-veth", Size: 1_000_000, Gbps: 9, CPUPerGB: 0.1}, // not the goal's link
		{Homa: "homa-ring", TCP: "tcp-loopback", Size: 1_000_000, Gbps: 9},             // nor its peer
	}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "1 MB streaming throughput, Homa over TCP", 1.2, true)
	perftest.CheckGoal(t, g, "1 MB streaming CPU per GB, Homa over TCP", 1.6, false)
	perftest.CheckGoal(t, g, "1 MB streaming throughput, Homa over TCP, at the link's speed", 1.2, false)
	perftest.CheckGoal(t, g, "1 MB streaming throughput on memif, Homa over TCP, at the link's speed", 9, true)
}

// The send side's copies per payload byte come from each link's 1 MB
// run's counters; a run without them says why.
func TestGoals_sendCopies(t *testing.T) {
	r := &Result{Runs: []perf.StreamRun{
		{Transport: "homa-ring", Size: 1_000_000, Send: &perf.SendBytes{ZeroCopy: 4_000_000}},
		{Transport: "homa-ring", Size: 8_000_000, Send: &perf.SendBytes{Copied: 8_000_000}}, // not 1 MB
		{Transport: "homa-memif", Size: 1_000_000, Send: &perf.SendBytes{Copied: 1_000_000, ZeroCopy: 3_000_000}},
		{Transport: "tcp-veth", Size: 1_000_000},
	}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "Send-side copies per payload byte, 1 MB on ring", 0, true)
	perftest.CheckGoal(t, g, "Send-side copies per payload byte, 1 MB on memif", 0.25, false)
	if w := g["Send-side copies per payload byte, 1 MB on ring"].Want; w != "<= 0.00" {
		t.Errorf("want %q", w)
	}
	r.Runs[0] = perf.StreamRun{Transport: "homa-ring", Size: 1_000_000, SendUnread: "the daemon's metrics: refused"}
	r.Runs[2].Send = &perf.SendBytes{}
	g = perftest.GoalsByName(Goals(r))
	for name, why := range map[string]string{
		"Send-side copies per payload byte, 1 MB on ring":  "not read: the daemon's metrics: refused",
		"Send-side copies per payload byte, 1 MB on memif": "saw no DATA bytes",
	} {
		if x := g[name]; x.Met || !strings.Contains(x.Absent, why) {
			t.Errorf("%s: %+v, want absent for %q", name, x, why)
		}
	}
	if x := perftest.GoalsByName(Goals(nil))["Send-side copies per payload byte, 1 MB on memif"]; x.Absent == "" {
		t.Errorf("no run: %+v", x)
	}
}
