package rtt

import (
	"fmt"
	"net"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// Config configures the rtt scenario.
type Config struct {
	Self      string        // the homa-dpdk executable, run as the daemon
	Sizes     []int         // message sizes (request and response)
	Count     int           // measured round trips per size and transport (at most)
	Warmup    int           // round trips before measuring (for at most MaxTime/4)
	MaxTime   time.Duration // measuring time per size and transport (at most, after 10 round trips)
	WorkerCPU int           // CPU of the Homa workers' thread (the daemon's polling loop is on lcore 1)
	Veth      bool          // also measure TCP across a veth pair between namespaces
	// Links are the links to measure Homa on, a series each (nil:
	// HomaLinks; through Testpmd, memif alone).
	Links    []string
	OutDir   string // the daemons' logs go here
	Progress *perf.Progress
	// Testpmd, when set, is the dpdk-testpmd program: Homa's hosts are then
	// joined through it (the testpmd-path scenario, testpmdpath.go).
	Testpmd string
	Smoke   bool
}

// ConfigFor is the default configuration, or the --smoke one.
func ConfigFor(smoke bool) Config {
	c := Config{Sizes: DefaultSizes, Count: 20000, Warmup: 1000, MaxTime: 5 * time.Second, WorkerCPU: 0, Veth: true}
	if smoke {
		c.Sizes, c.Count, c.Warmup, c.MaxTime, c.Smoke = SmokeSizes, 500, 500, 400*time.Millisecond, true
	}
	return c
}

// Series is one transport's points. Homa's series are named by link
// (homaSeries: homa-memif, homa-ring), kernel TCP's by path
// (tcp-loopback, tcp-veth).
type Series struct {
	Transport string          `json:"transport"`
	Points    []perf.RTTPoint `json:"points,omitempty"`
	Skipped   string          `json:"skipped,omitempty"`
}

// Ratio is, per Homa series and size, TCP's percentile over Homa's
// (above 1: Homa is faster).
type Ratio struct {
	Homa        string  `json:"homa"` // the Homa series: homa-memif, homa-ring
	Size        int     `json:"size_bytes"`
	LoopbackP50 float64 `json:"tcp_loopback_over_homa_p50,omitempty"`
	LoopbackP99 float64 `json:"tcp_loopback_over_homa_p99,omitempty"`
	VethP50     float64 `json:"tcp_veth_over_homa_p50,omitempty"`
	VethP99     float64 `json:"tcp_veth_over_homa_p99,omitempty"`
}

// Result is the rtt scenario's result.
type Result struct {
	Method      string           `json:"method"`
	Distortions string           `json:"distortions"`
	Smoke       bool             `json:"smoke"`
	Series      []Series         `json:"series"`
	Ratios      []Ratio          `json:"ratios"` // per Homa series, per size
	Loops       []perf.LoopStats `json:"loops"`
}

// rttMethod is how cfg measures.
func rttMethod(cfg Config) string {
	return `Unloaded round trip, one RPC at a time, request and response of the same size ` +
		`(` + perf.SizeList(cfg.Sizes) + `; MB is 10^6 bytes; --smoke stops at 1 MB). Messages above kernel Homa's 1,000,000 bytes ` +
		`go between the daemon's two hosts because its config lists both as long-message peers ` +
		`(protocol.max_message 64 MiB, worker regions of 128 MiB arena and 128 MiB pool: demo/workers.go). Homa: the harness starts this program as a child process, ` +
		"`homa-dpdk demo --workers DIR --link LINK`" + `, once per link: two Homa hosts, 10.0.0.1 and 10.0.0.2, ` +
		`run by one busy-polling loop on lcore 1 (CPU 1) and joined by a net_memif pair (series homa-memif: each ` +
		`byte copied into and out of memif's shared rings) or by a net_ring pair (series homa-ring: the mbufs ` +
		`change hands, no copy in the link, the analogue of a NIC's DMA). The harness attaches a client worker to 10.0.0.1 and ` +
		`a server worker to 10.0.0.2 over shared memory (client/, spinning on the completion rings, never sleeping) ` +
		`and drives both from one goroutine locked to a thread pinned to CPU 0: Send, the server's Receive and ` +
		`Reply with the same bytes, the client's Wait; the RTT is from before Send to after Wait. While a daemon runs, the ` +
		`harness's other threads are kept off CPU 1, the daemon's loop CPU (they preempted the loop when they woke there). Kernel TCP: a Go ` +
		`server and client in the harness, TCP_NODELAY, each message a 4-byte length then the bytes, the server ` +
		`echoing the same bytes in one write; client and server are ordinary goroutines (GOMAXPROCS 2), neither ` +
		`locked to a thread nor pinned, blocking in read (see the distortions). Loopback: 127.0.0.1. Veth: two network namespaces made for ` +
		`the run, joined by a veth pair (10.77.0.1/24, 10.77.0.2/24), server in one, client in the other (a ` +
		`thread enters the namespace with setns to make the socket, which keeps it); deleted at the end. Order: all Homa ` +
		`sizes on memif with its daemon running, that daemon stopped, the same on ring, then TCP loopback, then TCP veth. ` +
		fmt.Sprintf(`Per size and transport: a warm-up of up to %d round trips (after the first %d, for at most %v), then up to %d `+
			`round trips or %v, whichever ends first (at least %d: the limits are checked after each round trip), so the points of `+
			`the largest sizes hold few round trips (the count is in rtt.json) and their P99 is close to their maximum; `,
			cfg.Warmup, perf.MinWarmup, cfg.MaxTime/4, cfg.Count, cfg.MaxTime, perf.MinRecorded) +
		`P50 and P99 from an HdrHistogram (3 significant digits). Ratios are TCP over Homa, for each Homa series (above 1: Homa is faster).`
}

// largest is the largest of sizes (0: none).
func largest(sizes []int) int {
	m := 0
	for _, n := range sizes {
		m = max(m, n)
	}
	return m
}

const rttDistortions = `On a 2-vCPU virtual machine: the "two daemons" are two Homa hosts in one daemon ` +
	`process sharing one busy-polling core (two busy daemons plus the workers cannot share 2 CPUs), so each ` +
	`submission waits on average half a pass of a loop that serves both hosts, which a daemon per host would ` +
	`not. The workers' CPU 0 is also the CPU of the daemon's main thread, the Go runtime's threads and ` +
	`everything else on the machine (a container build may be running): P99 is mostly that noise. ` + perf.LinkDistortions +
	` Kernel TCP on loopback or veth has no wire ` +
	`either, runs its protocol work in the sender's and receiver's system calls and softirqs on both CPUs, and ` +
	`uses 64 KB segments with no per-packet MTU (loopback) where Homa sends 1500-byte packets. Absolute ` +
	`figures from different runs do not compare; ratios from one run do. The Homa workers spin on their rings ` +
	`while the TCP ends block in read and are woken by the kernel: that is how each is normally used, but on a ` +
	`VM a wake-up costs an inter-processor interrupt and often a halted vCPU's exit, so small-message TCP ` +
	`RTTs here are mostly wake-up latency and move with the VM's host: tens of µs in this project's first ` +
	`runs, 4 to 5 µs at 100 B in the runs of December 2026, the same program. The TCP goroutines are not locked to pinned threads on ` +
	`purpose: in Go a goroutine locked to its thread that blocks is woken through a hand-off to that very ` +
	`thread, which measured 80 µs P50 for 100 B against 13 µs unlocked on this VM (spinning on a ` +
	`non-blocking socket from a pinned thread measured 10 to 16 µs). A fresh daemon's first thousand or so ` +
	`small RPCs used to be several times slower than the rest (first touches of memif's buffers and of the ` +
	`worker regions' pages, each a page fault on the polling loop); the daemon now makes both resident before ` +
	`they are used (perf starts measures a fresh daemon's first RPCs).`

// Measure runs the rtt scenario.
func Measure(cfg Config) (*Result, error) {
	res := &Result{Method: rttMethod(cfg), Distortions: rttDistortions, Smoke: cfg.Smoke}
	if cfg.Testpmd != "" {
		res.Method += " " + homapeer.TestpmdPathNote
	}
	vethSkip, err := homapeer.Transports(cfg.Links, cfg.Testpmd, cfg.Veth, cfg.Progress, func(link, dir string) error {
		s, loop, err := homaRTT(cfg, link, dir)
		if loop != nil {
			res.Loops = append(res.Loops, *loop)
		}
		res.Series = append(res.Series, s)
		return err
	}, func(p tcppeer.Path) error {
		s, err := tcpRTT(cfg, p)
		res.Series = append(res.Series, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	if vethSkip != "" {
		res.Series = append(res.Series, Series{Transport: "tcp-veth", Skipped: vethSkip})
	}
	res.Ratios = rttRatios(res.Series)
	return res, nil
}

// homaRTT measures Homa's series on link: it starts the daemon with its
// hosts on link, measures every size and stops the daemon, whose loop
// statistics it returns once it was started.
func homaRTT(cfg Config, link, dir string) (Series, *perf.LoopStats, error) {
	series := Series{Transport: perf.HomaSeries(link)}
	d, _, done, err := homapeer.StartHomaDaemon(cfg.Self, cfg.Testpmd, link, dir, cfg.OutDir, "rtt", cfg.Progress, 0)
	if err != nil {
		return series, nil, fmt.Errorf("%s: %w", series.Transport, err)
	}
	defer done() // after the daemon's Stop below
	loop, err := d.Pinned(cfg.WorkerCPU, func() error {
		w, err := homapeer.DialPair(d.Dir, largest(cfg.Sizes), largest(cfg.Sizes))
		if err != nil {
			return err
		}
		defer w.Close()
		for _, size := range cfg.Sizes {
			cfg.Progress.Step(fmt.Sprintf("%s %s", series.Transport, perf.SizeName(size)))
			msg := perf.Payload(size)
			// The first RPC also waits for ARP between the hosts.
			rt := func() error {
				n, err := w.RPC(msg)
				if err == nil && n != size {
					err = fmt.Errorf("%d-byte response to a %d-byte request", n, size)
				}
				return err
			}
			h, err := perf.Measure(rt, cfg.Warmup, cfg.Count, cfg.MaxTime, cfg.Progress)
			if err != nil {
				return fmt.Errorf("%s: %w", perf.SizeName(size), err)
			}
			series.Points = append(series.Points, perf.Point(size, h))
		}
		return nil
	})
	if err != nil {
		return series, &loop, fmt.Errorf("%s: %w", series.Transport, err)
	}
	return series, &loop, nil
}

func tcpRTT(cfg Config, p tcppeer.Path) (Series, error) {
	series := Series{Transport: p.Name}
	err := tcppeer.Serve(p, 1, func(cs []*net.TCPConn) error {
		for _, size := range cfg.Sizes {
			cfg.Progress.Step(fmt.Sprintf("%s %s", p.Name, perf.SizeName(size)))
			req, resp := tcppeer.Message(size, false), make([]byte, 4+size)
			h, err := perf.Measure(func() error { return tcppeer.RPC(cs[0], req, resp) }, cfg.Warmup, cfg.Count, cfg.MaxTime, cfg.Progress)
			if err != nil {
				return fmt.Errorf("%d B: %w", size, err)
			}
			series.Points = append(series.Points, perf.Point(size, h))
		}
		return nil
	})
	return series, err
}

// Steps is the number of progress steps of RunRTT.
func Steps(cfg Config) int {
	return perf.LinkSteps(cfg.Links, cfg.Testpmd, cfg.Veth, len(cfg.Sizes))
}

// rttRatios are TCP's percentiles over each Homa series', per size.
func rttRatios(series []Series) []Ratio {
	lo, veth := seriesPoints(series, "tcp-loopback"), seriesPoints(series, "tcp-veth")
	var out []Ratio
	for _, s := range series {
		if !perf.IsHoma(s.Transport) {
			continue
		}
		for _, h := range s.Points {
			r := Ratio{Homa: s.Transport, Size: h.Size}
			if p, ok := lo[h.Size]; ok && h.P50Us > 0 && h.P99Us > 0 {
				r.LoopbackP50, r.LoopbackP99 = p.P50Us/h.P50Us, p.P99Us/h.P99Us
			}
			if p, ok := veth[h.Size]; ok && h.P50Us > 0 && h.P99Us > 0 {
				r.VethP50, r.VethP99 = p.P50Us/h.P50Us, p.P99Us/h.P99Us
			}
			out = append(out, r)
		}
	}
	return out
}

// seriesPoints are the points of the series named transport, by size.
func seriesPoints(series []Series, transport string) map[int]perf.RTTPoint {
	m := map[int]perf.RTTPoint{}
	for _, s := range series {
		if s.Transport == transport {
			for _, p := range s.Points {
				m[p.Size] = p
			}
		}
	}
	return m
}

// sizes are the sizes of the points of series, in the order they first
// appear.
func (r *Result) sizes() []int {
	var out []int
	seen := map[int]bool{}
	for _, s := range r.Series {
		for _, p := range s.Points {
			if !seen[p.Size] {
				seen[p.Size] = true
				out = append(out, p.Size)
			}
		}
	}
	return out
}

// Table is the percentiles as rows: size, then P50 and P99 per transport.
func (r *Result) Table() perf.Table {
	t := perf.Table{Header: []string{"size"}}
	var live []map[int]perf.RTTPoint
	for _, s := range r.Series {
		if s.Skipped == "" {
			live = append(live, seriesPoints([]Series{s}, s.Transport))
			t.Header = append(t.Header, s.Transport+" P50 µs", s.Transport+" P99 µs")
		}
	}
	for _, size := range r.sizes() {
		row := []string{perf.SizeName(size)}
		for _, pts := range live {
			if p, ok := pts[size]; ok {
				row = append(row, fmt.Sprintf("%.1f", p.P50Us), fmt.Sprintf("%.1f", p.P99Us))
			} else {
				row = append(row, "-", "-")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// RatioTable is the ratios as rows: size, then for each Homa series TCP
// loopback's P50 and P99 over its ("lo/homa-memif P50"), and TCP veth's
// when it was measured.
func (r *Result) RatioTable() perf.Table {
	hasVeth := false
	for _, s := range r.Series {
		hasVeth = hasVeth || (s.Transport == "tcp-veth" && s.Skipped == "")
	}
	t := perf.Table{Header: []string{"size"}}
	var homas []string
	by := map[string]map[int]Ratio{}
	var sizes []int
	seen := map[int]bool{}
	for _, x := range r.Ratios {
		if by[x.Homa] == nil {
			by[x.Homa] = map[int]Ratio{}
			homas = append(homas, x.Homa)
			t.Header = append(t.Header, "lo/"+x.Homa+" P50", "lo/"+x.Homa+" P99")
			if hasVeth {
				t.Header = append(t.Header, "veth/"+x.Homa+" P50", "veth/"+x.Homa+" P99")
			}
		}
		by[x.Homa][x.Size] = x
		if !seen[x.Size] {
			seen[x.Size] = true
			sizes = append(sizes, x.Size)
		}
	}
	cell := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, size := range sizes {
		row := []string{perf.SizeName(size)}
		for _, h := range homas {
			x := by[h][size] // zero, shown "-", where the series lacks the size
			row = append(row, cell(x.LoopbackP50), cell(x.LoopbackP99))
			if hasVeth {
				row = append(row, cell(x.VethP50), cell(x.VethP99))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// DefaultSizes are the message sizes of the rtt scenario, in bytes: 100 B
// to 64 MB, decimal (8 MB is 8,000,000 bytes, 64 MB 64,000,000: sizeName).
// The two above kernel Homa's 1,000,000 need the daemon's long-message
// config (demo/workers.go: messages up to 64 MiB between its hosts).
var DefaultSizes = []int{100, 1000, 10_000, 100_000, 1_000_000, 8_000_000, 64_000_000}

// SmokeSizes are rtt's sizes with --smoke: up to 1 MB.
var SmokeSizes = []int{100, 1000, 10_000, 100_000, 1_000_000}

// Chart is P50 (solid) and P99 (dashed) against message size for every
// transport, log-log.
func (r *Result) Chart() plots.Lines {
	c := plots.Lines{Title: "Round-trip time, one RPC at a time", X: "message size", Y: "RTT (µs)", LogX: true, LogY: true}
	size := func(p perf.RTTPoint) float64 { return float64(p.Size) }
	for _, s := range r.Series {
		c.Lines = append(c.Lines,
			plots.Line{Name: s.Transport + " P50", Color: plots.ColorOf(s.Transport), Glyph: plots.Ring,
				XY: plots.XYs(s.Points, size, func(p perf.RTTPoint) float64 { return p.P50Us })},
			plots.Line{Name: s.Transport + " P99", Color: plots.ColorOf(s.Transport), Glyph: plots.Box, Dashes: plots.Dashed,
				XY: plots.XYs(s.Points, size, func(p perf.RTTPoint) float64 { return p.P99Us })})
	}
	return c
}

// Title is the rtt section's title.
const Title = "rtt: unloaded round trip, Homa workers vs kernel TCP"

// Report is the rtt scenario's report: the terminal gets the P50
// columns (P99 and the rest are in report.md and rtt.json), so that the
// tables fit in about 100 columns.
func (r *Result) Report() perf.Report {
	rep := perf.Report{Name: "rtt", Title: Title, Method: r.Method, Distortions: r.Distortions,
		Heading: "rtt: round-trip time, one RPC at a time; P50 (P99 in rtt.json and the report)",
		Tables:  []perf.Table{r.Table(), r.RatioTable()},
		Terse:   func(t perf.Table) perf.Table { return t.Without(" P99 µs").Without(" P99") },
		Notes:   []string{"Ratios are TCP over each Homa series: above 1, Homa is faster."},
		Series:  perf.SeriesOf(r.Series, func(s Series) (string, string) { return s.Transport, s.Skipped }),
		Loops:   r.Loops, JSON: "rtt.json", Result: r, Plots: []perf.Plot{{File: "rtt.png", Chart: r.Chart()}}}
	if r.Smoke {
		rep.Smoke = "tiny counts, the figures mean nothing."
	}
	return rep
}

// Goals are the goal rows on the RTT P50 at each size against TCP over
// veth (r nil: it did not run): issue 14's on the ring link, and issue
// 42's at 100 KB and 1 MB on ring and on memif.
func Goals(r *Result) []perf.Goal {
	var gs []perf.Goal
	for _, s := range []struct {
		size int
		want float64
	}{{100, 3.5}, {1000, 3.5}, {10_000, 1}, {100_000, 1}, {1_000_000, 1}} {
		gs = append(gs, goal(r, "RTT P50 at "+perf.SizeName(s.size)+", TCP over Homa", perf.GoalLink, s.size, s.want))
	}
	for _, size := range []int{100_000, 1_000_000} {
		gs = append(gs, goal(r, "RTT P50 at "+perf.SizeName(size)+", TCP over Homa (issue 42)", perf.GoalLink, size, 1.5),
			goal(r, "RTT P50 at "+perf.SizeName(size)+" on memif, TCP over Homa", "homa-memif", size, 1))
	}
	return gs
}

// goal is the row what: the tcp-veth / link P50 ratio at size, at least
// want.
func goal(r *Result, what, link string, size int, want float64) perf.Goal {
	g := perf.Goal{Goal: what, Source: "rtt tcp-veth / " + link, Absent: "no rtt ratio for it in this run"}
	if r == nil {
		return g
	}
	for _, x := range r.Ratios {
		if x.Homa == link && x.Size == size && x.VethP50 > 0 {
			perf.AtLeast(&g, x.VethP50, want)
			g.Absent = ""
		}
	}
	return g
}
