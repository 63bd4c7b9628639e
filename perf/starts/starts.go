package starts

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
)

// The starts scenario: is a daemon's speed a property of the build, or of
// the start? It starts the daemon that rtt starts (demo --workers) again
// and again, and measures each fresh daemon from its first RPC: the
// first small RPCs one by one, then small RPCs after a warm-up, then 1 MB
// round trips. Two goals of issue 14 are judged on it (starts_result.go):
// no bimodal starts (the 1 MB P50s of the starts within 15 % of each
// other) and no warm-up penalty (the first 100 small RPCs of a fresh
// daemon within 1.5x of its steady P50). Around each phase, and around
// each of the first RPCs, it reads the page faults of the daemon and of
// itself, and how both map the worker regions, as evidence for where a
// slow start's or a slow first RPC's time goes.

// Config configures the starts scenario.
type Config struct {
	Self string // the homa-dpdk executable, run as the daemon
	// Starts is the number of daemon starts per link; the links take
	// turns (start 1 on each link, then start 2, ...), so that a slow
	// spell of the machine falls on both rather than on one link's
	// starts.
	Starts int
	Links  []string // links to start the daemon on (demo --link)
	// FirstRPCs is how many small RPCs of each fresh daemon are timed one
	// by one, from its first (which also waits for ARP).
	FirstRPCs int
	SmallSize int // bytes of the small RPCs (request and response)
	// SmallWarmup small RPCs follow the first ones unrecorded, then
	// SmallCount are recorded: the steady P50.
	SmallWarmup, SmallCount int
	LargeSize               int // bytes of the large RPCs
	// LargeWarmup large round trips, then LargeCount recorded: the
	// start's large P50.
	LargeWarmup, LargeCount int
	// MaxTime bounds a recorded phase (and MaxTime/4 its warm-up), as in
	// rtt's measure.
	MaxTime   time.Duration
	WorkerCPU int    // CPU of the harness's workers' thread (the daemon's loop is on lcore 1)
	OutDir    string // the daemons' logs go here
	Progress  *perf.Progress
	Smoke     bool
}

// The goals the scenario judges, from issue 14.
const (
	// StartsSpreadGoal bounds the spread of the starts' 1 MB P50s,
	// max/min − 1.
	StartsSpreadGoal = 0.15
	// StartsWarmupGoal bounds a start's warm-up ratio: the P50 of its
	// first small RPCs over its steady small P50.
	StartsWarmupGoal = 1.5
)

// ConfigFor is the default configuration, or the --smoke one (two
// starts on the ring link, short phases).
func ConfigFor(smoke bool) Config {
	c := Config{Starts: 10, Links: []string{"ring", "memif"}, FirstRPCs: 100, SmallSize: 100,
		SmallWarmup: 5000, SmallCount: 20000, LargeSize: 1_000_000, LargeWarmup: 50, LargeCount: 1000,
		MaxTime: 5 * time.Second, WorkerCPU: 0}
	if smoke {
		c.Starts, c.Links, c.Smoke = 2, []string{"ring"}, true
		c.SmallWarmup, c.SmallCount, c.LargeWarmup, c.LargeCount, c.MaxTime = 500, 1000, 5, 30, time.Second
	}
	return c
}

// Steps is the number of progress steps of RunStarts: per start and
// link, the daemon's start (startHomaDaemon), the first RPCs, the steady
// small RPCs and the large ones.
func Steps(cfg Config) int { return cfg.Starts * len(cfg.Links) * 4 }

// Measure runs the starts scenario. A start that fails is kept in the
// result with its error and the others still run; the goals then fail.
func Measure(cfg Config) (*Result, error) {
	if cfg.Starts < 1 || len(cfg.Links) == 0 || cfg.FirstRPCs < 1 || cfg.SmallCount < 1 || cfg.LargeCount < 1 {
		return nil, fmt.Errorf("starts: %d starts on %v, %d first RPCs, %d and %d recorded: want at least one of each",
			cfg.Starts, cfg.Links, cfg.FirstRPCs, cfg.SmallCount, cfg.LargeCount)
	}
	res := &Result{Method: startsMethod(cfg), Distortions: startsDistortions, Smoke: cfg.Smoke,
		Starts: cfg.Starts, FirstRPCs: cfg.FirstRPCs, SmallSize: cfg.SmallSize, LargeSize: cfg.LargeSize,
		SpreadGoal: StartsSpreadGoal, WarmupGoal: StartsWarmupGoal}
	dir, err := os.MkdirTemp("", "homa-perf-starts")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i := 1; i <= cfg.Starts; i++ {
		for _, link := range cfg.Links {
			run := oneStart(cfg, link, i, filepath.Join(dir, fmt.Sprint(i)))
			res.Runs = append(res.Runs, run)
		}
	}
	res.summarize()
	return res, nil
}

