package rate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// Config configures the rate scenario.
type Config struct {
	Self string // the homa-dpdk executable, run as the daemon
	Size int    // request and response bytes
	// Workers are Homa's worker goroutines, each with a client session on
	// 10.0.0.1 and a server session on 10.0.0.2; PerWorker the RPCs each
	// keeps outstanding. Kernel TCP has Workers x PerWorker connections,
	// an RPC outstanding on each.
	Workers   int
	PerWorker int
	Warmup    time.Duration // before each transport's measuring window
	Duration  time.Duration // the measuring window, per transport
	// Held is the number of RPCs the memory run holds outstanding at once
	// (the server workers answer none until they all have arrived).
	Held        int
	HeldTimeout time.Duration // the most the memory run waits for them: long, so that a busy machine still reaches them (the run ends as soon as it does)
	WorkerCPU   int           // the CPU the harness is confined to while Homa runs (the daemon's polling loop is on lcore 1)
	Veth        bool
	Links       []string // the links to measure Homa on, a run each (nil: HomaLinks)
	OutDir      string   // the daemons' logs go here
	Progress    *perf.Progress
	Smoke       bool
}

// ConfigFor is the default configuration, or the --smoke one
// (shorter windows; the same concurrency and the same 10,000 held).
func ConfigFor(smoke bool) Config {
	c := Config{Size: 100, Workers: 4, PerWorker: 64, Warmup: time.Second, Duration: 5 * time.Second,
		Held: 10_000, HeldTimeout: 30 * time.Second, WorkerCPU: 0, Veth: true}
	if smoke {
		c.Warmup, c.Duration, c.Smoke = 200*time.Millisecond, 500*time.Millisecond, true
	}
	return c
}

// Outstanding is the RPCs outstanding at once in the rate runs.
func (c Config) Outstanding() int { return c.Workers * c.PerWorker }

// Run is one transport's figures. Homa's runs are named by link
// (homaSeries: homa-memif, homa-ring), kernel TCP's by path
// (tcp-loopback, tcp-veth).
type Run struct {
	Transport  string  `json:"transport"`
	RPCs       int64   `json:"rpcs"` // completed in the measuring window
	Seconds    float64 `json:"seconds"`
	RPCsPerSec float64 `json:"rpcs_per_s"`
	// CPU over the window, in seconds: the harness process (getrusage;
	// the Homa workers, or TCP's clients and servers) and, for Homa, the
	// daemon (/proc/PID/stat).
	HarnessCPU float64 `json:"harness_cpu_s"`
	DaemonCPU  float64 `json:"daemon_cpu_s"`
	CPUPerM    float64 `json:"cpu_s_per_million_rpcs"` // (harness + daemon) CPU seconds per million RPCs
	// Refusals are the daemon's counters of refused work over the run
	// (Homa; none expected).
	Refusals []Refusal `json:"refusals,omitempty"`
	Skipped  string    `json:"skipped,omitempty"`
}

// starvedNote says, for a Homa run whose daemon had less than 90 % of a
// CPU over the window, that something else ran on its busy loop's core
// ("" otherwise): its figures are then low.
func (x Run) starvedNote() string {
	if !perf.IsHoma(x.Transport) || x.Skipped != "" || x.Seconds <= 0 || x.DaemonCPU >= 0.9*x.Seconds {
		return ""
	}
	return fmt.Sprintf("%s: the daemon had %.0f%% of a CPU over the window; its loop polls busily, so something else ran on its core, and the run's figures are low.",
		x.Transport, 100*x.DaemonCPU/x.Seconds)
}

// Ratio is a Homa run's figures over a TCP run's.
type Ratio struct {
	Homa       string  `json:"homa"`
	TCP        string  `json:"tcp"`
	RPCsPerSec float64 `json:"homa_over_tcp_rpcs_per_s"`             // above 1: Homa does more
	CPUPerM    float64 `json:"homa_over_tcp_cpu_s_per_million_rpcs"` // above 1: Homa spends more CPU per RPC
}

