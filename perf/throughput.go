package perf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// ThroughputConfig configures the throughput scenario.
type ThroughputConfig struct {
	Self      string
	Size      int           // message bytes
	Window    int           // messages outstanding
	Duration  time.Duration // measuring time per transport
	Warmup    int           // messages before measuring
	WorkerCPU int           // CPU of the Homa workers' thread (the daemon's polling loop is on lcore 1)
	Veth      bool
	// Links are the links to measure Homa on, a run each (nil:
	// HomaLinks; through Testpmd, memif alone).
	Links    []string
	OutDir   string
	Progress *Progress
	// Testpmd, when set, is the dpdk-testpmd program: Homa's hosts are then
	// joined through it (the testpmd-path scenario, testpmdpath.go).
	Testpmd string
	Out     io.Writer
	Smoke   bool
}

// ThroughputConfigFor is the default configuration, or the --smoke one.
func ThroughputConfigFor(smoke bool) ThroughputConfig {
	c := ThroughputConfig{Size: 1_000_000, Window: 4, Duration: 10 * time.Second, Warmup: 50,
		WorkerCPU: 0, Veth: true, Out: os.Stdout}
	if smoke {
		c.Duration, c.Warmup, c.Smoke = time.Second, 5, true
	}
	return c
}

// ThroughputRun is one transport's figures. Homa's runs are named by
// link (homaSeries: homa-memif, homa-ring), kernel TCP's by path
// (tcp-loopback, tcp-veth).
type ThroughputRun struct {
	Transport string  `json:"transport"`
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
	Size        int               `json:"size_bytes"`
	Window      int               `json:"window"`
	Runs        []ThroughputRun   `json:"runs"`
	Ratios      []ThroughputRatio `json:"ratios"` // each Homa run over each TCP run
	Loops       []LoopStats       `json:"loops"`
}

// ThroughputRatio is a Homa run's figures over a TCP run's.
type ThroughputRatio struct {
	Homa     string  `json:"homa"`                       // homa-memif, homa-ring
	TCP      string  `json:"tcp"`                        // tcp-loopback, tcp-veth
	Gbps     float64 `json:"homa_over_tcp_gbps"`         // above 1: Homa moves more
	CPUPerGB float64 `json:"homa_over_tcp_cpu_s_per_gb"` // above 1: Homa spends more CPU per GB
}

const throughputMethod = `One stream of 1 MB messages, a window of 4 outstanding, each answered with a ` +
	`1-byte reply. Homa: the same daemon child process as rtt, once per link (two hosts on a net_memif pair, ` +
	`run homa-memif, then on a net_ring pair, run homa-ring, where the mbufs change hands with no copy in the ` +
	`link; one busy-polling loop on lcore 1); one goroutine pinned to CPU 0 drives the client worker (10.0.0.1) and ` +
	`the server worker (10.0.0.2), polling both completion rings in turn: it keeps 4 Sends outstanding, ` +
	`answers each received request with 1 byte and takes each response. Kernel TCP (TCP_NODELAY): the client ` +
	`goroutine writes 4-byte-length-prefixed 1 MB messages, up to 4 unacknowledged, the server goroutine ` +
	`reads each whole and writes 1 byte back (ordinary goroutines, not pinned, as in rtt); over loopback and ` +
	`across the veth pair between two namespaces. Gbps is payload bits ` +
	`(requests only) per second over the measuring window, after a warm-up. CPU seconds per GB: the ` +
	`harness process's user+system time (getrusage) plus, for Homa, the daemon process's utime+stime ` +
	`(/proc/PID/stat, 10 ms ticks), over the window, divided by the payload GB. Ratios are each Homa run's ` +
	`Gbps and CPU seconds per GB over each TCP run's.`

const throughputDistortions = `The daemon's loop polls busily, so it burns a whole CPU whatever the load: ` +
	`Homa's CPU per GB counts that core in full (as a deployment's dedicated core would be), and the workers' ` +
	`thread spins too. Kernel TCP's softirq work is charged to whatever task the CPU was running, usually ` +
	`the harness's own threads, but time the kernel spends in its own threads (ksoftirqd) is not counted. ` +
	`Both Homa hosts (and on memif its copies) share one core, which bounds Homa's rate on this 2-vCPU machine; ` +
	linkDistortions + ` TCP over loopback moves 64 KB segments without checksums or a wire. A concurrent ` +
	`build on the machine takes CPU from whichever side is running.`

