package rate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// Each Homa run gets its ratios over each TCP run of the same scenario,
// in the order the runs came; skipped runs and runs without figures get
// none.
func TestRateRatios_twoHoma(t *testing.T) {
	runs := []Run{
		{Transport: "homa-memif", RPCsPerSec: 200_000, CPUPerM: 10},
		{Transport: "homa-ring", RPCsPerSec: 400_000, CPUPerM: 5},
		{Transport: "tcp-loopback", RPCsPerSec: 100_000, CPUPerM: 20},
		{Transport: "tcp-veth", RPCsPerSec: 50_000, CPUPerM: 40},
	}
	got := rateRatios(runs)
	want := []Ratio{
		{Homa: "homa-memif", TCP: "tcp-loopback", RPCsPerSec: 2, CPUPerM: 0.5},
		{Homa: "homa-memif", TCP: "tcp-veth", RPCsPerSec: 4, CPUPerM: 0.25},
		{Homa: "homa-ring", TCP: "tcp-loopback", RPCsPerSec: 4, CPUPerM: 0.25},
		{Homa: "homa-ring", TCP: "tcp-veth", RPCsPerSec: 8, CPUPerM: 0.125},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.Homa != w.Homa || g.TCP != w.TCP || !perftest.Near(g.RPCsPerSec, w.RPCsPerSec) || !perftest.Near(g.CPUPerM, w.CPUPerM) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}
	r := &Result{Outstanding: 256, Runs: runs, Ratios: got}
	if row := strings.Join(r.RatioTable().Rows[3], ","); row != "homa-ring / tcp-veth,8.00,0.12" {
		t.Errorf("ratio row %s", row)
	}

	runs[1].Skipped = "no ring"
	runs[3] = Run{Transport: "tcp-veth", Skipped: "no netns"}
	runs = append(runs, Run{Transport: "tcp-loopback"}) // no figures
	if got := rateRatios(runs); len(got) != 1 || got[0].Homa != "homa-memif" || got[0].TCP != "tcp-loopback" {
		t.Errorf("with skips: %+v", got)
	}
	r.Runs = runs
	var names []string
	for _, row := range r.Table().Rows {
		names = append(names, row[0])
	}
	if strings.Join(names, ",") != "homa-memif,tcp-loopback,tcp-loopback" {
		t.Errorf("table rows %v: skipped runs have none", names)
	}
}

func TestRateRun_figures(t *testing.T) {
	r := &Result{Outstanding: 256, Runs: []Run{{Transport: "homa-memif", RPCs: 1_500_000, Seconds: 5,
		RPCsPerSec: 300_000, HarnessCPU: 5, DaemonCPU: 5.5, CPUPerM: 7}}}
	if row := strings.Join(r.Table().Rows[0], ","); row != "homa-memif,256,300000,7.00,5.00,5.50,1500000,5.00" {
		t.Errorf("row %s", row)
	}
	if n := r.Runs[0].starvedNote(); n != "" {
		t.Errorf("a daemon with its whole CPU: %q", n)
	}
	starved := Run{Transport: "homa-ring", Seconds: 5, DaemonCPU: 2.5, RPCsPerSec: 1}
	if n := starved.starvedNote(); !strings.Contains(n, "homa-ring: the daemon had 50% of a CPU") {
		t.Errorf("a daemon with half its CPU: %q", n)
	}
	if n := (Run{Transport: "tcp-loopback", Seconds: 5}).starvedNote(); n != "" {
		t.Errorf("TCP has no daemon: %q", n)
	}
	if got := perRPC(100_000, 110_000, 10_000); !perftest.Near(got, 1024) {
		t.Errorf("perRPC %v, want 1024 (10,000 KiB over 10,000 RPCs)", got)
	}
	if perRPC(1, 2, 0) != 0 {
		t.Error("perRPC of no RPCs held")
	}
}

func TestParseProcStatus(t *testing.T) {
	const status = "Name:\thoma-dpdk\nVmPeak:\t 9000000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t  100000 kB\n" +
		"RssAnon:\t   60000 kB\nRssFile:\t   30000 kB\nRssShmem:\t   10000 kB\nHugetlbPages:\t  524288 kB\nThreads:\t12\n"
	m, err := parseProcStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	want := ProcMemory{VmRSSKB: 100000, VmHWMKB: 123456, RssAnonKB: 60000, RssFileKB: 30000, RssShmemKB: 10000, HugetlbKB: 524288}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	if _, err := parseProcStatus("Name:\tx\nVmRSS:\t 1 kB\n"); err == nil {
		t.Error("a status without VmHWM was read")
	}
	if _, err := parseProcStatus("VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n"); err == nil {
		t.Error("a status in MB was read")
	}
	self, err := readProcMemory(os.Getpid())
	if err != nil || self.VmRSSKB <= 0 || self.VmHWMKB < self.VmRSSKB {
		t.Errorf("this process: %+v, %v", self, err)
	}
}