// HoldResult is one attempt to hold RPCs outstanding at once: the client
// workers send their shares while the server workers answer none, until
// all have arrived or nothing more comes; then every one is answered.
type HoldResult struct {
	Asked    int `json:"asked"`    // RPCs the workers tried to send
	Accepted int `json:"accepted"` // Sends the daemon accepted
	// RefusedSends are the workers whose Send the daemon refused (each
	// stops at its first refusal); RefusalError the first refusal.
	RefusedSends int     `json:"refused_sends"`
	RefusalError string  `json:"refusal_error,omitempty"`
	Held         int     `json:"held"`      // requests the server workers held unanswered when the memory was read
	Reached      bool    `json:"reached"`   // Held == Asked
	HoldSeconds  float64 `json:"hold_s"`    // from the first Send to the release
	Completed    int64   `json:"completed"` // RPCs answered after the release
	Failed       int64   `json:"failed"`    // RPCs that ended with an error (timeout: their requests dropped, say)
	// RepliesRefused are replies to held requests that the daemon
	// refused: their RPCs had ended meanwhile.
	RepliesRefused int `json:"replies_refused,omitempty"`
	// Refusals are the daemon's counters of refused work over the
	// attempt: which bounds stopped it.
	Refusals []Refusal `json:"refusals,omitempty"`
}

// Memory is the daemon's memory with RPCs held outstanding, on one
// link: first the attempt with the demo's config, then the run with the
// bounds that stopped it raised and the timers that would time the held
// RPCs out set long (heldKeys).
type Memory struct {
	Transport  string      `json:"transport"`
	DemoConfig HoldResult  `json:"demo_config"` // the attempt with the demo's config
	Raised     []ConfigKey `json:"raised_keys"` // the memory run's config apart from the demo's
	Held       HoldResult  `json:"held_run"`
	Before     ProcMemory  `json:"before"`  // after the workers attached and did their warm-up RPCs
	AtHeld     ProcMemory  `json:"at_held"` // with Held.Held outstanding
	After      ProcMemory  `json:"after"`   // once they had all ended
	// Outstanding is the daemon's own gauge homa_worker_outstanding_rpcs
	// per host while they were held (published every 100 ms; 0 when not
	// read).
	Outstanding map[string]float64 `json:"daemon_outstanding_gauge,omitempty"`
	// Bytes per RPC held: (AtHeld - Before) / Held.Held, of VmRSS and of
	// RssAnon (the daemon's private memory alone).
	VmRSSPerRPC   float64 `json:"vm_rss_bytes_per_rpc"`
	RssAnonPerRPC float64 `json:"rss_anon_bytes_per_rpc"`
	Error         string  `json:"error,omitempty"`
}

// Result is the rate scenario's result.
type Result struct {
	Method      string           `json:"method"`
	Distortions string           `json:"distortions"`
	Smoke       bool             `json:"smoke"`
	Size        int              `json:"size_bytes"`
	Workers     int              `json:"workers"`
	PerWorker   int              `json:"outstanding_per_worker"`
	Outstanding int              `json:"outstanding"` // Homa: Workers x PerWorker; TCP: connections
	HeldAsked   int              `json:"held_asked"`  // RPCs the memory runs hold
	Runs        []Run            `json:"runs"`
	Ratios      []Ratio          `json:"ratios"` // each Homa run over each TCP run
	Memory      []Memory         `json:"memory"` // per Homa link
	Loops       []perf.LoopStats `json:"loops"`
}