// RunThroughput runs the throughput scenario.
func RunThroughput(cfg ThroughputConfig) (*ThroughputResult, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	res := &ThroughputResult{Method: throughputMethod, Distortions: throughputDistortions, Smoke: cfg.Smoke,
		Size: cfg.Size, Window: cfg.Window}
	if cfg.Testpmd != "" {
		res.Method += " " + TestpmdPathNote
	}
	dir, err := os.MkdirTemp("", "homa-perf-tput")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, link := range homaLinks(cfg.Links, cfg.Testpmd) {
		run, loops, err := homaThroughput(cfg, link, dir)
		res.Loops = append(res.Loops, loops...)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}

	paths := []tcpPath{{name: "tcp-loopback", listen: "127.0.0.1:0"}}
	if cfg.Veth {
		cfg.Progress.Step("make the veth pair")
		veth, err := newVethPair()
		if err != nil {
			res.Runs = append(res.Runs, ThroughputRun{Transport: "tcp-veth", Skipped: err.Error()})
		} else {
			defer veth.remove()
			paths = append(paths, tcpPath{name: "tcp-veth", serverNS: veth.A, clientNS: veth.B, listen: veth.AddrA + ":0"})
		}
	}
	for _, p := range paths {
		cfg.Progress.Step(p.name)
		r, err := tcpStream(cfg, p)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, r)
	}
	res.Ratios = throughputRatios(res.Runs)
	cfg.Progress.Done()
	res.Print(cfg.Out)
	return res, nil
}

