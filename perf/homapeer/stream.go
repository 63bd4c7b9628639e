package homapeer

import (
	"cmp"
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// StreamConfig configures Homa's streams on a link (HomaStream): the
// throughput scenario's, and the floor scenario's beside its link.
type StreamConfig struct {
	Self      string
	Sizes     []perf.StreamSize // measured in turn, each on every transport
	Duration  time.Duration     // measuring time per size and transport
	WorkerCPU int               // CPU of the Homa workers' thread (the daemon's polling loop is on lcore 1)
	OutDir    string
	Progress  *perf.Progress
	// Testpmd, when set, is the dpdk-testpmd program: Homa's hosts are then
	// joined through it (the testpmd-path scenario).
	Testpmd string
	// MTU is the daemon's ports' IP MTU (demo --mtu; 0: its 1500); the
	// runs are then named HomaSeries(link) + "-mtu" + MTU (HomaMTUSeries).
	MTU   int
	Smoke bool
	// Name prefixes the daemon's log file (Name-LINK-daemon.log; "":
	// throughput).
	Name string
	// DaemonArgs are more arguments for the daemon (demo --workers), e.g.
	// --copier-cpu.
	DaemonArgs []string
}

// HomaStream measures Homa's runs on link, a run per size: it starts
// the daemon with its hosts on link, streams each size and stops the
// daemon. The loops are the harness's and, once it was started, the
// daemon's.
func HomaStream(cfg StreamConfig, link, dir string) ([]perf.StreamRun, []perf.LoopStats, error) {
	name, logName := perf.HomaSeries(link), cfg.Name
	if logName == "" {
		logName = "throughput"
	}
	if cfg.MTU != 0 && cfg.MTU != 1500 {
		name = perf.HomaMTUSeries(link, cfg.MTU)
	}
	// Its metrics endpoint gives the sending host's copied and zero-copy
	// bytes of each size (sendReading).
	metrics, err := FreeLoopbackPort()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	env := []string{"HOMA_METRICS_ADDRESS=" + metrics}
	d, _, done, err := startHomaDaemon(cfg.Self, cfg.Testpmd, link, dir, cfg.OutDir, logName, cfg.Progress, cfg.MTU, env, cfg.DaemonArgs...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	d.Metrics = metrics
	defer done() // after the daemon's Stop below
	var runs []perf.StreamRun
	var loops []perf.LoopStats
	loop, err := d.Pinned(cfg.WorkerCPU, func() error {
		maxSize, inFlight := 0, 0
		for _, z := range cfg.Sizes {
			maxSize, inFlight = max(maxSize, z.Size), max(inFlight, z.Size*z.Window)
		}
		w, err := DialPair(d.Dir, maxSize, inFlight)
		if err != nil {
			return err
		}
		defer w.Close()
		wl := perf.LoopStats{Loop: "harness workers on " + d.Link + " (both workers polled in turn, CPU 0; all sizes)", MaxGapFound: true}
		defer func() { loops = append(loops, wl) }()
		send := sendReading{d: d}
		send.read()
		for _, z := range cfg.Sizes {
			cfg.Progress.Step(name + " " + perf.SizeName(z.Size))
			run, err := homaStream(cfg, z, name, w, d, &wl)
			if err != nil {
				return fmt.Errorf("%s: %w", perf.SizeName(z.Size), err)
			}
			run.Send, run.SendUnread = send.next()
			if mtu := cmp.Or(cfg.MTU, perf.HomaLinkMTU[link]); mtu != 1500 {
				run.MTU = mtu // the ring's jumbo frames too
			}
			runs = append(runs, run)
		}
		return nil
	})
	loops = append(loops, loop)
	if err != nil {
		return runs, loops, fmt.Errorf("%s: %w", name, err)
	}
	return runs, loops, nil
}

// sendReading is the last reading of a daemon's send counters, between
// a stream's sizes: the counters of each size are the next reading less
// the last. A failed reading leaves the sizes on either side of it
// without counters; it is not the stream's error.
type sendReading struct {
	d    *Daemon
	last perf.SendBytes
	err  error // why last is no reading
}

// read takes a reading (after MetricsSettle) as the last.
func (s *sendReading) read() { s.last, s.err = s.d.SendBytes() }

// next reads the counters and returns what the sending host sent since
// the last reading, or why there is no figure.
func (s *sendReading) next() (*perf.SendBytes, string) {
	before, beforeErr := s.last, s.err
	s.read()
	switch {
	case beforeErr != nil:
		return nil, beforeErr.Error()
	case s.err != nil:
		return nil, s.err.Error()
	}
	b := s.last.Sub(before)
	return &b, ""
}

// Window accounts a measuring Window: wall time and CPU.
type Window struct {
	Start    time.Time
	self0    time.Duration
	daemon0  time.Duration
	d        *Daemon
	Messages int64
}

func StartWindow(d *Daemon) (*Window, error) {
	w := &Window{d: d, Start: time.Now(), self0: perf.CPUSelf()}
	if d != nil {
		var err error
		if w.daemon0, err = d.CPU(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *Window) End(name string, z perf.StreamSize) (perf.StreamRun, error) {
	el, harness, daemon, err := w.Elapsed()
	r := perf.StreamRun{Transport: name, Size: z.Size, Window: z.Window, Messages: w.Messages, Seconds: el.Seconds(),
		HarnessCPU: harness, DaemonCPU: daemon}
	if err != nil {
		return r, err
	}
	bytes := float64(w.Messages) * float64(z.Size)
	r.Gbps = bytes * 8 / el.Seconds() / 1e9
	if bytes > 0 {
		r.CPUPerGB = (r.HarnessCPU + r.DaemonCPU) / (bytes / 1e9)
	}
	return r, nil
}

// Elapsed is the window's wall time so far and the CPU seconds of this
// process and of the daemon (none without one) in it.
func (w *Window) Elapsed() (wall time.Duration, harnessCPU, daemonCPU float64, err error) {
	wall, harnessCPU = time.Since(w.Start), (perf.CPUSelf() - w.self0).Seconds()
	if w.d != nil {
		c, err := w.d.CPU()
		if err != nil {
			return wall, harnessCPU, 0, err
		}
		daemonCPU = (c - w.daemon0).Seconds()
	}
	return wall, harnessCPU, daemonCPU, nil
}

// homaStream streams messages of z's size from the client worker to the
// server worker, both polled in turn on this goroutine: the run name. It
// adds its passes and gaps to loop.
func homaStream(cfg StreamConfig, z perf.StreamSize, name string, w *WorkerPair, d *Daemon, loop *perf.LoopStats) (perf.StreamRun, error) {
	var last time.Time
	msg := perf.Payload(z.Size)
	ack := []byte{1}
	outstanding := 0
	m := NewMeter(name, z, cfg.Duration, d, cfg.Progress)
	stall := time.Now()
	for {
		now := time.Now()
		if !last.IsZero() {
			loop.MaxGapUs = max(loop.MaxGapUs, float64(now.Sub(last).Nanoseconds())/1e3)
		}
		last = now
		loop.Passes++
		sending, over, err := m.Step(now, outstanding)
		if err != nil {
			return perf.StreamRun{}, err
		}
		if over {
			break
		}
		for sending && outstanding < z.Window {
			if _, err := w.Client.Send(w.Dst, msg); err != nil {
				return perf.StreamRun{}, fmt.Errorf("send: %w", err)
			}
			outstanding++
		}
		progressed := false
		if req, err := w.Server.Receive(0); err == nil {
			if req.Err != nil || !req.Request || len(req.Data) != z.Size {
				return perf.StreamRun{}, fmt.Errorf("server worker received %d bytes (err %v, request %v)", len(req.Data), req.Err, req.Request)
			}
			err = w.Server.Reply(req, ack)
			req.Release()
			if err != nil {
				return perf.StreamRun{}, fmt.Errorf("reply: %w", err)
			}
			progressed = true
		} else if err != client.ErrWaitTimeout {
			return perf.StreamRun{}, err
		}
		if resp, err := w.Client.Receive(0); err == nil {
			if resp.Err != nil {
				return perf.StreamRun{}, fmt.Errorf("RPC: %w", resp.Err)
			}
			resp.Release()
			outstanding--
			m.Done(sending)
			progressed = true
		} else if err != client.ErrWaitTimeout {
			return perf.StreamRun{}, err
		}
		if progressed {
			stall = time.Now()
		} else if time.Since(stall) > 10*time.Second {
			return perf.StreamRun{}, fmt.Errorf("no progress for 10 s with %d messages outstanding", outstanding)
		}
	}
	// The messages outstanding at the deadline are drained, not counted.
	return m.Result(), nil
}

// Meter times a stream of messages of one size: after its warm-up
// messages are done, a window of the stream's duration counts the
// messages done in it; past the window it keeps the window's figures and
// ends the stream once nothing is outstanding. Homa's streams and kernel
// TCP's share it.
type Meter struct {
	name     string
	z        perf.StreamSize
	dur      time.Duration
	d        *Daemon // whose CPU the window counts (nil: none)
	prog     *perf.Progress
	win      *Window
	deadline time.Time
	done     int64
	result   *perf.StreamRun // the window's figures, taken at its deadline
}

// NewMeter meters a stream of z's messages, the run name, over dur.
func NewMeter(name string, z perf.StreamSize, dur time.Duration, d *Daemon, prog *perf.Progress) *Meter {
	return &Meter{name: name, z: z, dur: dur, d: d, prog: prog}
}

// Step says, at now with outstanding messages in flight, whether to go
// on sending, and whether the stream is over.
func (m *Meter) Step(now time.Time, outstanding int) (sending, over bool, err error) {
	if m.win == nil && m.done >= int64(m.z.Warmup) {
		if m.win, err = StartWindow(m.d); err != nil {
			return false, true, err
		}
		m.deadline = m.win.Start.Add(m.dur)
		now = m.win.Start
	}
	sending = m.win == nil || now.Before(m.deadline)
	if !sending && m.result == nil {
		r, err := m.win.End(m.name, m.z)
		if err != nil {
			return false, true, err
		}
		m.result = &r
	}
	return sending, !sending && outstanding == 0, nil
}

// Done counts a message answered in a pass where Step said sending.
func (m *Meter) Done(sending bool) {
	m.done++
	if m.win != nil && sending {
		m.win.Messages++
		m.prog.Set(float64(time.Since(m.win.Start)) / float64(m.dur))
	}
}

// Result is the window's figures, once the stream is over.
func (m *Meter) Result() perf.StreamRun { return *m.result }