// rateMethod is how cfg measures.
func rateMethod(cfg Config) string {
	return fmt.Sprintf(`Small RPCs per second: requests and responses of %d bytes, %d outstanding at once (%d workers x %d), `+
		`a warm-up of %v, then a measuring window of %v per transport (by default 1 s and 5 s, --smoke 200 ms and 500 ms). `,
		cfg.Size, cfg.Outstanding(), cfg.Workers, cfg.PerWorker, cfg.Warmup, cfg.Duration) +
		"Homa: the harness starts this program as `homa-dpdk demo --workers DIR --link LINK` (two hosts, 10.0.0.1 and 10.0.0.2, " +
		`one busy-polling loop on lcore 1), once per link (homa-memif: a net_memif pair; homa-ring: a net_ring pair, the mbufs ` +
		`change hands). ` + fmt.Sprintf(`Each of the %d workers is a goroutine with a client session on 10.0.0.1 and a server `+
		`session on 10.0.0.2 bound to a port of its own (100, 101, ...), to which its requests go: it keeps %d Sends outstanding `+
		`(each Send returns once the daemon has accepted it), answers each request its server session receives with the same `+
		`bytes (ReplyAsync, so a burst of replies goes in one pass of the daemon's loop), and takes each response, checking `+
		`its bytes. While Homa runs, every thread of the harness is pinned to CPU %d and Go runs on one P (GOMAXPROCS 1), so the `+
		`workers take turns on that CPU as Go schedules them (a worker whose pass finds nothing to do yields with `+
		`runtime.Gosched): one busy thread beside the daemon's own threads there, as in rtt. `, cfg.Workers, cfg.PerWorker, cfg.WorkerCPU) +
		fmt.Sprintf(`Kernel TCP: %d connections, one RPC outstanding on each (not pipelined), TCP_NODELAY, each message a 4-byte `+
			`length then the bytes; the client is a goroutine per connection writing a request and reading its response; `+
			`the server (Go's net package, whose sockets wait in epoll: an epoll server with a goroutine per connection) reads each `+
			`request and writes it back in one write; ordinary goroutines, GOMAXPROCS 2, not pinned (as in rtt); over loopback and `+
			`across a veth pair between two network namespaces. `, cfg.Outstanding()) +
		`RPCs per second: responses taken in the window over its length. CPU seconds per million RPCs: the harness process's ` +
		`user+system time (getrusage: the Homa workers, or TCP's clients and servers) plus, for Homa, the daemon's utime+stime ` +
		`(/proc/PID/stat, 10 ms ticks), over the window. Ratios are each Homa run over each TCP run. Memory: ` +
		fmt.Sprintf(`on each link the same workers hold %d RPCs outstanding at once, each client worker sending its share `+
			`(%d) while the server workers take every request and answer none (they check it, give its pool page back `+
			`and keep it) until all %d are held, then answer all; the daemon's VmRSS, VmHWM, RssAnon, RssShmem and HugetlbPages `+
			`(/proc/PID/status) are read after the workers attached and did %v of RPCs, at the moment all are held, and once `+
			`all have ended; bytes per RPC are the growth from before to held over the RPCs held. `, cfg.Held,
			(cfg.Held+cfg.Workers-1)/cfg.Workers, cfg.Held, cfg.Warmup) +
		`This is tried first with the demo's config, on the daemon that ran the rate window: what it held and which of its ` +
		`bounds refused the rest (the workers' refused Sends, and the daemon's own counters read from its metrics ` +
		`endpoint, which the harness turns on with HOMA_METRICS_ADDRESS) are reported; then a second daemon, with those ` +
		`bounds raised and the timers that would have the held RPCs ask for retransmission and time out set long, through ` +
		`HOMA_* variables (the values and why are in raised_keys), holds them for the memory reading. Both hosts are in ` +
		`the one daemon process, so a held RPC's bytes are a client RPC's on one host and a server RPC's on the other, ` +
		`with the worker sessions' records of both.`
}

const rateDistortions = `On a 2-vCPU virtual machine the "two daemons" are two Homa hosts in one process sharing one ` +
	`busy-polling core, and the Homa workers share the other, with the daemon's other threads (Go's runtime, the ` +
	`control sockets): the workers take turns on it, so a worker's RPCs wait while the others run, and a Send waits ` +
	`for the daemon's acceptance (about one pass of its loop) before its worker goes on. Homa's CPU counts a whole ` +
	`busy core for the daemon's loop whatever the load, and the workers spin on their rings, so Homa's CPU per RPC ` +
	`falls as the rate rises; kernel TCP's goroutines block in epoll and use both CPUs as they need. Kernel TCP's ` +
	`softirq work is charged to whatever task the CPU was running (usually the harness's threads); time in ` +
	`ksoftirqd is not counted. ` + perf.LinkDistortions + ` While the attempt with the demo's config holds its RPCs, ` +
	`every client RPC silent for 5 ms asks its server with a RESEND every 5 ms and is answered BUSY: thousands of ` +
	`control packets a millisecond on the one loop, which slow the sending of the rest and can overflow the ports' ` +
	`TX queues, so that RPCs time out (the memory run sets protocol.resend_ticks long for that reason: raised_keys). ` +
	`VmRSS counts the worker regions' pages the daemon has touched only where a region is ordinary shared memory; ` +
	`regions on 2 MB hugepages (while there are free ones: each region is 258 MiB, the harness attaches 8 to a ` +
	`daemon) show in HugetlbPages instead; RssAnon is the daemon's private memory (Go heap, stacks, DPDK's memory ` +
	`under --no-huge), and the Go heap grows by up to GOGC (100 %) past what is live before a collection, and keeps ` +
	`ended RPCs for reuse. Other work on the machine takes CPU from whichever side is running.`

// rateRatios are each Homa run's figures over each TCP run's (none where
// either is skipped or has a zero figure).
func rateRatios(runs []Run) []Ratio {
	var out []Ratio
	for _, h := range runs {
		if !perf.IsHoma(h.Transport) || h.Skipped != "" || h.RPCsPerSec == 0 {
			continue
		}
		for _, x := range runs {
			if perf.IsHoma(x.Transport) || x.Skipped != "" || x.RPCsPerSec == 0 || x.CPUPerM == 0 {
				continue
			}
			out = append(out, Ratio{Homa: h.Transport, TCP: x.Transport,
				RPCsPerSec: h.RPCsPerSec / x.RPCsPerSec, CPUPerM: h.CPUPerM / x.CPUPerM})
		}
	}
	return out
}

