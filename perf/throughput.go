package perf

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// ThroughputConfig configures the throughput scenario.
type ThroughputConfig struct {
	Self      string
	Sizes     []ThroughputSize // measured in turn, each on every transport
	Duration  time.Duration    // measuring time per size and transport
	WorkerCPU int              // CPU of the Homa workers' thread (the daemon's polling loop is on lcore 1)
	Veth      bool
	// Links are the links to measure Homa on, a run each (nil:
	// HomaLinks; through Testpmd, memif alone).
	Links    []string
	OutDir   string
	Progress *Progress
	// Testpmd, when set, is the dpdk-testpmd program: Homa's hosts are then
	// joined through it (the testpmd-path scenario, testpmdpath.go).
	Testpmd string
	// MTU is the daemon's ports' IP MTU (demo --mtu; 0: its 1500); the
	// runs are then named homaSeries(link) + "-mtu" + MTU (homaMTUSeries).
	MTU   int
	Out   io.Writer
	Smoke bool
	// Name prefixes the daemon's log file (Name-LINK-daemon.log; "":
	// throughput).
	Name string
}

// ThroughputSize is one message size of the throughput scenario: its
// window and warm-up.
type ThroughputSize struct {
	Size   int `json:"size_bytes"`      // message bytes (MB: 10^6, as sizeName)
	Window int `json:"window"`          // messages outstanding
	Warmup int `json:"warmup_messages"` // messages before measuring
}

// ThroughputSizes are the default sizes: 1 MB, 8 MB and 64 MB. The window
// is 4 messages up to 8 MB (32 MB in flight) and 2 at 64 MB, all that
// the demo's worker regions hold (128 MiB of arena and of pool,
// demo/workers.yaml: 128 MB of requests in flight in the client's arena,
// 2 x 977 pages of the server's pool); the warm-up is about 50 MB of
// messages, at least a window's.
var ThroughputSizes = []ThroughputSize{
	{Size: 1_000_000, Window: 4, Warmup: 50},
	{Size: 8_000_000, Window: 4, Warmup: 8},
	{Size: 64_000_000, Window: 2, Warmup: 2},
}

// ThroughputConfigFor is the default configuration, or the --smoke one
// (1 MB alone, a second per transport).
func ThroughputConfigFor(smoke bool) ThroughputConfig {
	c := ThroughputConfig{Sizes: ThroughputSizes, Duration: 10 * time.Second,
		WorkerCPU: 0, Veth: true, Out: os.Stdout}
	if smoke {
		c.Sizes, c.Duration, c.Smoke = []ThroughputSize{{Size: 1_000_000, Window: 4, Warmup: 5}}, time.Second, true
	}
	return c
}

// ThroughputRun is one transport's figures at one size. Homa's runs are
// named by link (homaSeries: homa-memif, homa-ring), kernel TCP's by path
// (tcp-loopback, tcp-veth).
type ThroughputRun struct {
	Transport string  `json:"transport"`
	MTU       int     `json:"mtu,omitempty"`        // Homa's IP MTU when not 1500
	Size      int     `json:"size_bytes,omitempty"` // message bytes (none: a skipped transport)
	Window    int     `json:"window,omitempty"`     // messages outstanding
	Messages  int64   `json:"messages"`
	Seconds   float64 `json:"seconds"`
	Gbps      float64 `json:"gbps"` // payload bits per second / 1e9
	// CPU over the measuring window: the harness process (getrusage) and,
	// for Homa, the daemon (/proc/PID/stat), in seconds.
	HarnessCPU float64 `json:"harness_cpu_s"`
	DaemonCPU  float64 `json:"daemon_cpu_s"`
	CPUPerGB   float64 `json:"cpu_s_per_gb"` // (harness + daemon) CPU seconds per GB of payload
	Skipped    string  `json:"skipped,omitempty"`
}

