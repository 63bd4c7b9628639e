package rate

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
)

// The rate scenario's coordinator: it starts the daemons, runs the
// workers' phases, opens and closes the measuring windows and reads the
// daemon's CPU, memory and counters between them.

// runSet runs goroutines and collects their ends.
type runSet struct {
	errc chan error
	left int
	err  error // the first one's error
}

func newRunSet(n int) *runSet { return &runSet{errc: make(chan error, n)} }

// spawn runs f on a goroutine of its own.
func (s *runSet) spawn(f func() error) {
	s.left++
	go func() { s.errc <- f() }()
}

// spawnWorkers runs f for each worker on a goroutine of its own.
func spawnWorkers(ws []*rateWorker, f func(i int, w *rateWorker) error) *runSet {
	s := newRunSet(len(ws))
	for i, w := range ws {
		s.spawn(func() error { return f(i, w) })
	}
	return s
}

func (s *runSet) took(err error) {
	s.left--
	if err != nil && s.err == nil {
		s.err = err
	}
}

// failed takes the ends that have come, without waiting, and returns the
// first error among them.
func (s *runSet) failed() error {
	for s.left > 0 {
		select {
		case err := <-s.errc:
			s.took(err)
		default:
			return s.err
		}
	}
	return s.err
}

// wait takes every end, for at most workerEndWait (then errWorkersStuck).
func (s *runSet) wait() error {
	deadline := time.After(workerEndWait)
	for s.left > 0 {
		select {
		case err := <-s.errc:
			s.took(err)
		case <-deadline:
			return errors.Join(s.err, fmt.Errorf("%w: %d still running %v after they were told to stop", errWorkersStuck, s.left, workerEndWait))
		}
	}
	return s.err
}

// sleepWatching sleeps for d, returning early with failed's error;
// progress is told the fraction done every 50 ms.
func sleepWatching(d time.Duration, failed func() error, progress func(float64)) error {
	t0 := time.Now()
	for {
		if err := failed(); err != nil {
			return err
		}
		el := time.Since(t0)
		if el >= d {
			return nil
		}
		if progress != nil {
			progress(float64(el) / float64(d))
		}
		time.Sleep(min(50*time.Millisecond, d-el))
	}
}

// rateWindow lets the RPCs run for cfg.Warmup, then measures for
// cfg.Duration: the RPCs done() counts, wall time and CPU (the
// harness's and, with d, the daemon's). pre runs between the two,
// outside the window. It returns early with the error of a goroutine of
// s that failed.
func rateWindow(cfg Config, name string, d *homapeer.Daemon, done func() int64, s *runSet, pre func() error) (Run, error) {
	run := Run{Transport: name}
	total := cfg.Warmup + cfg.Duration
	if err := sleepWatching(cfg.Warmup, s.failed, func(f float64) { cfg.Progress.Set(f * float64(cfg.Warmup) / float64(total)) }); err != nil {
		return run, err
	}
	if pre != nil {
		if err := pre(); err != nil {
			return run, err
		}
	}
	w, err := homapeer.StartWindow(d)
	if err != nil {
		return run, err
	}
	n0 := done()
	warm := float64(cfg.Warmup) / float64(total)
	if err := sleepWatching(cfg.Duration, s.failed, func(f float64) { cfg.Progress.Set(warm + f*(1-warm)) }); err != nil {
		return run, err
	}
	run.RPCs = done() - n0
	el, harness, daemon, err := w.Elapsed()
	run.Seconds, run.HarnessCPU, run.DaemonCPU = el.Seconds(), harness, daemon
	if err != nil {
		return run, err
	}
	run.RPCsPerSec = float64(run.RPCs) / el.Seconds()
	if run.RPCs > 0 {
		run.CPUPerM = (run.HarnessCPU + run.DaemonCPU) / (float64(run.RPCs) / 1e6)
	}
	return run, nil
}

// doneSum is the RPCs the workers have completed in echo phases.
func doneSum(ws []*rateWorker) func() int64 {
	return func() int64 {
		var n int64
		for _, w := range ws {
			n += w.done.Load()
		}
		return n
	}
}