// Table is the runs as rows.
func (r *Result) Table() perf.Table {
	t := perf.Table{Header: []string{"transport", "outstanding", "RPCs/s", "CPU s per M RPCs", "harness CPU s", "daemon CPU s", "RPCs", "seconds"}}
	for _, x := range r.Runs {
		if x.Skipped != "" {
			continue
		}
		t.Rows = append(t.Rows, []string{x.Transport, fmt.Sprint(r.Outstanding), fmt.Sprintf("%.0f", x.RPCsPerSec),
			fmt.Sprintf("%.2f", x.CPUPerM), fmt.Sprintf("%.2f", x.HarnessCPU), fmt.Sprintf("%.2f", x.DaemonCPU),
			fmt.Sprint(x.RPCs), fmt.Sprintf("%.2f", x.Seconds)})
	}
	return t
}

// RatioTable is the ratios as rows.
func (r *Result) RatioTable() perf.Table {
	t := perf.Table{Header: []string{"Homa / TCP", "RPCs/s", "CPU s per M RPCs"}}
	for _, x := range r.Ratios {
		t.Rows = append(t.Rows, []string{x.Homa + " / " + x.TCP, fmt.Sprintf("%.2f", x.RPCsPerSec), fmt.Sprintf("%.2f", x.CPUPerM)})
	}
	return t
}

const rateRatiosNote = "Ratios are Homa over TCP: RPCs/s above 1, Homa does more; CPU s per M RPCs above 1, Homa spends more CPU per RPC."

// mib is KiB as MiB, for the tables.
func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

// MemoryTable is the daemon's memory per link, before and with the RPCs
// held.
func (r *Result) MemoryTable() perf.Table {
	t := perf.Table{Header: []string{"daemon", "held", "VmRSS MiB before", "VmRSS MiB held", "VmHWM MiB held", "VmRSS MiB after",
		"RssAnon MiB before", "RssAnon MiB held", "hugetlb MiB", "VmRSS B/RPC", "RssAnon B/RPC"}}
	for _, m := range r.Memory {
		if m.Held.Held == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{m.Transport, fmt.Sprint(m.Held.Held), mib(m.Before.VmRSSKB), mib(m.AtHeld.VmRSSKB),
			mib(m.AtHeld.VmHWMKB), mib(m.After.VmRSSKB), mib(m.Before.RssAnonKB), mib(m.AtHeld.RssAnonKB), mib(m.AtHeld.HugetlbKB),
			fmt.Sprintf("%.0f", m.VmRSSPerRPC), fmt.Sprintf("%.0f", m.RssAnonPerRPC)})
	}
	return t
}

// perRPC is the bytes each of held RPCs added from before to at (KiB).
func perRPC(before, at int64, held int) float64 {
	if held <= 0 {
		return 0
	}
	return float64(at-before) * 1024 / float64(held)
}

// holdText says what an attempt held and what refused the rest.
func holdText(h HoldResult) string {
	s := fmt.Sprintf("%d of %d held (%d Sends accepted", h.Held, h.Asked, h.Accepted)
	if h.RefusedSends > 0 {
		s += fmt.Sprintf("; %d workers' Sends refused, the first: %s", h.RefusedSends, h.RefusalError)
	}
	s += fmt.Sprintf("; after the release %d answered, %d failed", h.Completed, h.Failed)
	if h.RepliesRefused > 0 {
		s += fmt.Sprintf(", %d replies refused (their RPCs had ended)", h.RepliesRefused)
	}
	s += ")"
	if len(h.Refusals) > 0 {
		var parts []string
		for _, x := range h.Refusals {
			parts = append(parts, x.String())
		}
		s += "; the daemon's refusals: " + strings.Join(parts, ", ")
	} else {
		s += "; the daemon counted no refusals"
	}
	return s
}

// gaugesText is a gauge per host: "10.0.0.1 10000, 10.0.0.2 10000".
func gaugesText(g map[string]float64) string {
	if len(g) == 0 {
		return "not read"
	}
	var parts []string
	for _, h := range slices.Sorted(maps.Keys(g)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", h, g[h]))
	}
	return strings.Join(parts, ", ")
}

// MemoryNotes are the memory runs in words: the demo config's attempt,
// the raised keys and the run.
func (r *Result) MemoryNotes() []string {
	var out []string
	for _, m := range r.Memory {
		out = append(out, fmt.Sprintf("%s with the demo's config: %s.", m.Transport, holdText(m.DemoConfig)))
		if len(m.Raised) > 0 {
			out = append(out, fmt.Sprintf("%s memory run, with %s: %s; the daemon's outstanding_rpcs gauge while held: %s.",
				m.Transport, keysText(m.Raised), holdText(m.Held), gaugesText(m.Outstanding)))
		}
		if m.Error != "" {
			out = append(out, fmt.Sprintf("%s memory run: %s", m.Transport, m.Error))
		}
	}
	return out
}