// ThroughputResult is the throughput scenario's result.
type ThroughputResult struct {
	Method      string            `json:"method"`
	Distortions string            `json:"distortions"`
	Smoke       bool              `json:"smoke"`
	Sizes       []ThroughputSize  `json:"sizes"`
	Runs        []ThroughputRun   `json:"runs"`   // per transport, per size
	Ratios      []ThroughputRatio `json:"ratios"` // per size, each Homa run over each TCP run
	Loops       []LoopStats       `json:"loops"`
}

// ThroughputRatio is a Homa run's figures over a TCP run's of the same
// size.
type ThroughputRatio struct {
	Homa     string  `json:"homa"` // homa-memif, homa-ring
	TCP      string  `json:"tcp"`  // tcp-loopback, tcp-veth
	Size     int     `json:"size_bytes"`
	Gbps     float64 `json:"homa_over_tcp_gbps"`         // above 1: Homa moves more
	CPUPerGB float64 `json:"homa_over_tcp_cpu_s_per_gb"` // above 1: Homa spends more CPU per GB
}

// throughputMethod is how cfg measures.
func throughputMethod(cfg ThroughputConfig) string {
	var per []string
	for _, z := range cfg.Sizes {
		per = append(per, fmt.Sprintf("%s with a window of %d (%d warm-up messages)", SizeName(z.Size), z.Window, z.Warmup))
	}
	return `One stream of messages per size, MB meaning 10^6 bytes: ` + strings.Join(per, "; ") +
		` (--smoke: 1 MB alone); each message is answered with a 1-byte reply. The window of 64 MB messages is 2, ` +
		`what the daemon's worker regions hold (128 MiB of transmit arena and of receive pool each: demo/workers.yaml); ` +
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
		`Gbps and CPU seconds per GB over each TCP run's.`
}

const throughputDistortions = `The daemon's loop polls busily, so it burns a whole CPU whatever the load: ` +
	`Homa's CPU per GB counts that core in full (as a deployment's dedicated core would be), and the workers' ` +
	`thread spins too. Kernel TCP's softirq work is charged to whatever task the CPU was running, usually ` +
	`the harness's own threads, but time the kernel spends in its own threads (ksoftirqd) is not counted. ` +
	`Both Homa hosts (and on memif its copies) share one core, which bounds Homa's rate on this 2-vCPU machine; ` +
	LinkDistortions + ` TCP over loopback moves 64 KB segments without checksums or a wire. A concurrent ` +
	`build on the machine takes CPU from whichever side is running.`

// RunThroughput runs the throughput scenario.
func RunThroughput(cfg ThroughputConfig) (*ThroughputResult, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	res := &ThroughputResult{Method: throughputMethod(cfg), Distortions: throughputDistortions, Smoke: cfg.Smoke,
		Sizes: cfg.Sizes}
	if cfg.Testpmd != "" {
		res.Method += " " + TestpmdPathNote
	}
	dir, err := os.MkdirTemp("", "homa-perf-tput")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, link := range LinksFor(cfg.Links, cfg.Testpmd) {
		runs, loops, err := HomaStream(cfg, link, dir)
		res.Loops = append(res.Loops, loops...)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, runs...)
	}

	paths := []TCPPath{{name: "tcp-loopback", listen: "127.0.0.1:0"}}
	if cfg.Veth {
		cfg.Progress.Step("make the veth pair")
		veth, err := NewVethPair()
		if err != nil {
			res.Runs = append(res.Runs, ThroughputRun{Transport: "tcp-veth", Skipped: err.Error()})
		} else {
			defer veth.Remove()
			paths = append(paths, TCPPath{name: "tcp-veth", serverNS: veth.A, clientNS: veth.B, listen: veth.AddrA + ":0"})
		}
	}
	for _, p := range paths {
		runs, err := tcpStream(cfg, p)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, runs...)
	}
	res.Ratios = throughputRatios(res.Runs)
	cfg.Progress.Done()
	res.Print(cfg.Out)
	return res, nil
}