// homaThroughput measures Homa's run on link: it starts the daemon with
// its hosts on link, streams and stops the daemon. The loops are the
// harness's and, once it was started, the daemon's.
func homaThroughput(cfg ThroughputConfig, link, dir string) (ThroughputRun, []LoopStats, error) {
	name := homaSeries(link)
	d, logPath, done, err := startHomaDaemon(cfg.Self, cfg.Testpmd, link, dir, cfg.OutDir, "throughput", cfg.Progress)
	if err != nil {
		return ThroughputRun{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	defer done() // after the daemon's Stop below
	var run ThroughputRun
	var loops []LoopStats
	cfg.Progress.Step(name)
	err = onPinnedThread(cfg.WorkerCPU, "", func() error {
		w, err := dialPair(d.Dir)
		if err != nil {
			return err
		}
		defer w.close()
		var wl LoopStats
		run, wl, err = homaStream(cfg, name, w, d)
		loops = append(loops, wl)
		return err
	})
	loop, stopErr := d.Stop()
	loops = append(loops, loop)
	if err != nil {
		return run, loops, fmt.Errorf("%s: %w (daemon log: %s)", name, err, logPath)
	}
	if stopErr != nil {
		return run, loops, fmt.Errorf("%s: %w (daemon log: %s)", name, stopErr, logPath)
	}
	return run, loops, nil
}

// ThroughputSteps is the number of progress steps of RunThroughput.
func ThroughputSteps(cfg ThroughputConfig) int {
	n := 2*len(homaLinks(cfg.Links, cfg.Testpmd)) + 1 // each link's daemon and run, TCP loopback
	if cfg.Veth {
		n += 2 // the veth pair, TCP veth
	}
	if cfg.Testpmd != "" {
		n++
	}
	return n
}

// window accounts a measuring window: wall time and CPU.
type window struct {
	t0       time.Time
	self0    time.Duration
	daemon0  time.Duration
	d        *Daemon
	messages int64
}

func startWindow(d *Daemon) (*window, error) {
	w := &window{d: d, t0: time.Now(), self0: cpuSelf()}
	if d != nil {
		var err error
		if w.daemon0, err = d.CPU(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *window) end(name string, size int) (ThroughputRun, error) {
	el := time.Since(w.t0)
	r := ThroughputRun{Transport: name, Messages: w.messages, Seconds: el.Seconds(),
		HarnessCPU: (cpuSelf() - w.self0).Seconds()}
	if w.d != nil {
		c, err := w.d.CPU()
		if err != nil {
			return r, err
		}
		r.DaemonCPU = (c - w.daemon0).Seconds()
	}
	bytes := float64(w.messages) * float64(size)
	r.Gbps = bytes * 8 / el.Seconds() / 1e9
	if bytes > 0 {
		r.CPUPerGB = (r.HarnessCPU + r.DaemonCPU) / (bytes / 1e9)
	}
	return r, nil
}

// homaStream streams messages from the client worker to the server
// worker, both polled in turn on this goroutine: the run name.
func homaStream(cfg ThroughputConfig, name string, w *workerPair, d *Daemon) (ThroughputRun, LoopStats, error) {
	loop := LoopStats{Loop: "harness workers on " + d.Link + " (both workers polled in turn, CPU 0)", MaxGapFound: true}
	var last time.Time
	run, err := func() (ThroughputRun, error) {
		msg := payload(cfg.Size)
		ack := []byte{1}
		outstanding := 0
		var done int64
		var win *window
		var result *ThroughputRun // the window's figures, taken at its deadline
		deadline := time.Time{}
		stall := time.Now()
		for {
			if win == nil && done >= int64(cfg.Warmup) {
				var err error
				if win, err = startWindow(d); err != nil {
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
				r, err := win.end(name, cfg.Size)
				if err != nil {
					return r, err
				}
				result = &r
			}
			if !sending && outstanding == 0 {
				break
			}
			for sending && outstanding < cfg.Window {
				if _, err := w.cli.Send(w.dst, msg); err != nil {
					return ThroughputRun{}, fmt.Errorf("send: %w", err)
				}
				outstanding++
			}
			progressed := false
			if req, err := w.srv.Receive(0); err == nil {
				if req.Err != nil || !req.Request || len(req.Data) != cfg.Size {
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
				if win != nil && done%8 == 0 {
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
	}()
	return run, loop, err
}

// tcpStream streams messages over kernel TCP along path p.
func tcpStream(cfg ThroughputConfig, p tcpPath) (ThroughputRun, error) {
	srv, err := startTCPServer(p.serverNS, p.listen)
	if err != nil {
		return ThroughputRun{}, err
	}
	var run ThroughputRun
	err = func() error {
		c, err := tcpDial(p.clientNS, srv.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		msg := tcpMessage(cfg.Size, true)
		ack := make([]byte, 1)
		outstanding := 0
		var done int64
		var win *window
		var result *ThroughputRun
		deadline := time.Time{}
		for {
			if win == nil && done >= int64(cfg.Warmup) {
				win, _ = startWindow(nil)
				deadline = win.t0.Add(cfg.Duration)
			}
			sending := win == nil || time.Now().Before(deadline)
			if !sending && result == nil {
				r, err := win.end(p.name, cfg.Size)
				if err != nil {
					return err
				}
				result = &r
			}
			if !sending && outstanding == 0 {
				break
			}
			if sending && outstanding < cfg.Window {
				if _, err := c.Write(msg); err != nil {
					return err
				}
				outstanding++
				continue
			}
			if _, err := c.Read(ack); err != nil {
				return err
			}
			outstanding--
			done++
			if win != nil && sending {
				win.messages++
				if done%8 == 0 {
					cfg.Progress.Set(float64(time.Since(win.t0)) / float64(cfg.Duration))
				}
			}
		}
		run = *result
		return nil
	}()
	if cerr := srv.close(); err == nil && cerr != nil {
		err = cerr
	}
	return run, err
}

// Table is the result as rows.
func (r *ThroughputResult) Table() Table {
	t := Table{Header: []string{"transport", "Gbps", "CPU s/GB", "harness CPU s", "daemon CPU s", "messages", "seconds"}}
	for _, x := range r.Runs {
		if x.Skipped != "" {
			continue
		}
		t.Rows = append(t.Rows, []string{x.Transport, fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB),
			fmt.Sprintf("%.2f", x.HarnessCPU), fmt.Sprintf("%.2f", x.DaemonCPU), fmt.Sprint(x.Messages), fmt.Sprintf("%.2f", x.Seconds)})
	}
	return t
}

// throughputRatios are each Homa run's figures over each TCP run's (none
// where either is skipped or has a zero figure).
func throughputRatios(runs []ThroughputRun) []ThroughputRatio {
	var out []ThroughputRatio
	for _, h := range runs {
		if !isHoma(h.Transport) || h.Skipped != "" {
			continue
		}
		for _, x := range runs {
			if isHoma(x.Transport) || x.Skipped != "" || x.Gbps == 0 || x.CPUPerGB == 0 {
				continue
			}
			out = append(out, ThroughputRatio{Homa: h.Transport, TCP: x.Transport, Gbps: h.Gbps / x.Gbps, CPUPerGB: h.CPUPerGB / x.CPUPerGB})
		}
	}
	return out
}

// RatioTable is the ratios as rows: Homa run / TCP run, Gbps, CPU s per GB.
func (r *ThroughputResult) RatioTable() Table {
	t := Table{Header: []string{"Homa / TCP", "Gbps", "CPU s per GB"}}
	for _, x := range r.Ratios {
		t.Rows = append(t.Rows, []string{x.Homa + " / " + x.TCP, fmt.Sprintf("%.2f", x.Gbps), fmt.Sprintf("%.2f", x.CPUPerGB)})
	}
	return t
}

const throughputRatiosNote = "Ratios are Homa over TCP: Gbps above 1, Homa moves more; CPU s per GB above 1, Homa spends more CPU per GB."

// Print writes the tables, skips and loop statistics.
func (r *ThroughputResult) Print(w io.Writer) {
	fmt.Fprintf(w, "throughput: %s messages, %d outstanding, 1-byte replies\n", sizeName(r.Size), r.Window)
	r.Table().Text(w)
	fmt.Fprintln(w, throughputRatiosNote)
	r.RatioTable().Text(w)
	for _, x := range r.Runs {
		if x.Skipped != "" {
			fmt.Fprintf(w, "%s skipped: %s\n", x.Transport, x.Skipped)
		}
	}
	printLoops(w, r.Loops)
}

// Section is the result for the report.
func (r *ThroughputResult) Section(images []string) Section {
	s := Section{Name: "throughput", Title: "throughput: 1 MB messages, Homa workers vs kernel TCP", Method: r.Method,
		Distortions: r.Distortions, Tables: []Table{r.Table(), r.RatioTable()}, Images: images}
	s.Notes = append(s.Notes, throughputRatiosNote)
	var names []string
	for _, x := range r.Runs {
		names = append(names, x.Transport)
	}
	s.Notes = append(s.Notes, linkNotes(names)...)
	for _, x := range r.Runs {
		if x.Skipped != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s skipped: %s", x.Transport, x.Skipped))
		}
	}
	s.Notes = append(s.Notes, loopNotes(r.Loops)...)
	if r.Smoke {
		s.Notes = append(s.Notes, "Smoke run: one second per transport, the figures mean little.")
	}
	return s
}

// WriteFiles writes throughput.json and the plots into dir and returns
// the plots' names.
func (r *ThroughputResult) WriteFiles(dir string) ([]string, error) {
	if err := WriteJSON(filepath.Join(dir, "throughput.json"), r); err != nil {
		return nil, err
	}
	var labels []string
	var gbps, cpu []float64
	for _, x := range r.Runs {
		if x.Skipped == "" {
			labels, gbps, cpu = append(labels, x.Transport), append(gbps, x.Gbps), append(cpu, x.CPUPerGB)
		}
	}
	if err := plotBars("Throughput, 1 MB messages, 4 outstanding", "Gbps (payload)", labels, gbps, filepath.Join(dir, "throughput-gbps.png")); err != nil {
		return nil, err
	}
	if err := plotBars("CPU per GB of payload", "CPU seconds per GB", labels, cpu, filepath.Join(dir, "throughput-cpu.png")); err != nil {
		return nil, err
	}
	return []string{"throughput-gbps.png", "throughput-cpu.png"}, nil
}