// The daemon's metrics: label values with commas, spaces and escapes (a
// memif port's name is its device arguments); refusals are the growth of
// the counters of a bound, by host.
func TestParseMetrics_refusals(t *testing.T) {
	const port = `net_memif_demo0,role=server,id=0,socket=/tmp/a b/memif.sock,socket-abstract=no`
	line := func(metric, label, name, host string, v string) string {
		return metric + `{` + label + `="` + name + `",host="` + host + `",port="` + port + `"} ` + v + "\n"
	}
	plain := func(metric, host, v string) string {
		return metric + `{host="` + host + `",port="` + port + `"} ` + v + "\n"
	}
	before := "# HELP homa_worker_refusals_total Worker submissions refused.\n# TYPE homa_worker_refusals_total counter\n" +
		line("homa_worker_refusals_total", "cause", "limit", "10.0.0.1", "0") +
		line("homa_drops_total", "reason", "peer_rpc_limit", "10.0.0.2", "5") +
		plain("homa_worker_outstanding_rpcs", "10.0.0.1", "0")
	after := line("homa_worker_refusals_total", "cause", "limit", "10.0.0.1", "4") +
		line("homa_worker_refusals_total", "cause", "limit", "10.0.0.2", "0") +
		line("homa_drops_total", "reason", "peer_rpc_limit", "10.0.0.2", "3077") +
		line("homa_tx_refused_total", "cause", "no_mbuf", "10.0.0.2", "2") +
		plain("homa_worker_outstanding_rpcs", "10.0.0.1", "10000") +
		`homa_port_received_packets_total{host="10.0.0.1",port="a \"quoted\" name"} 1e+06` + "\n"
	b, err := homapeer.ParseMetrics(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	a, err := homapeer.ParseMetrics(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 6 {
		t.Errorf("samples %+v", a)
	}
	var got []string
	for _, r := range refusals(b, a) {
		got = append(got, r.String())
	}
	want := "10.0.0.1 limit_refusals 4 (workers.max_outstanding (Sends refused, requests dropped)); " +
		"10.0.0.2 drops_peer_rpc_limit 3072 (protocol.max_server_rpcs_per_peer); 10.0.0.2 no_mbuf 2 (mempool.mbufs)"
	if strings.Join(got, "; ") != want {
		t.Errorf("refusals:\n%s\nwant\n%s", strings.Join(got, "; "), want)
	}
	if g := gauge(a, "homa_worker_outstanding_rpcs", "10.0.0.1"); g != 10000 {
		t.Errorf("gauge %v", g)
	}
}

// The keys set apart to hold 10,000 RPCs with 4 workers for up to 10 s:
// the least bounds the config takes, each above the demo's value and
// consistent with the rules config/validate.go checks, and timers that
// keep the held RPCs quiet.
func TestHeldKeys(t *testing.T) {
	keys := heldKeys(10_000, 4, 256, 10*time.Second)
	by := map[string]ConfigKey{}
	for _, k := range keys {
		by[k.Key] = k
		if k.Run < k.Demo || k.Why == "" {
			t.Errorf("%+v", k)
		}
	}
	out, backlog := by["workers.max_outstanding"].Run, by["workers.max_backlog"].Run
	perPeer, server := by["protocol.max_server_rpcs_per_peer"].Run, by["protocol.max_server_rpcs"].Run
	if out != 2500 || backlog != 2*2500+1024 || perPeer != 10256 || server != 10256 {
		t.Errorf("bounds %+v", keys)
	}
	if backlog < 2*out || perPeer > server || perPeer < 10_000 {
		t.Errorf("bounds the config would refuse, or too small: %+v", keys)
	}
	resend, interval, timeout := by["protocol.resend_ticks"].Run, by["protocol.resend_interval"].Run, by["protocol.timeout_ticks"].Run
	if resend != 1000 || interval != 1000 || timeout != 30_000 || timeout <= resend || timeout > 100_000 {
		t.Errorf("timers %d, %d, %d: want 1000, 1000 (the most the config takes) and 30000", resend, interval, timeout)
	}
	if e := by["protocol.max_server_rpcs_per_peer"].Env(); e != "HOMA_PROTOCOL_MAX_SERVER_RPCS_PER_PEER=10256" {
		t.Errorf("env %s", e)
	}
	if got := keysText(keys[:1]); got != "workers.max_outstanding 1024 -> 2500" {
		t.Errorf("keysText %q", got)
	}
	// Few RPCs: the bounds stay at the demo's values.
	for _, k := range heldKeys(100, 4, 256, 10*time.Millisecond)[:4] {
		if k.Run != k.Demo {
			t.Errorf("100 held: %+v", k)
		}
	}
	sum := 0
	for i := range 3 {
		sum += heldShare(10_000, 3, i)
	}
	if sum != 10_000 || heldShare(10_000, 3, 0) != 3334 || heldShare(10_000, 3, 2) != 3333 {
		t.Errorf("shares of 10,000 among 3: sum %d", sum)
	}
}

func TestRateSteps(t *testing.T) {
	c := ConfigFor(true)
	if n := Steps(c); n != 2*5+1+2 {
		t.Errorf("Steps %d", n)
	}
	c.Veth, c.Links = false, []string{"ring"}
	if n := Steps(c); n != 5+1 {
		t.Errorf("Steps on ring without veth %d", n)
	}
	d := ConfigFor(false)
	if d.Outstanding() != 256 || d.Held != 10_000 || c.Held != d.Held || d.Size != 100 {
		t.Errorf("default config %+v", d)
	}
	m := rateMethod(d)
	for _, want := range []string{"256 outstanding at once (4 workers x 64)", "one RPC outstanding on each (not pipelined)", "epoll", "hold 10000 RPCs"} {
		if !strings.Contains(m, want) {
			t.Errorf("method lacks %q: %s", want, m)
		}
	}
}

// The report's rate section: its tables, the memory runs in words, the
// plots and rate.json.
func TestRateReport(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Method: "m", Distortions: "d", Size: 100, Workers: 4, PerWorker: 64, Outstanding: 256, HeldAsked: 10_000,
		Runs: []Run{
			{Transport: "homa-memif", RPCs: 1000, Seconds: 1, RPCsPerSec: 1000, CPUPerM: 2000},
			{Transport: "tcp-loopback", RPCs: 500, Seconds: 1, RPCsPerSec: 500, CPUPerM: 4000},
			{Transport: "tcp-veth", Skipped: "no netns"}},
		Memory: []Memory{{Transport: "homa-memif",
			DemoConfig: HoldResult{Asked: 10_000, Accepted: 4096, RefusedSends: 4, RefusalError: "client: send to 10.0.0.2:100: homa: per-worker limit reached",
				Held: 1024, Refusals: []Refusal{{Host: "10.0.0.2", Counter: "drops_peer_rpc_limit", Key: "protocol.max_server_rpcs_per_peer", Count: 3072}}},
			Raised:      heldKeys(10_000, 4, 256, 10*time.Second),
			Held:        HoldResult{Asked: 10_000, Accepted: 10_000, Held: 10_000, Reached: true, Completed: 10_000},
			Outstanding: map[string]float64{"10.0.0.2": 10_000, "10.0.0.1": 10_000},
			Before:      ProcMemory{VmRSSKB: 102400, RssAnonKB: 51200}, AtHeld: ProcMemory{VmRSSKB: 112400, VmHWMKB: 113000, RssAnonKB: 56200},
			VmRSSPerRPC: 1024, RssAnonPerRPC: 512}}}
	r.Ratios = rateRatios(r.Runs)
	imgs, err := r.Report().WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.md")
	if err := perf.WriteReport(path, "report", nil, []perf.Section{r.Report().Section(imgs)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{
		"## " + Title,
		"| homa-memif | 256 | 1000 | 2000.00 |",
		"| homa-memif / tcp-loopback | 2.00 | 0.50 |",
		"| homa-memif | 10000 | 100.0 | 109.8 | 110.4 |",
		"| 1024 | 512 |",
		"homa-memif with the demo's config: 1024 of 10000 held (4096 Sends accepted; 4 workers' Sends refused, the first: client: send to 10.0.0.2:100: homa: per-worker limit reached",
		"10.0.0.2 drops_peer_rpc_limit 3072 (protocol.max_server_rpcs_per_peer)",
		"homa-memif memory run, with workers.max_outstanding 1024 -> 2500, workers.max_backlog 4096 -> 6024",
		"outstanding_rpcs gauge while held: 10.0.0.1 10000, 10.0.0.2 10000.",
		"tcp-veth skipped: no netns", "![rate](rate-rpcs.png)", "**Method.** m",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range append(imgs, "rate.json") {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TCP's side runs on its own (no daemon): connections, an RPC on each,
// counted in a window; nothing is timed but that it did some.
func TestRateTCP_loopback(t *testing.T) {
	cfg := Config{Size: 100, Workers: 2, PerWorker: 4, Warmup: 20 * time.Millisecond, Duration: 50 * time.Millisecond}
	run, err := tcpRate(cfg, tcppeer.Path{Name: "tcp-loopback", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if run.Transport != "tcp-loopback" || run.RPCs < 1 || run.RPCsPerSec <= 0 || run.CPUPerM <= 0 || run.DaemonCPU != 0 {
		t.Errorf("run %+v", run)
	}
}

// TestRate_smoke runs rate --smoke end to end: the daemons as child
// processes, workers over shared memory on both links, the 10,000 held
// (refused with the demo's config, held with the bounds raised), kernel
// TCP on loopback and across a veth pair. It measures nothing.
func TestRate_smoke(t *testing.T) {
	bin := perftest.SmokeProgram(t)
	dir := t.TempDir()
	var out strings.Builder
	cfg := ConfigFor(true)
	cfg.Self, cfg.OutDir = bin, dir
	cfg.Progress = perf.NewProgress(&out, "rate", Steps(cfg))
	r, err := Measure(cfg)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range r.Runs {
		names = append(names, x.Transport)
		if x.Skipped != "" {
			t.Errorf("%s skipped: %s", x.Transport, x.Skipped)
			continue
		}
		if x.RPCs < 1 || x.RPCsPerSec <= 0 || x.CPUPerM <= 0 || perf.IsHoma(x.Transport) != (x.DaemonCPU > 0) {
			t.Errorf("%s: %+v", x.Transport, x)
		}
		if len(x.Refusals) > 0 {
			t.Errorf("%s: the daemon refused work in the rate run: %v", x.Transport, x.Refusals)
		}
	}
	if want := "homa-memif homa-ring tcp-loopback tcp-veth"; strings.Join(names, " ") != want {
		t.Errorf("runs %v, want %s", names, want)
	}
	if len(r.Ratios) != 4 {
		t.Errorf("ratios %+v: want each Homa run over each TCP run", r.Ratios)
	}
	if len(r.Memory) != len(perf.HomaLinks) {
		t.Fatalf("memory %+v: want one per link", r.Memory)
	}
	for _, m := range r.Memory {
		// The demo's config cannot hold 10,000 and says why.
		if d := m.DemoConfig; d.Reached || d.Held >= cfg.Held || d.RefusedSends == 0 || len(d.Refusals) == 0 {
			t.Errorf("%s with the demo's config: %+v", m.Transport, d)
		}
		if h := m.Held; !h.Reached || h.Held != cfg.Held || h.Accepted != cfg.Held || h.Completed != int64(cfg.Held) || h.Failed != 0 || h.RepliesRefused != 0 || len(h.Refusals) > 0 {
			t.Errorf("%s memory run: %+v (%s)", m.Transport, h, m.Error)
		}
		if m.Before.VmRSSKB <= 0 || m.AtHeld.VmRSSKB <= 0 || m.AtHeld.VmHWMKB < m.AtHeld.VmRSSKB || m.After.VmRSSKB <= 0 {
			t.Errorf("%s memory: %+v", m.Transport, m)
		}
		if m.Outstanding["10.0.0.1"] < float64(cfg.Held) || m.Outstanding["10.0.0.2"] < float64(cfg.Held) {
			t.Errorf("%s: the daemon's outstanding gauges %v", m.Transport, m.Outstanding)
		}
	}
	if n := cfg.Progress.Steps(); n != Steps(cfg) {
		t.Errorf("rate took %d progress steps, Steps says %d", n, Steps(cfg))
	}
	if len(r.Loops) != 2*len(perf.HomaLinks) {
		t.Errorf("loop stats %+v: want two daemons per link", r.Loops)
	}
	if _, err := r.Report().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
}
