package slowdown

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Run runs the scenario (its command writes the report): per
// workload, the bottleneck is set to the workload's rate, then each
// transport runs every load (Homa, then TCP, so both meet the machine in
// the same state).
func Run(cfg Config) (*Result, error) {
	if cfg.Clients < 1 || cfg.Period <= 0 || cfg.RateBps <= 0 || len(cfg.Loads) == 0 || len(cfg.Workloads) == 0 {
		return nil, fmt.Errorf("slowdown: bad configuration")
	}
	for _, tr := range cfg.Transports {
		if tr != "homa" && tr != "tcp" {
			return nil, fmt.Errorf("slowdown: transport %q: want homa or tcp", tr)
		}
	}
	logf := func(f string, a ...any) { fmt.Fprintf(cfg.Log, f+"\n", a...) }
	wls := map[string]*workload.Workload{}
	for _, name := range cfg.Workloads {
		w, err := workload.LoadWorkload(name)
		if err != nil {
			return nil, err
		}
		wls[name] = w.Clamp(cfg.MaxMessage)
	}
	dir, err := os.MkdirTemp("", "homa-slowdown")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The harness's worker sessions sleep in blocking system calls (the
	// client's eventfd wait). Go hands a P held by a blocked thread to
	// another only when sysmon next looks, up to 10 ms later: with more
	// sessions than Ps, a woken session or a driver due to send could
	// wait that long. Enough Ps that none waits for one.
	if want := cfg.Clients*max(cfg.Sessions, 1) + 4; runtime.GOMAXPROCS(0) < want {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(want))
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = fmt.Sprintf("sd%d", os.Getpid()%100000)
	}
	n, err := newTopology(prefix, cfg.Clients, cfg.RateBps)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	// Interrupted: remove the namespaces (the daemons die with this
	// process: Pdeathsig) before exiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			n.Close()
			os.Exit(130)
		}
	}()
	res := &Result{Scenario: "slowdown", Method: Method, Distortions: Distortions,
		RateBps: cfg.RateBps, RPCRate: cfg.RPCRate, Clients: cfg.Clients, Seconds: cfg.Period.Seconds(), CPUs: runtime.NumCPU()}
	note := func(msg string) {
		res.Skipped = append(res.Skipped, msg)
		logf("skipped: %s", msg)
	}
	for wi, name := range cfg.Workloads {
		w := wls[name]
		rate := rateFor(cfg, w)
		if err := n.setRate(rate); err != nil {
			return res, err
		}
		logf("%s: bottleneck %s (%.0f RPC/s at %.0f%% load)", name, rateName(rate),
			slices.Max(cfg.Loads)*rate/8/w.Mean(workload.HomaWireBytes), 100*slices.Max(cfg.Loads))
		for _, tr := range cfg.Transports {
			var t transport
			if tr == "homa" {
				t = homaTransport(cfg, n, dir, rate)
			} else {
				t = tcpTransport(cfg, n, rate)
			}
			runs, err := runWorkload(cfg, n, w, wi, rate, logf, note, t)
			res.Runs = append(res.Runs, runs...)
			if err != nil {
				return res, fmt.Errorf("%s %s: %w", tr, name, err)
			}
		}
	}
	return res, nil
}

// runWorkload runs t through every load of w at rate: the unloaded RTT
// first (a failure leaves the workload out for t, with a note), then per
// load the same seeded Poisson schedule for every transport, with the
// bottleneck's band counters and the load average around it.
func runWorkload(cfg Config, n *topology, w *workload.Workload, wi int, rate float64, logf func(string, ...any), note func(string), t transport) (runs []*RunResult, err error) {
	defer t.teardown()
	if err := t.setup(); err != nil {
		return nil, err
	}
	u, err := t.unloaded(w)
	if err != nil {
		note(fmt.Sprintf("%s %s: unloaded RTT: %v", t.name, w.Name, err))
		return nil, nil
	}
	logf("%s %s unloaded: sizes %v RTT µs %.0f", t.name, w.Name, u.Sizes, u.RTTUs)
	for li, load := range cfg.Loads {
		if li > 0 {
			if err := t.reset(); err != nil {
				return runs, err
			}
		}
		sched := workload.PoissonArrivals(w, len(n.clients), cfg.Period, rate, load, cfg.Seed+uint64(wi*100+li))
		before, _ := n.bands()
		la := readLoadAvg()
		start := time.Now().Add(20 * time.Millisecond)
		keep0, keep1 := cfg.Period/20, cfg.Period-cfg.Period/20
		res := t.drive(w, sched, start, keep0, keep1)
		after, err := n.bands()
		if err != nil {
			return runs, err
		}
		r := newRunResult(t.name, w, load, rate, sched, cfg, res, u, la)
		r.Bands = bandDelta(before, after)
		aerr := t.after(r)
		logRun(logf, r)
		runs = append(runs, r)
		if aerr != nil {
			return runs, aerr
		}
	}
	return runs, nil
}

// transport is what differs between the transports in a slowdown run.
type transport struct {
	name string
	// setup brings the transport up for a workload; reset gives the next
	// load a fresh start (Homa: new daemons, so that one run's backlog
	// cannot poison the next); teardown takes it down. reset and teardown
	// may follow a failed setup or reset.
	setup, reset func() error
	teardown     func()
	unloaded     func(w *workload.Workload) (*Unloaded, error)
	drive        func(w *workload.Workload, sched [][]workload.Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult
	after        func(r *RunResult) error // per run, after it is made and before it is logged
}

// probeGap is the pause between two unloaded RPCs: twice the time the
// bottleneck's bucket (one 1600-byte frame) takes to fill at rate.
func probeGap(rate float64) time.Duration {
	return time.Duration(2 * 1600 * 8 / rate * 1e9)
}

func readLoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}