// oneStart starts a fresh daemon on link and measures it: start i.
func oneStart(cfg Config, link string, i int, dir string) StartRun {
	run := StartRun{Link: link, Start: i}
	run.HugepagesFree, run.HugepagesReserved = procstat.Hugepages()
	t0 := time.Now()
	d, logPath, done, err := homapeer.StartHomaDaemon(cfg.Self, "", link, dir, cfg.OutDir, fmt.Sprintf("starts-%02d", i), cfg.Progress, 0)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer done() // after the daemon's Stop below
	run.UpMs = float64(time.Since(t0).Microseconds()) / 1e3
	run.DaemonLog = filepath.Base(logPath)
	if run.Loop, err = d.Pinned(cfg.WorkerCPU, func() error { return measureStart(cfg, d, &run) }); err != nil {
		run.Error = err.Error()
	}
	return run
}

// phaseMark is where the page-fault counters stood at the start of a
// phase.
type phaseMark struct {
	daemon           procstat.Counters
	selfMin, selfMaj int64
	gcs              uint32
	vol, invol       int64 // the loop thread's context switches
}

// measureStart attaches the workers to the fresh daemon d and runs the
// phases, filling run.
func measureStart(cfg Config, d *homapeer.Daemon, run *StartRun) error {
	st, err := procstat.OpenStat(d.Pid())
	if err != nil {
		return err
	}
	defer st.Close()
	loopTID, haveLoop := procstat.LoopThread(d.Pid())
	mark := func() (phaseMark, error) {
		var m phaseMark
		var err error
		m.daemon, err = st.Read()
		m.selfMin, m.selfMaj = procstat.SelfFaults()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.gcs = ms.NumGC
		if err == nil && haveLoop {
			m.vol, m.invol, err = procstat.ThreadSwitches(d.Pid(), loopTID)
		}
		return m, err
	}
	phase := func(name string, from phaseMark) error {
		to, err := mark()
		if err != nil {
			return err
		}
		run.Phases = append(run.Phases, PhaseFaults{Phase: name,
			DaemonMinor: to.daemon.MinFlt - from.daemon.MinFlt, DaemonMajor: to.daemon.MajFlt - from.daemon.MajFlt,
			HarnessMinor: to.selfMin - from.selfMin, HarnessMajor: to.selfMaj - from.selfMaj,
			HarnessGCs: int(to.gcs - from.gcs), LoopVoluntary: to.vol - from.vol, LoopInvoluntary: to.invol - from.invol})
		return nil
	}

	m, err := mark()
	if err != nil {
		return err
	}
	t0 := time.Now()
	w, err := homapeer.DialPair(d.Dir, max(cfg.SmallSize, cfg.LargeSize), cfg.LargeSize)
	if err != nil {
		return err
	}
	defer w.Close()
	run.AttachMs = float64(time.Since(t0).Microseconds()) / 1e3
	if err := phase("attach", m); err != nil {
		return err
	}
	run.HarnessRegions, run.DaemonRegions = procstat.RegionMemOf(os.Getpid()), procstat.RegionMemOf(d.Pid())

	// The first RPCs, one by one, with the faults each took.
	echo := func(msg []byte) func() error {
		return func() error {
			n, err := w.RPC(msg)
			if err == nil && n != len(msg) {
				err = fmt.Errorf("%d-byte response to a %d-byte request", n, len(msg))
			}
			return err
		}
	}
	small := echo(perf.Payload(cfg.SmallSize))
	cfg.Progress.Step(fmt.Sprintf("start %d/%d %s: first %d %s RPCs", run.Start, cfg.Starts, run.Link, cfg.FirstRPCs, perf.SizeName(cfg.SmallSize)))
	if m, err = mark(); err != nil {
		return err
	}
	for k := range cfg.FirstRPCs {
		before, err := st.Read()
		if err != nil {
			return err
		}
		sMin, _ := procstat.SelfFaults()
		t0 := time.Now()
		err = small()
		el := time.Since(t0)
		if err != nil {
			return fmt.Errorf("first RPC %d: %w", k, err)
		}
		after, err := st.Read()
		if err != nil {
			return err
		}
		sMin1, _ := procstat.SelfFaults()
		run.First = append(run.First, FirstRPC{Us: float64(el.Nanoseconds()) / 1e3,
			DaemonMinor: after.MinFlt - before.MinFlt, HarnessMinor: sMin1 - sMin})
	}
	if err := phase("first", m); err != nil {
		return err
	}
	run.RegionsAfterFirst = procstat.RegionMemOf(d.Pid())

	cfg.Progress.Step(fmt.Sprintf("start %d/%d %s: steady %s RPCs", run.Start, cfg.Starts, run.Link, perf.SizeName(cfg.SmallSize)))
	if m, err = mark(); err != nil {
		return err
	}
	h, err := perf.Measure(small, cfg.SmallWarmup, cfg.SmallCount, cfg.MaxTime, cfg.Progress)
	if err != nil {
		return fmt.Errorf("%s: %w", perf.SizeName(cfg.SmallSize), err)
	}
	run.Steady = perf.Point(cfg.SmallSize, h)
	if err := phase("steady", m); err != nil {
		return err
	}

	cfg.Progress.Step(fmt.Sprintf("start %d/%d %s: %s RPCs", run.Start, cfg.Starts, run.Link, perf.SizeName(cfg.LargeSize)))
	if m, err = mark(); err != nil {
		return err
	}
	if h, err = perf.Measure(echo(perf.Payload(cfg.LargeSize)), cfg.LargeWarmup, cfg.LargeCount, cfg.MaxTime, cfg.Progress); err != nil {
		return fmt.Errorf("%s: %w", perf.SizeName(cfg.LargeSize), err)
	}
	run.Large = perf.Point(cfg.LargeSize, h)
	if err := phase("large", m); err != nil {
		return err
	}
	run.RegionsAtEnd = procstat.RegionMemOf(d.Pid())
	return nil
}