// HomaStream measures Homa's runs on link, a run per size: it starts
// the daemon with its hosts on link, streams each size and stops the
// daemon. The loops are the harness's and, once it was started, the
// daemon's.
func HomaStream(cfg ThroughputConfig, link, dir string) ([]ThroughputRun, []LoopStats, error) {
	name, logName := HomaSeries(link), cfg.Name
	if logName == "" {
		logName = "throughput"
	}
	if cfg.MTU != 0 && cfg.MTU != 1500 {
		name = HomaMTUSeries(link, cfg.MTU)
	}
	d, logPath, done, err := StartHomaDaemon(cfg.Self, cfg.Testpmd, link, dir, cfg.OutDir, logName, cfg.Progress, cfg.MTU)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	defer done() // after the daemon's Stop below
	var runs []ThroughputRun
	var loops []LoopStats
	err = OnPinnedThread(cfg.WorkerCPU, "", func() error {
		maxSize, inFlight := 0, 0
		for _, z := range cfg.Sizes {
			maxSize, inFlight = max(maxSize, z.Size), max(inFlight, z.Size*z.Window)
		}
		w, err := DialPair(d.Dir, maxSize, inFlight)
		if err != nil {
			return err
		}
		defer w.Close()
		wl := LoopStats{Loop: "harness workers on " + d.Link + " (both workers polled in turn, CPU 0; all sizes)", MaxGapFound: true}
		defer func() { loops = append(loops, wl) }()
		for _, z := range cfg.Sizes {
			cfg.Progress.Step(name + " " + SizeName(z.Size))
			run, err := homaStream(cfg, z, name, w, d, &wl)
			if err != nil {
				return fmt.Errorf("%s: %w", SizeName(z.Size), err)
			}
			if mtu := cmp.Or(cfg.MTU, HomaLinkMTU[link]); mtu != 1500 {
				run.MTU = mtu // the ring's jumbo frames too
			}
			runs = append(runs, run)
		}
		return nil
	})
	loop, stopErr := d.Stop()
	loops = append(loops, loop)
	if err != nil {
		return runs, loops, fmt.Errorf("%s: %w (daemon log: %s)", name, err, logPath)
	}
	if stopErr != nil {
		return runs, loops, fmt.Errorf("%s: %w (daemon log: %s)", name, stopErr, logPath)
	}
	return runs, loops, nil
}

// ThroughputSteps is the number of progress steps of RunThroughput: each
// link's daemon and sizes, TCP loopback's sizes, the veth pair and TCP
// veth's sizes, and testpmd.
func ThroughputSteps(cfg ThroughputConfig) int {
	n := len(LinksFor(cfg.Links, cfg.Testpmd))*(1+len(cfg.Sizes)) + len(cfg.Sizes)
	if cfg.Veth {
		n += 1 + len(cfg.Sizes)
	}
	if cfg.Testpmd != "" {
		n++
	}
	return n
}

// Window accounts a measuring Window: wall time and CPU.
type Window struct {
	t0       time.Time
	self0    time.Duration
	daemon0  time.Duration
	d        *Daemon
	messages int64
}

