package throughput

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// Config configures the throughput scenario.
type Config struct {
	homapeer.StreamConfig
	Veth bool
	// Links are the links to measure Homa on, a run each (nil:
	// HomaLinks; through Testpmd, memif alone).
	Links []string
}

// ConfigFor is the default configuration, or the --smoke one
// (1 MB alone, a second per transport).
func ConfigFor(smoke bool) Config {
	c := Config{Veth: true}
	c.Sizes, c.Duration = perf.StreamSizesFor(smoke)
	c.WorkerCPU, c.Smoke = 0, smoke
	return c
}

// Result is the throughput scenario's result.
type Result struct {
	Method      string            `json:"method"`
	Distortions string            `json:"distortions"`
	Smoke       bool              `json:"smoke"`
	Sizes       []perf.StreamSize `json:"sizes"`
	Runs        []perf.StreamRun  `json:"runs"`   // per transport, per size
	Ratios      []Ratio           `json:"ratios"` // per size, each Homa run over each TCP run
	Loops       []perf.LoopStats  `json:"loops"`
}

// Ratio is a Homa run's figures over a TCP run's of the same
// size.
type Ratio struct {
	Homa     string  `json:"homa"` // homa-memif, homa-ring
	TCP      string  `json:"tcp"`  // tcp-loopback, tcp-veth
	Size     int     `json:"size_bytes"`
	Gbps     float64 `json:"homa_over_tcp_gbps"`         // above 1: Homa moves more
	CPUPerGB float64 `json:"homa_over_tcp_cpu_s_per_gb"` // above 1: Homa spends more CPU per GB
}

// throughputMethod is how cfg measures.
func throughputMethod(cfg Config) string {
	var per []string
	for _, z := range cfg.Sizes {
		per = append(per, fmt.Sprintf("%s with a window of %d (%d warm-up messages)", perf.SizeName(z.Size), z.Window, z.Warmup))
	}
	return `One stream of messages per size, MB meaning 10^6 bytes: ` + strings.Join(per, "; ") +
		` (--smoke: 1 MB alone); each message is answered with a 1-byte reply. The window of 64 MB messages is 2, ` +
		`what the daemon's worker regions hold (128 MiB of transmit arena and of receive pool each: demo/workers.go); ` +
		`messages above kernel Homa's 1,000,000 bytes go between the daemon's hosts as long-message peers. ` +
		`Homa: the same daemon child process as rtt, once per link (two hosts on a net_memif pair, ` +
		`run homa-memif, then on a net_ring pair, run homa-ring, where the mbufs change hands with no copy in the ` +
		`link; one busy-polling loop on lcore 1), every size on the one daemon; one goroutine pinned to CPU 0 drives the client worker (10.0.0.1) and ` +
		`the server worker (10.0.0.2), polling both completion rings in turn: it keeps a window of Sends outstanding, ` +
		`answers each received request with 1 byte and takes each response; the harness's other threads are kept off ` +
		`CPU 1, the daemon's loop CPU, while the daemon runs. Kernel TCP (TCP_NODELAY): the client ` +
		`goroutine writes 4-byte-length-prefixed messages, up to a window unacknowledged, the server goroutine ` +
		`reads each whole and writes 1 byte back (ordinary goroutines, not pinned, as in rtt); over loopback and ` +
		`across the veth pair between two namespaces, every size on one connection. Gbps is payload bits ` +
		`(requests only) per second over the measuring window (` + cfg.Duration.String() + ` per size and transport), after the warm-up; ` +
		`the messages outstanding at its end are drained, not counted. CPU seconds per GB: the ` +
		`harness process's user+system time (getrusage) plus, for Homa, the daemon process's utime+stime ` +
		`(/proc/PID/stat, 10 ms ticks), over the window, divided by the payload GB. Ratios are, per size, each Homa run's ` +
		`Gbps and CPU seconds per GB over each TCP run's. Send copies per byte, Homa's: the sending host's (10.0.0.1's) ` +
		`DATA payload bytes copied into frames over all it sent, copied or from the worker's own buffer (the engine's ` +
		`data_bytes_copied and data_bytes_zero_copy, retransmissions included), read from the daemon's metrics endpoint ` +
		`(HOMA_METRICS_ADDRESS) before and after each size, warm-up and drain included, ` + homapeer.MetricsSettle.String() +
		` after the last message for the loop to publish them.`
}