// startsMethod is how cfg measures.
func startsMethod(cfg Config) string {
	return fmt.Sprintf(`%d starts of the daemon per link (%s), the links taking turns (start 1 on each, then start 2, ...); `+
		`each start is the daemon rtt starts, a fresh child process `+"`homa-dpdk demo --workers DIR --link LINK`"+
		` (two Homa hosts, one busy-polling loop on lcore 1, worker regions of 128 MiB arena and 128 MiB pool: demo/workers.go), `+
		`measured from its first RPC and stopped. The harness attaches a client worker to 10.0.0.1 and a server worker `+
		`to 10.0.0.2 and drives both from one goroutine locked to a thread pinned to CPU 0, one RPC at a time, as rtt does `+
		`(Send, the server's Receive and Reply with the same bytes, the client's Wait); while a daemon runs, the harness's `+
		`other threads are kept off CPU 1, the daemon's loop CPU. Phases of a start: the first %d `+
		`%s RPCs of the fresh daemon, each timed alone (the first also waits for ARP), their P50 the median of the %d; `+
		`then %d %s RPCs unrecorded and up to %d recorded (for at most %v): the steady P50; then %d %s round trips `+
		`unrecorded and up to %d recorded (for at most %v): the start's %s P50 (HdrHistogram, 3 significant digits). `+
		`Warm-up ratio: the first P50 over the steady P50, per start. Spread: over a link's starts, the largest %s P50 `+
		`over the smallest, less 1 (and the range over the median). Goals: spread ≤ %.0f %%; every start's warm-up ratio ≤ %.1f. `+
		`Evidence beside the figures: the minor and major page faults of the daemon (/proc/PID/stat, read through one open `+
		`file) and of the harness (getrusage) in each phase and during each first RPC (read between two RPCs, untimed), `+
		`the harness's garbage collections and the context switches of the daemon's loop thread (/proc/PID/task/TID/status) in each phase, how the daemon and the harness map the worker regions (smaps: `+
		`page size, resident kB) after the attach, after the first RPCs and at the end, the free 2 MB hugepages before `+
		`each start and each daemon's polling-loop gaps.`,
		cfg.Starts, strings.Join(cfg.Links, " and "), cfg.FirstRPCs, perf.SizeName(cfg.SmallSize), cfg.FirstRPCs,
		cfg.SmallWarmup, perf.SizeName(cfg.SmallSize), cfg.SmallCount, cfg.MaxTime, cfg.LargeWarmup, perf.SizeName(cfg.LargeSize),
		cfg.LargeCount, cfg.MaxTime, perf.SizeName(cfg.LargeSize), perf.SizeName(cfg.LargeSize), 100*StartsSpreadGoal, StartsWarmupGoal)
}

const startsDistortions = `On a 2-vCPU virtual machine shared with other work: the spread between starts is what ` +
	`the goal is about, and a busy spell of the machine during one start looks like a slow start; the links take turns ` +
	`so that such a spell falls on neighbouring starts of both links (a slow start alone is the daemon's, a slow pair ` +
	`the machine's). The two hosts share one polling core and the workers' CPU 0 is shared with the daemon's main ` +
	`thread and every other thread of the machine, as in rtt. Reading the daemon's /proc/PID/stat between two of the ` +
	`first RPCs takes tens of µs that are not timed, but it spaces those RPCs apart where the steady ones follow each ` +
	`other at once. The first RPC of a start includes ARP between the hosts; the median of the first ones does not ` +
	`depend on it. ` + perf.LinkDistortions