// homaRateWindow runs the workers' echo and measures it, with the
// daemon's refusals over the whole of it (warm-up and drain included).
func homaRateWindow(cfg Config, name string, d *homapeer.Daemon, ws []*rateWorker, m *daemonMetrics) (Run, error) {
	c := &rateCtl{}
	s := spawnWorkers(ws, func(_ int, w *rateWorker) error { return w.echo(cfg.PerWorker, c) })
	run, err := rateWindow(cfg, name, d, doneSum(ws), s, nil)
	c.stop.Store(true)
	if werr := s.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return run, err
	}
	run.Refusals, err = m.refusalsSince()
	return run, err
}

// echoFor runs the workers' echo for d, unmeasured (a warm-up).
func echoFor(cfg Config, ws []*rateWorker, d time.Duration) error {
	c := &rateCtl{}
	s := spawnWorkers(ws, func(_ int, w *rateWorker) error { return w.echo(cfg.PerWorker, c) })
	err := sleepWatching(d, s.failed, nil)
	c.stop.Store(true)
	return errors.Join(err, s.wait())
}

// holdRPCs has the workers hold cfg.Held RPCs outstanding at once, each
// its heldShare: it waits until the server sessions hold them all, or
// until every worker has sent or been refused and no more have come for
// holdQuiet (the daemon's bounds stopped the rest), or cfg.HeldTimeout;
// then it calls at (nil: nothing) with the number held, has every held
// request answered, and waits until the RPCs have ended. Refusals are
// the daemon's since m's last reading.
func holdRPCs(cfg Config, ws []*rateWorker, m *daemonMetrics, at func(held int)) (HoldResult, error) {
	res := HoldResult{Asked: cfg.Held}
	c := &rateCtl{}
	c.sending.Store(int64(len(ws)))
	parts := make([]holdWorker, len(ws))
	t0 := time.Now()
	s := spawnWorkers(ws, func(i int, w *rateWorker) error {
		return w.hold(heldShare(cfg.Held, len(ws), i), c, &parts[i])
	})
	lastHeld, lastChange := int64(-1), t0
	for {
		if err := s.failed(); err != nil {
			c.release.Store(true)
			return res, errors.Join(err, s.wait())
		}
		h, now := c.held.Load(), time.Now()
		if h >= int64(cfg.Held) {
			res.Reached = true
			break
		}
		if h != lastHeld {
			lastHeld, lastChange = h, now
		}
		if c.sending.Load() == 0 && now.Sub(lastChange) > holdQuiet || now.Sub(t0) > cfg.HeldTimeout {
			break
		}
		cfg.Progress.Set(0.9 * float64(h) / float64(cfg.Held))
		time.Sleep(200 * time.Microsecond)
	}
	res.Held = int(c.held.Load())
	if at != nil {
		at(res.Held)
	}
	res.HoldSeconds = time.Since(t0).Seconds()
	c.release.Store(true)
	if err := s.wait(); err != nil {
		return res, err
	}
	for _, p := range parts {
		res.Accepted += p.accepted
		res.Completed += p.completed
		res.Failed += p.failed
		res.RepliesRefused += p.repliesRefused
		if p.refusal != nil {
			if res.RefusedSends++; res.RefusalError == "" {
				res.RefusalError = p.refusal.Error()
			}
		}
	}
	var err error
	res.Refusals, err = m.refusalsSince()
	return res, err
}