const throughputDistortions = `The daemon's loop polls busily, so it burns a whole CPU whatever the load: ` +
	`Homa's CPU per GB counts that core in full (as a deployment's dedicated core would be), and the workers' ` +
	`thread spins too. Kernel TCP's softirq work is charged to whatever task the CPU was running, usually ` +
	`the harness's own threads, but time the kernel spends in its own threads (ksoftirqd) is not counted. ` +
	`Both Homa hosts (and on memif its copies) share one core, which bounds Homa's rate on this 2-vCPU machine; ` +
	perf.LinkDistortions + ` TCP over loopback moves 64 KB segments without checksums or a wire. A concurrent ` +
	`build on the machine takes CPU from whichever side is running.`

// Measure runs the throughput scenario.
func Measure(cfg Config) (*Result, error) {
	res := &Result{Method: throughputMethod(cfg), Distortions: throughputDistortions, Smoke: cfg.Smoke,
		Sizes: cfg.Sizes}
	if cfg.Testpmd != "" {
		res.Method += " " + homapeer.TestpmdPathNote
	}
	if len(cfg.DaemonArgs) > 0 {
		res.Method += fmt.Sprintf(" The daemon ran with %v: its receive copies on a copier thread.", cfg.DaemonArgs)
	}
	vethSkip, err := homapeer.Transports(cfg.Links, cfg.Testpmd, cfg.Veth, cfg.Progress, func(link, dir string) error {
		runs, loops, err := homapeer.HomaStream(cfg.StreamConfig, link, dir)
		res.Loops, res.Runs = append(res.Loops, loops...), append(res.Runs, runs...)
		return err
	}, func(p tcppeer.Path) error {
		runs, err := tcpStream(cfg, p)
		res.Runs = append(res.Runs, runs...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if cfg.Veth && vethSkip != "" {
		res.Runs = append(res.Runs, perf.StreamRun{Transport: "tcp-veth", Skipped: vethSkip})
	}
	res.Ratios = throughputRatios(res.Runs)
	return res, nil
}

// Steps is the number of progress steps of RunThroughput: each
// link's daemon and sizes, TCP loopback's sizes, the veth pair and TCP
// veth's sizes, and testpmd.
func Steps(cfg Config) int {
	return perf.LinkSteps(cfg.Links, cfg.Testpmd, cfg.Veth, len(cfg.Sizes))
}

// tcpStream streams messages over kernel TCP along path p, a run per
// size, all on one connection.
func tcpStream(cfg Config, p tcppeer.Path) ([]perf.StreamRun, error) {
	var runs []perf.StreamRun
	err := tcppeer.Serve(p, 1, func(cs []*net.TCPConn) error {
		for _, z := range cfg.Sizes {
			cfg.Progress.Step(p.Name + " " + perf.SizeName(z.Size))
			r, err := tcpStreamSize(cfg, z, p.Name, cs[0])
			if err != nil {
				return fmt.Errorf("%s: %w", perf.SizeName(z.Size), err)
			}
			runs = append(runs, r)
		}
		return nil
	})
	return runs, err
}

// tcpStreamSize streams messages of z's size on c: the run name.
func tcpStreamSize(cfg Config, z perf.StreamSize, name string, c *net.TCPConn) (perf.StreamRun, error) {
	msg := tcppeer.Message(z.Size, true)
	ack := make([]byte, 1)
	outstanding := 0
	m := homapeer.NewMeter(name, z, cfg.Duration, nil, cfg.Progress)
	for {
		sending, over, err := m.Step(time.Now(), outstanding)
		if err != nil {
			return perf.StreamRun{}, err
		}
		if over {
			break
		}
		if sending && outstanding < z.Window {
			if _, err := c.Write(msg); err != nil {
				return perf.StreamRun{}, err
			}
			outstanding++
			continue
		}
		if _, err := c.Read(ack); err != nil {
			return perf.StreamRun{}, err
		}
		outstanding--
		m.Done(sending)
	}
	return m.Result(), nil
}

// runSizes are the sizes of the runs, in the order they first appear.
func runSizes(runs []perf.StreamRun) []int {
	var out []int
	seen := map[int]bool{}
	for _, x := range runs {
		if x.Skipped == "" && !seen[x.Size] {
			seen[x.Size] = true
			out = append(out, x.Size)
		}
	}
	return out
}

// Table is the result as rows, by size, then by transport.
func (r *Result) Table() perf.Table {
	t := perf.Table{Header: []string{"size", "transport", "window", "Gbps", "CPU s/GB", "harness CPU s", "daemon CPU s", "messages", "seconds", "send copies/B"}}
	for _, size := range runSizes(r.Runs) {
		for _, x := range r.Runs {
			if x.Skipped != "" || x.Size != size {
				continue
			}
			t.Rows = append(t.Rows, []string{perf.SizeName(x.Size), x.Transport, fmt.Sprint(x.Window), fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB),
				fmt.Sprintf("%.2f", x.HarnessCPU), fmt.Sprintf("%.2f", x.DaemonCPU), fmt.Sprint(x.Messages), fmt.Sprintf("%.2f", x.Seconds), sendCopies(x)})
		}
	}
	return t
}

// sendCopies is a run's send copies per payload byte for the table ("—":
// none, TCP's or not read).
func sendCopies(x perf.StreamRun) string {
	if x.Send == nil || x.Send.Total() == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", x.Send.CopiesPerByte())
}

// throughputRatios are, per size, each Homa run's figures over each TCP
// run's (none where either is skipped or has a zero figure).
func throughputRatios(runs []perf.StreamRun) []Ratio {
	var out []Ratio
	for _, size := range runSizes(runs) {
		for _, h := range runs {
			if !perf.IsHoma(h.Transport) || h.Skipped != "" || h.Size != size {
				continue
			}
			for _, x := range runs {
				if perf.IsHoma(x.Transport) || x.Skipped != "" || x.Size != size || x.Gbps == 0 || x.CPUPerGB == 0 {
					continue
				}
				out = append(out, Ratio{Homa: h.Transport, TCP: x.Transport, Size: size,
					Gbps: h.Gbps / x.Gbps, CPUPerGB: h.CPUPerGB / x.CPUPerGB})
			}
		}
	}
	return out
}

// RatioTable is the ratios as rows: size, Homa run / TCP run, Gbps, CPU s
// per GB.
func (r *Result) RatioTable() perf.Table {
	t := perf.Table{Header: []string{"size", "Homa / TCP", "Gbps", "CPU s per GB"}}
	for _, x := range r.Ratios {
		t.Rows = append(t.Rows, []string{perf.SizeName(x.Size), x.Homa + " / " + x.TCP, fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB)})
	}
	return t
}

const throughputRatiosNote = "Ratios are Homa over TCP at the same size: Gbps above 1, Homa moves more; CPU s per GB above 1, Homa spends more CPU per GB."

// sizesText is the result's sizes and windows: "1 MB (4 outstanding), 64
// MB (2 outstanding)".
func (r *Result) sizesText() string {
	var parts []string
	for _, z := range r.Sizes {
		parts = append(parts, fmt.Sprintf("%s (%d outstanding)", perf.SizeName(z.Size), z.Window))
	}
	return strings.Join(parts, ", ")
}

// throughputTitle is the throughput section's title, with the sizes.
func throughputTitle(sizes string) string {
	if sizes != "" {
		sizes = " (" + sizes + ")"
	}
	return "throughput: messages streamed" + sizes + ", Homa workers vs kernel TCP"
}

// Title is the throughput section's title without its sizes
// (a failed run's).
var Title = throughputTitle("")

// Report is the throughput scenario's report: its tables, and Gbps and
// CPU seconds per GB plotted, a group of bars per size, a bar per
// transport.
func (r *Result) Report() perf.Report {
	var sizes []int
	for _, z := range r.Sizes {
		sizes = append(sizes, z.Size)
	}
	rep := perf.Report{Name: "throughput", Title: throughputTitle(perf.SizeList(sizes)), Method: r.Method, Distortions: r.Distortions,
		Heading: fmt.Sprintf("throughput: %s messages, 1-byte replies", r.sizesText()),
		Tables:  []perf.Table{r.Table(), r.RatioTable()},
		Notes:   []string{"Messages and windows: " + r.sizesText() + ".", throughputRatiosNote},
		Series:  perf.SeriesOf(r.Runs, func(x perf.StreamRun) (string, string) { return x.Transport, x.Skipped }),
		Loops:   r.Loops, JSON: "throughput.json", Result: r}
	if r.Smoke {
		rep.Smoke = "1 MB alone, one second per transport, the figures mean little."
	}
	gbps := plots.GroupedBars{Title: "Throughput: " + r.sizesText(), YLabel: "Gbps (payload)"}
	cpu := plots.GroupedBars{Title: "CPU per GB of payload", YLabel: "CPU seconds per GB"}
	sizes = runSizes(r.Runs)
	for _, size := range sizes {
		gbps.Groups = append(gbps.Groups, perf.SizeName(size))
	}
	for _, s := range rep.Series {
		if s.Skipped != "" {
			continue
		}
		g, c := make([]float64, len(sizes)), make([]float64, len(sizes))
		for _, x := range r.Runs {
			if j := slices.Index(sizes, x.Size); x.Skipped == "" && x.Transport == s.Name && j >= 0 {
				g[j], c[j] = x.Gbps, x.CPUPerGB
			}
		}
		gbps.Series, gbps.Values, cpu.Values = append(gbps.Series, s.Name), append(gbps.Values, g), append(cpu.Values, c)
	}
	cpu.Groups, cpu.Series = gbps.Groups, gbps.Series
	rep.Plots = []perf.Plot{{File: "throughput-gbps.png", Chart: gbps}, {File: "throughput-cpu.png", Chart: cpu}}
	return rep
}

// Goals are the goal rows on 1 MB streaming against TCP over veth, and
// issue 42's on the send side's copies (r nil: it did not run).
func Goals(r *Result) []perf.Goal {
	var gs []perf.Goal
	// 1 MB streaming: Gbps and CPU per GB against TCP over veth, on a link.
	tp := func(what, link string, f func(Ratio) (float64, func(*perf.Goal, float64, float64), float64)) {
		g := perf.Goal{Goal: what, Source: "throughput " + link + " / tcp-veth, 1 MB"}
		found := false
		if r != nil {
			for _, x := range r.Ratios {
				if x.Homa == link && x.TCP == "tcp-veth" && x.Size == 1_000_000 {
					v, cmp, want := f(x)
					cmp(&g, v, want)
					found = true
				}
			}
		}
		if !found {
			g.Absent = "no throughput ratio for it in this run"
		}
		gs = append(gs, g)
	}
	gbps := func(want float64) func(Ratio) (float64, func(*perf.Goal, float64, float64), float64) {
		return func(r Ratio) (float64, func(*perf.Goal, float64, float64), float64) {
			return r.Gbps, perf.AtLeast, want
		}
	}
	cpu := func(want float64) func(Ratio) (float64, func(*perf.Goal, float64, float64), float64) {
		return func(r Ratio) (float64, func(*perf.Goal, float64, float64), float64) {
			return r.CPUPerGB, perf.AtMost, want
		}
	}
	tp("1 MB streaming throughput, Homa over TCP", perf.GoalLink, gbps(1.0))
	tp("1 MB streaming CPU per GB, Homa over TCP", perf.GoalLink, cpu(1.5))
	// Issue 33's: a host at the link's speed.
	tp("1 MB streaming throughput, Homa over TCP, at the link's speed", perf.GoalLink, gbps(2.5))
	tp("1 MB streaming CPU per GB, Homa over TCP, at the link's speed", perf.GoalLink, cpu(0.5))
	tp("1 MB streaming throughput on memif, Homa over TCP, at the link's speed", "homa-memif", gbps(1.5))
	// Issue 42's: no copy on the send side, on either link.
	gs = append(gs, sendCopiesGoal(r, perf.GoalLink), sendCopiesGoal(r, "homa-memif"))
	return gs
}

// sendCopiesGoal is the row of link's send side: its 1 MB run's copies
// per payload byte, from the sending host's counters (r nil: it did not
// run).
func sendCopiesGoal(r *Result, link string) perf.Goal {
	g := perf.Goal{Goal: "Send-side copies per payload byte, 1 MB on " + strings.TrimPrefix(link, "homa-"),
		Source: "throughput " + link + ", 1 MB: the sender's data_bytes_copied / (copied + zero_copy)",
		Absent: "no " + link + " run at 1 MB in this run"}
	if r == nil {
		return g
	}
	for _, x := range r.Runs {
		if x.Transport != link || x.Size != 1_000_000 || x.Skipped != "" {
			continue
		}
		switch {
		case x.Send == nil:
			g.Absent = "send counters not read: " + x.SendUnread
		case x.Send.Total() == 0:
			g.Absent = "the send counters saw no DATA bytes"
		default:
			perf.AtMost(&g, x.Send.CopiesPerByte(), 0)
			g.Absent = ""
		}
	}
	return g
}

// StreamRuns are the runs, for the floor scenario to set beside its own.
func (r *Result) StreamRuns() []perf.StreamRun { return r.Runs }