func StartWindow(d *Daemon) (*Window, error) {
	w := &Window{d: d, t0: time.Now(), self0: CPUSelf()}
	if d != nil {
		var err error
		if w.daemon0, err = d.CPU(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *Window) End(name string, z ThroughputSize) (ThroughputRun, error) {
	el := time.Since(w.t0)
	r := ThroughputRun{Transport: name, Size: z.Size, Window: z.Window, Messages: w.messages, Seconds: el.Seconds(),
		HarnessCPU: (CPUSelf() - w.self0).Seconds()}
	if w.d != nil {
		c, err := w.d.CPU()
		if err != nil {
			return r, err
		}
		r.DaemonCPU = (c - w.daemon0).Seconds()
	}
	bytes := float64(w.messages) * float64(z.Size)
	r.Gbps = bytes * 8 / el.Seconds() / 1e9
	if bytes > 0 {
		r.CPUPerGB = (r.HarnessCPU + r.DaemonCPU) / (bytes / 1e9)
	}
	return r, nil
}

// homaStream streams messages of z's size from the client worker to the
// server worker, both polled in turn on this goroutine: the run name. It
// adds its passes and gaps to loop.
func homaStream(cfg ThroughputConfig, z ThroughputSize, name string, w *WorkerPair, d *Daemon, loop *LoopStats) (ThroughputRun, error) {
	var last time.Time
	msg := Payload(z.Size)
	ack := []byte{1}
	outstanding := 0
	var done int64
	var win *Window
	var result *ThroughputRun // the window's figures, taken at its deadline
	deadline := time.Time{}
	stall := time.Now()
	for {
		if win == nil && done >= int64(z.Warmup) {
			var err error
			if win, err = StartWindow(d); err != nil {
				return ThroughputRun{}, err
			}
			deadline = win.t0.Add(cfg.Duration)
		}
		now := time.Now()
		if !last.IsZero() {
			loop.MaxGapUs = max(loop.MaxGapUs, float64(now.Sub(last).Nanoseconds())/1e3)
		}
		last = now
		loop.Passes++
		sending := win == nil || now.Before(deadline)
		if !sending && result == nil {
			r, err := win.End(name, z)
			if err != nil {
				return r, err
			}
			result = &r
		}
		if !sending && outstanding == 0 {
			break
		}
		for sending && outstanding < z.Window {
			if _, err := w.cli.Send(w.dst, msg); err != nil {
				return ThroughputRun{}, fmt.Errorf("send: %w", err)
			}
			outstanding++
		}
		progressed := false
		if req, err := w.srv.Receive(0); err == nil {
			if req.Err != nil || !req.Request || len(req.Data) != z.Size {
				return ThroughputRun{}, fmt.Errorf("server worker received %d bytes (err %v, request %v)", len(req.Data), req.Err, req.Request)
			}
			err = w.srv.Reply(req, ack)
			req.Release()
			if err != nil {
				return ThroughputRun{}, fmt.Errorf("reply: %w", err)
			}
			progressed = true
		} else if err != client.ErrWaitTimeout {
			return ThroughputRun{}, err
		}
		if resp, err := w.cli.Receive(0); err == nil {
			if resp.Err != nil {
				return ThroughputRun{}, fmt.Errorf("RPC: %w", resp.Err)
			}
			resp.Release()
			outstanding--
			done++
			if win != nil && sending {
				win.messages++
			}
			progressed = true
			if win != nil {
				cfg.Progress.Set(float64(time.Since(win.t0)) / float64(cfg.Duration))
			}
		} else if err != client.ErrWaitTimeout {
			return ThroughputRun{}, err
		}
		if progressed {
			stall = time.Now()
		} else if time.Since(stall) > 10*time.Second {
			return ThroughputRun{}, fmt.Errorf("no progress for 10 s with %d messages outstanding", outstanding)
		}
	}
	// The messages outstanding at the deadline are drained, not counted.
	return *result, nil
}

// tcpStream streams messages over kernel TCP along path p, a run per
// size, all on one connection.
func tcpStream(cfg ThroughputConfig, p TCPPath) ([]ThroughputRun, error) {
	srv, err := StartTCPServer(p.serverNS, p.listen)
	if err != nil {
		return nil, err
	}
	var runs []ThroughputRun
	err = func() error {
		c, err := TCPDial(p.clientNS, srv.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		for _, z := range cfg.Sizes {
			cfg.Progress.Step(p.name + " " + SizeName(z.Size))
			r, err := tcpStreamSize(cfg, z, p.name, c)
			if err != nil {
				return fmt.Errorf("%s %s: %w", p.name, SizeName(z.Size), err)
			}
			runs = append(runs, r)
		}
		return nil
	}()
	if cerr := srv.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return runs, err
}

// tcpStreamSize streams messages of z's size on c: the run name.
func tcpStreamSize(cfg ThroughputConfig, z ThroughputSize, name string, c *net.TCPConn) (ThroughputRun, error) {
	msg := TCPMessage(z.Size, true)
	ack := make([]byte, 1)
	outstanding := 0
	var done int64
	var win *Window
	var result *ThroughputRun
	deadline := time.Time{}
	for {
		if win == nil && done >= int64(z.Warmup) {
			win, _ = StartWindow(nil)
			deadline = win.t0.Add(cfg.Duration)
		}
		sending := win == nil || time.Now().Before(deadline)
		if !sending && result == nil {
			r, err := win.End(name, z)
			if err != nil {
				return r, err
			}
			result = &r
		}
		if !sending && outstanding == 0 {
			break
		}
		if sending && outstanding < z.Window {
			if _, err := c.Write(msg); err != nil {
				return ThroughputRun{}, err
			}
			outstanding++
			continue
		}
		if _, err := c.Read(ack); err != nil {
			return ThroughputRun{}, err
		}
		outstanding--
		done++
		if win != nil && sending {
			win.messages++
			cfg.Progress.Set(float64(time.Since(win.t0)) / float64(cfg.Duration))
		}
	}
	return *result, nil
}

// runSizes are the sizes of the runs, in the order they first appear.
func runSizes(runs []ThroughputRun) []int {
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
func (r *ThroughputResult) Table() Table {
	t := Table{Header: []string{"size", "transport", "window", "Gbps", "CPU s/GB", "harness CPU s", "daemon CPU s", "messages", "seconds"}}
	for _, size := range runSizes(r.Runs) {
		for _, x := range r.Runs {
			if x.Skipped != "" || x.Size != size {
				continue
			}
			t.Rows = append(t.Rows, []string{SizeName(x.Size), x.Transport, fmt.Sprint(x.Window), fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB),
				fmt.Sprintf("%.2f", x.HarnessCPU), fmt.Sprintf("%.2f", x.DaemonCPU), fmt.Sprint(x.Messages), fmt.Sprintf("%.2f", x.Seconds)})
		}
	}
	return t
}

// throughputRatios are, per size, each Homa run's figures over each TCP
// run's (none where either is skipped or has a zero figure).
func throughputRatios(runs []ThroughputRun) []ThroughputRatio {
	var out []ThroughputRatio
	for _, size := range runSizes(runs) {
		for _, h := range runs {
			if !IsHoma(h.Transport) || h.Skipped != "" || h.Size != size {
				continue
			}
			for _, x := range runs {
				if IsHoma(x.Transport) || x.Skipped != "" || x.Size != size || x.Gbps == 0 || x.CPUPerGB == 0 {
					continue
				}
				out = append(out, ThroughputRatio{Homa: h.Transport, TCP: x.Transport, Size: size,
					Gbps: h.Gbps / x.Gbps, CPUPerGB: h.CPUPerGB / x.CPUPerGB})
			}
		}
	}
	return out
}

// RatioTable is the ratios as rows: size, Homa run / TCP run, Gbps, CPU s
// per GB.
func (r *ThroughputResult) RatioTable() Table {
	t := Table{Header: []string{"size", "Homa / TCP", "Gbps", "CPU s per GB"}}
	for _, x := range r.Ratios {
		t.Rows = append(t.Rows, []string{SizeName(x.Size), x.Homa + " / " + x.TCP, fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB)})
	}
	return t
}

const throughputRatiosNote = "Ratios are Homa over TCP at the same size: Gbps above 1, Homa moves more; CPU s per GB above 1, Homa spends more CPU per GB."

// sizesText is the result's sizes and windows: "1 MB (4 outstanding), 64
// MB (2 outstanding)".
func (r *ThroughputResult) sizesText() string {
	var parts []string
	for _, z := range r.Sizes {
		parts = append(parts, fmt.Sprintf("%s (%d outstanding)", SizeName(z.Size), z.Window))
	}
	return strings.Join(parts, ", ")
}

// Print writes the tables, skips and loop statistics.
func (r *ThroughputResult) Print(w io.Writer) {
	fmt.Fprintf(w, "throughput: %s messages, 1-byte replies\n", r.sizesText())
	r.Table().Text(w)
	fmt.Fprintln(w, throughputRatiosNote)
	r.RatioTable().Text(w)
	for _, x := range r.Runs {
		if x.Skipped != "" {
			fmt.Fprintf(w, "%s skipped: %s\n", x.Transport, x.Skipped)
		}
	}
	PrintLoops(w, r.Loops)
}