// outstandingGauges reads the daemon's outstanding_rpcs gauge of both
// hosts until both show held (the loop publishes it every 100 ms) or 300
// ms have passed.
func outstandingGauges(metrics string, held int) map[string]float64 {
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		s, err := homapeer.ScrapeMetrics(metrics)
		if err != nil {
			return nil
		}
		g := map[string]float64{}
		for _, h := range []string{"10.0.0.1", "10.0.0.2"} {
			g[h] = gauge(s, "homa_worker_outstanding_rpcs", h)
		}
		if g["10.0.0.1"] >= float64(held) && g["10.0.0.2"] >= float64(held) || time.Now().After(deadline) {
			return g
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// withRateDaemon starts the daemon on link (the demo's config, with env
// over it and its metrics endpoint on), attaches the workers, runs f,
// then detaches them and stops the daemon, whose loop statistics it
// adds to loops. raised names the second daemon of a link ("": the
// demo's config).
func withRateDaemon(cfg Config, link, dir, raised string, env []string, loops *[]perf.LoopStats,
	f func(d *homapeer.Daemon, ws []*rateWorker, m *daemonMetrics) error) error {
	name, suffix, what := perf.HomaSeries(link), "", ""
	if raised != "" {
		suffix, what = "-raised", " ("+raised+")"
	}
	cfg.Progress.Step("start the daemon on " + link + what)
	metrics, err := homapeer.FreeLoopbackPort()
	if err != nil {
		return err
	}
	env = append(env, "HOMA_METRICS_ADDRESS="+metrics)
	logPath := filepath.Join(cfg.OutDir, "rate-"+link+suffix+"-daemon.log")
	d, err := homapeer.StartDaemonEnv(cfg.Self, filepath.Join(dir, link+suffix), logPath, env, homapeer.LinkArgs(link, 0)...)
	if err != nil {
		return fmt.Errorf("%s%s: %w", name, what, err)
	}
	d.Link = link + what
	ws, err := dialRateWorkers(d.Dir, cfg)
	if err == nil {
		m := &daemonMetrics{addr: metrics}
		var undo func()
		if m.last, err = homapeer.ScrapeMetrics(metrics); err == nil { // nothing has run yet
			if undo, err = confine(cfg.WorkerCPU); err == nil {
				err = f(d, ws, m)
				undo()
			}
		}
		if !errors.Is(err, errWorkersStuck) { // else their sessions are in use: left to the process's end
			closeRateWorkers(ws)
		}
	}
	loop, stopErr := d.Stop()
	*loops = append(*loops, loop)
	if err = errors.Join(err, stopErr); err != nil {
		return fmt.Errorf("%s%s: %w (daemon log: %s)", name, what, err, logPath)
	}
	return nil
}

// homaRate measures Homa on link: the rate window and the attempt to
// hold cfg.Held RPCs with the demo's config on one daemon, then the
// memory run with its bounds and timers raised on a second.
func homaRate(cfg Config, link, dir string) (Run, Memory, []perf.LoopStats, error) {
	name := perf.HomaSeries(link)
	run, mem := Run{Transport: name}, Memory{Transport: name}
	var loops []perf.LoopStats
	held := fmt.Sprintf("%d outstanding", cfg.Held)
	err := withRateDaemon(cfg, link, dir, "", nil, &loops, func(d *homapeer.Daemon, ws []*rateWorker, m *daemonMetrics) error {
		cfg.Progress.Step(name + " rate")
		var err error
		if run, err = homaRateWindow(cfg, name, d, ws, m); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		cfg.Progress.Step(name + " " + held + ", the demo's config")
		if mem.DemoConfig, err = holdRPCs(cfg, ws, m, nil); err != nil {
			return fmt.Errorf("%s with the demo's config: %w", held, err)
		}
		return nil
	})
	if err != nil {
		return run, mem, loops, err
	}
	mem.Raised = heldKeys(cfg.Held, cfg.Workers, cfg.Outstanding(), cfg.HeldTimeout)
	var env []string
	for _, k := range mem.Raised {
		env = append(env, k.Env())
	}
	err = withRateDaemon(cfg, link, dir, "bounds and timers raised", env, &loops, func(d *homapeer.Daemon, ws []*rateWorker, m *daemonMetrics) error {
		cfg.Progress.Step(name + " memory with " + held)
		if err := echoFor(cfg, ws, cfg.Warmup); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		var err, atErr error
		if mem.Before, err = readProcMemory(d.Pid()); err != nil {
			return err
		}
		mem.Held, err = holdRPCs(cfg, ws, m, func(n int) {
			mem.AtHeld, atErr = readProcMemory(d.Pid())
			mem.Outstanding = outstandingGauges(m.addr, n)
		})
		if err = errors.Join(err, atErr); err != nil {
			return fmt.Errorf("%s: %w", held, err)
		}
		if mem.After, err = readProcMemory(d.Pid()); err != nil {
			return err
		}
		mem.VmRSSPerRPC = perRPC(mem.Before.VmRSSKB, mem.AtHeld.VmRSSKB, mem.Held.Held)
		mem.RssAnonPerRPC = perRPC(mem.Before.RssAnonKB, mem.AtHeld.RssAnonKB, mem.Held.Held)
		if !mem.Held.Reached {
			mem.Error = fmt.Sprintf("held %d of %d within %v with the bounds and timers raised", mem.Held.Held, cfg.Held, cfg.HeldTimeout)
		}
		return nil
	})
	return run, mem, loops, err
}