// Steps is the number of progress steps of RunRate: per link its
// daemon, the rate window, the demo config's attempt, the second daemon
// and the memory run; TCP loopback; the veth pair and TCP veth.
func Steps(cfg Config) int {
	n := 5*len(perf.LinksFor(cfg.Links, "")) + 1
	if cfg.Veth {
		n += 2
	}
	return n
}

// Measure runs the rate scenario.
func Measure(cfg Config) (*Result, error) {
	res := &Result{Method: rateMethod(cfg), Distortions: rateDistortions, Smoke: cfg.Smoke, Size: cfg.Size,
		Workers: cfg.Workers, PerWorker: cfg.PerWorker, Outstanding: cfg.Outstanding(), HeldAsked: cfg.Held}
	vethSkip, err := homapeer.Transports(cfg.Links, "", cfg.Veth, cfg.Progress, func(link, dir string) error {
		run, mem, loops, err := homaRate(cfg, link, dir)
		res.Loops = append(res.Loops, loops...)
		res.Runs, res.Memory = append(res.Runs, run), append(res.Memory, mem)
		return err
	}, func(p tcppeer.Path) error {
		cfg.Progress.Step(p.Name + " rate")
		run, err := tcpRate(cfg, p)
		res.Runs = append(res.Runs, run)
		return err
	})
	if err != nil {
		return nil, err
	}
	if vethSkip != "" {
		res.Runs = append(res.Runs, Run{Transport: "tcp-veth", Skipped: vethSkip})
	}
	res.Ratios = rateRatios(res.Runs)
	return res, nil
}

// Title is the rate section's title.
const Title = "rate: small RPCs per second and the daemon's memory with 10,000 outstanding, Homa workers vs kernel TCP"

// Report is the rate scenario's report: its tables, and RPCs per second
// and CPU seconds per million RPCs plotted, a bar per transport.
func (r *Result) Report() perf.Report {
	rep := perf.Report{Name: "rate", Title: Title, Method: r.Method, Distortions: r.Distortions,
		Heading: fmt.Sprintf("rate: %d-byte RPCs, %d outstanding (%d workers x %d; TCP: as many connections)", r.Size, r.Outstanding, r.Workers, r.PerWorker),
		Tables:  []perf.Table{r.Table(), r.RatioTable(), r.MemoryTable()},
		Notes: append([]string{fmt.Sprintf("%d-byte requests and responses, %d outstanding (%d workers x %d; TCP: as many connections, an RPC on each).",
			r.Size, r.Outstanding, r.Workers, r.PerWorker), rateRatiosNote,
			fmt.Sprintf("Memory: the daemon's, with %d RPCs held outstanding at once (B/RPC: the growth from before to held, per RPC held).", r.HeldAsked)},
			r.MemoryNotes()...),
		Series: perf.SeriesOf(r.Runs, func(x Run) (string, string) { return x.Transport, x.Skipped }),
		Loops:  r.Loops, JSON: "rate.json", Result: r}
	for _, x := range r.Runs {
		for _, f := range x.Refusals {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the daemon refused work during the run: %s", x.Transport, f))
		}
		if n := x.starvedNote(); n != "" {
			rep.Notes = append(rep.Notes, n)
		}
	}
	if r.Smoke {
		rep.Smoke = "half a second per transport, the figures mean little."
	}
	group := []string{fmt.Sprintf("%s, %d outstanding", perf.SizeName(r.Size), r.Outstanding)}
	rpcs := plots.GroupedBars{Title: "Small RPCs per second", YLabel: "thousand RPCs per second", Groups: group}
	cpu := plots.GroupedBars{Title: "CPU per million RPCs", YLabel: "CPU seconds per million RPCs", Groups: group}
	for _, x := range r.Runs {
		if x.Skipped == "" {
			rpcs.Series, rpcs.Values = append(rpcs.Series, x.Transport), append(rpcs.Values, []float64{x.RPCsPerSec / 1e3})
			cpu.Series, cpu.Values = append(cpu.Series, x.Transport), append(cpu.Values, []float64{x.CPUPerM})
		}
	}
	rep.Plots = []perf.Plot{{File: "rate-rpcs.png", Chart: rpcs}, {File: "rate-cpu.png", Chart: cpu}}
	return rep
}
