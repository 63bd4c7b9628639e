package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// SlowdownConfig is one invocation of the slowdown scenario.
type SlowdownConfig struct {
	Bin        string // the homa-dpdk program (daemons run `Bin run`)
	Workloads  []string
	Loads      []float64 // fractions of the bottleneck rate
	Period     time.Duration
	RateBps    float64
	Clients    int
	Transports []string // homa, tcp
	Reps       int      // unloaded RPCs per probe size
	Seed       uint64
	Out        string // directory for slowdown.json and the plots
	Log        io.Writer
	MaxMessage int
	Prefix     string // of the namespaces' names; "" = sd<pid>
	// LinkSpeed is the daemons' ports.link_speed, which sets their
	// pacers' rate: "auto" (the veth's, 10G) or a rate such as 100M.
	LinkSpeed string
	// Float lets every daemon's polling thread run on either CPU
	// (EAL --lcores 1@(0-1)) instead of all on CPU 1.
	Float bool
	// Protocol is the daemons' protocol: section, YAML lines indented by
	// two spaces; "" = SDProtocol(RateBps).
	Protocol string
	// Sessions is the worker sessions per Homa client host.
	Sessions int
	// MaxRPCRate skips a workload × load whose schedule needs more RPCs
	// per second than this: the daemons on this machine cannot keep up,
	// and the run would measure their backlog (0 = no limit).
	MaxRPCRate float64
}

// sdRPCRate is the RPCs per second the schedule of w at load needs.
func sdRPCRate(cfg SlowdownConfig, w *Workload, load float64) float64 {
	return load * cfg.RateBps / 8 / w.Mean(HomaWireBytes)
}

// sdSkip says whether w at load is over cfg.MaxRPCRate.
func sdSkip(cfg SlowdownConfig, w *Workload, load float64) bool {
	return cfg.MaxRPCRate > 0 && sdRPCRate(cfg, w, load) > cfg.MaxRPCRate
}

// sdAllSkipped says whether every load of w is skipped.
func sdAllSkipped(cfg SlowdownConfig, w *Workload) bool {
	for _, l := range cfg.Loads {
		if !sdSkip(cfg, w, l) {
			return false
		}
	}
	return true
}

// sdMergeResults adds up the results of one host's sessions.
func sdMergeResults(rs []sdDriverResult) sdDriverResult {
	var m sdDriverResult
	for _, r := range rs {
		m.samples = append(m.samples, r.samples...)
		m.sent += r.sent
		m.done += r.done
		m.failed += r.failed
		m.lost += r.lost
		m.late += r.late
		m.bytesAcked += r.bytesAcked
		m.maxLag = max(m.maxLag, r.maxLag)
		m.maxGap = max(m.maxGap, r.maxGap)
		m.maxCall = max(m.maxCall, r.maxCall)
		m.maxOver = max(m.maxOver, r.maxOver)
		if m.firstErr == nil {
			m.firstErr = r.firstErr
		}
	}
	return m
}

// SDProtocol scales Homa's byte knobs to the bottleneck: the unscheduled
// bytes to the rate times 1 ms (the software RTT here is 0.15-0.3 ms;
// the kernel default, 40 KB, would be 3 ms of queue at 100 Mb/s) and
// max_incoming to 4 times that; RESENDs wait 20 ms of silence (daemons
// stall for tens of ms on this machine, and each stall would otherwise
// trigger RESENDs of every incoming message) and an RPC fails after 5 s.
func SDProtocol(rateBps float64) string {
	unsched := max(int(rateBps/8*1e-3), 3000)
	return fmt.Sprintf("  unsched_bytes: %d\n  max_incoming: %d\n  resend_ticks: 20\n  resend_interval: 20\n  timeout_ticks: 5000\n",
		unsched, 4*unsched)
}

// DefaultSlowdownConfig is a full run.
func DefaultSlowdownConfig() SlowdownConfig {
	return SlowdownConfig{Workloads: []string{"W1", "W2", "W3", "W4", "W5"}, Loads: []float64{0.5, 0.8},
		Period: 10 * time.Second, RateBps: 40e6, Clients: 2, Transports: []string{"homa", "tcp"},
		Reps: 30, Seed: 1, Out: "slowdown-out", Log: io.Discard, MaxMessage: 1_000_000, LinkSpeed: "auto", Float: true, Sessions: 4, MaxRPCRate: 3000}
}

// SmokeSlowdownConfig is a run that finishes well within a minute.
func SmokeSlowdownConfig() SlowdownConfig {
	c := DefaultSlowdownConfig()
	c.Workloads, c.Loads, c.Period, c.Clients, c.Reps, c.RateBps = []string{"W3"}, []float64{0.5}, 3*time.Second, 2, 8, 40e6
	return c
}

// SlowdownRun is one transport × workload × load.
type SlowdownRun struct {
	Transport string  `json:"transport"`
	Workload  string  `json:"workload"`
	Load      float64 `json:"load"`
	Offered   int     `json:"rpcs_offered"`
	Sent      int     `json:"rpcs_sent"`
	Done      int     `json:"rpcs_done"`
	Failed    int     `json:"rpcs_failed"`
	Lost      int     `json:"rpcs_unanswered"`
	// ServerReplyFailed: requests whose Reply the server daemon refused
	// (the RPC had ended, e.g. the client's side timed out).
	ServerReplyFailed int    `json:"server_reply_failed,omitempty"`
	FirstErr          string `json:"first_error,omitempty"`
	Sampled           int    `json:"rpcs_sampled"`
	// OfferedMbps is the schedule's rate in Homa DATA wire bytes;
	// AchievedMbps the same measure over the requests answered.
	OfferedMbps  float64 `json:"offered_mbps"`
	AchievedMbps float64 `json:"achieved_mbps"`
	// MaxSendLagUs: the latest an RPC left against its Poisson time.
	MaxSendLagUs float64 `json:"max_send_lag_us"`
	// LateFraction: the share of sends more than 1 ms late. Above 5% the
	// harness did not keep the schedule (CPU starvation): ScheduleKept
	// is false and the run's slowdowns measure the machine, not the
	// transport.
	LateFraction float64 `json:"late_send_fraction"`
	ScheduleKept bool    `json:"schedule_kept"`
	// MaxSendCallUs: the longest Send call (Homa: the daemon's answer to
	// the submission); MaxWaitOverrunUs: the longest a Receive overran its
	// timeout (the harness's goroutine not scheduled).
	MaxSendCallUs    float64 `json:"max_send_call_us"`
	MaxWaitOverrunUs float64 `json:"max_wait_overrun_us,omitempty"`
	// Loops: the longest gap between two passes of each polling loop:
	// the harness's driver loops (client-N: waits for the next arrival
	// included, so at least the largest inter-arrival time), and the
	// daemons' homa_loop_max_pass_gap_seconds (idle sleeps excluded; the
	// daemon keeps the maximum since it started, read after this run).
	Loops    []SDLoopGap `json:"loops"`
	Bands    []SDBand    `json:"bottleneck_bands"`
	Short    *SDBucket   `json:"short_messages,omitempty"` // <= SDShortLimit bytes
	Buckets  []SDBucket  `json:"buckets"`
	Unloaded *SDUnloaded `json:"unloaded"`
	Seconds  float64     `json:"seconds"`
	// LoadAvg is /proc/loadavg just before the run: other work on the
	// machine shows up here.
	LoadAvg string `json:"loadavg_before"`
	samples []SDSample
}

// SDLoopGap is one polling loop's longest gap.
type SDLoopGap struct {
	Loop     string  `json:"loop"`
	MaxGapUs float64 `json:"max_gap_us"`
	Note     string  `json:"note,omitempty"`
}

// SlowdownResult is what the scenario writes to slowdown.json.
type SlowdownResult struct {
	Scenario    string  `json:"scenario"`
	Method      string  `json:"method"`
	Distortions string  `json:"distortions"`
	RateBps     float64 `json:"rate_bps"`
	Clients     int     `json:"clients"`
	Seconds     float64 `json:"seconds_per_run"`
	// Skipped lists the workload × load runs not made, and why.
	Skipped []string       `json:"skipped,omitempty"`
	CPUs    int            `json:"cpus"`
	Runs    []*SlowdownRun `json:"runs"`
	Plots   []string       `json:"plots"`
	// HomaProtocol is the protocol: section the daemons ran with.
	HomaProtocol string `json:"homa_protocol"`
}

// RunSlowdown runs the scenario and writes its results to cfg.Out.
func RunSlowdown(cfg SlowdownConfig) (*SlowdownResult, error) {
	if cfg.Clients < 1 || cfg.Period <= 0 || cfg.RateBps <= 0 || len(cfg.Loads) == 0 || len(cfg.Workloads) == 0 {
		return nil, fmt.Errorf("slowdown: bad configuration")
	}
	logf := func(f string, a ...any) { fmt.Fprintf(cfg.Log, f+"\n", a...) }
	wls := map[string]*Workload{}
	for _, name := range cfg.Workloads {
		w, err := LoadWorkload(name)
		if err != nil {
			return nil, err
		}
		wls[name] = w.Clamp(cfg.MaxMessage)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "homa-slowdown")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = fmt.Sprintf("sd%d", os.Getpid()%100000)
	}
	n, err := newSDNet(prefix, cfg.Clients, cfg.RateBps)
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
	if cfg.Protocol == "" {
		cfg.Protocol = SDProtocol(cfg.RateBps)
	}
	res := &SlowdownResult{HomaProtocol: cfg.Protocol, Scenario: "slowdown", Method: SlowdownMethod, Distortions: SlowdownDistortions,
		RateBps: cfg.RateBps, Clients: cfg.Clients, Seconds: cfg.Period.Seconds(), CPUs: runtime.NumCPU()}
	for _, name := range cfg.Workloads {
		for _, l := range cfg.Loads {
			if w := wls[name]; sdSkip(cfg, w, l) {
				msg := fmt.Sprintf("%s at %.0f%%: needs %.0f RPC/s at %s, above --max-rpc-rate %.0f (lower --rate)",
					name, l*100, sdRPCRate(cfg, w, l), sdRateName(cfg.RateBps), cfg.MaxRPCRate)
				res.Skipped = append(res.Skipped, msg)
				logf("skipped: %s", msg)
			}
		}
	}
	note := func(msg string) {
		res.Skipped = append(res.Skipped, msg)
		logf("skipped: %s", msg)
	}
	for _, tr := range cfg.Transports {
		var runs []*SlowdownRun
		switch tr {
		case "homa":
			runs, err = runSDHoma(cfg, n, dir, wls, logf, note)
		case "tcp":
			runs, err = runSDTCP(cfg, n, wls, logf, note)
		default:
			err = fmt.Errorf("transport %q: want homa or tcp", tr)
		}
		res.Runs = append(res.Runs, runs...)
		if err != nil {
			writeSDJSON(cfg.Out, res)
			return res, fmt.Errorf("%s: %w", tr, err)
		}
	}
	plots, err := PlotSlowdown(res, cfg.Out)
	res.Plots = plots
	if werr := writeSDJSON(cfg.Out, res); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

func writeSDJSON(dir string, res *SlowdownResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "slowdown.json"), append(b, '\n'), 0o644)
}

// newSDRun fills in what every transport's run has.
func newSDRun(tr string, w *Workload, load float64, sched [][]SDArrival, cfg SlowdownConfig, res []sdDriverResult, u *SDUnloaded, loadAvg string) *SlowdownRun {
	r := &SlowdownRun{Transport: tr, Workload: w.Name, Load: load, Unloaded: u, Seconds: cfg.Period.Seconds(), LoadAvg: loadAvg}
	var offered, achieved float64
	for _, s := range sched {
		r.Offered += len(s)
		for _, a := range s {
			offered += HomaWireBytes(a.Size)
		}
	}
	for i, d := range res {
		r.Sent += d.sent
		r.Done += d.done
		r.Failed += d.failed
		r.Lost += d.lost
		if d.firstErr != nil && r.FirstErr == "" {
			r.FirstErr = d.firstErr.Error()
		}
		r.MaxSendLagUs = max(r.MaxSendLagUs, float64(d.maxLag)/1e3)
		r.MaxSendCallUs = max(r.MaxSendCallUs, float64(d.maxCall)/1e3)
		r.MaxWaitOverrunUs = max(r.MaxWaitOverrunUs, float64(d.maxOver)/1e3)
		r.samples = append(r.samples, d.samples...)
		r.Loops = append(r.Loops, SDLoopGap{Loop: fmt.Sprintf("%s driver client-%d", tr, i+1), MaxGapUs: float64(d.maxGap) / 1e3,
			Note: "harness loop; includes waiting for the next arrival"})
		_ = achieved
	}
	// Achieved: the answered share of the offered wire bytes.
	if r.Offered > 0 {
		achieved = offered * float64(r.Done) / float64(r.Offered)
	}
	r.OfferedMbps = offered * 8 / cfg.Period.Seconds() / 1e6
	r.AchievedMbps = achieved * 8 / cfg.Period.Seconds() / 1e6
	late := 0
	for _, d := range res {
		late += d.late
	}
	if r.Offered > 0 {
		r.LateFraction = float64(late) / float64(r.Offered)
	}
	r.ScheduleKept = r.LateFraction <= 0.05
	r.Sampled = len(r.samples)
	r.Buckets = SDBuckets(r.samples, u)
	r.Short = SDShort(r.samples, u)
	return r
}

func sdLogRun(logf func(string, ...any), r *SlowdownRun) {
	short := "n/a"
	if r.Short != nil {
		short = fmt.Sprintf("P50 %.2f P99 %.2f (n=%d)", r.Short.P50, r.Short.P99, r.Short.Count)
	}
	logf("  %s %s %.0f%%: offered %d RPCs (%.1f Mb/s), done %d, failed %d, unanswered %d, late sends %.1f%% (max %.0f µs); short (<=%d B) slowdown %s",
		r.Transport, r.Workload, r.Load*100, r.Offered, r.OfferedMbps, r.Done, r.Failed, r.Lost, 100*r.LateFraction, r.MaxSendLagUs, SDShortLimit, short)
}

func runSDHoma(cfg SlowdownConfig, n *sdNet, dir string, wls map[string]*Workload, logf func(string, ...any), note func(string)) (runs []*SlowdownRun, err error) {
	hosts := append([]string{n.server}, n.clients...)
	var daemons []*sdDaemon
	defer func() {
		for _, d := range daemons {
			d.stop()
		}
	}()
	for i, ns := range hosts {
		eal := `"-l", "0,1", "--main-lcore", "0"`
		if cfg.Float {
			eal = `"--lcores", "0@(0-1),1@(0-1)", "--main-lcore", "0"`
		}
		proto := cfg.Protocol
		if proto == "" {
			proto = SDProtocol(cfg.RateBps)
		}
		d, err := sdStartDaemon(cfg.Bin, dir, ns, sdIP(i), cfg.LinkSpeed, eal, proto)
		if err != nil {
			return nil, err
		}
		daemons = append(daemons, d)
	}
	srv, err := daemons[0].dial(20 * time.Microsecond)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if err := srv.Bind(99); err != nil {
		return nil, err
	}
	var stop atomic.Bool
	var swg sync.WaitGroup
	var serr error
	var replyFailed atomic.Int64
	swg.Add(1)
	go sdHomaServer(srv, &stop, &swg, &serr, &replyFailed)
	defer func() { stop.Store(true); swg.Wait() }()
	// sessions[h] are client host h's worker sessions: each Send waits
	// for its daemon's answer, so one session per host would make every
	// arrival wait for the one before; the host's arrivals are dealt to
	// its sessions in turn.
	var sessions [][]*client.Client
	defer func() {
		for _, ss := range sessions {
			for _, c := range ss {
				c.Close()
			}
		}
	}()
	dst := client.Addr{IP: [4]byte{10, 77, 0, 1}, Port: 99}
	for _, d := range daemons[1:] {
		var ss []*client.Client
		for range max(cfg.Sessions, 1) {
			c, err := d.dial(20 * time.Microsecond)
			if err != nil {
				return nil, err
			}
			ss = append(ss, c)
			if err := sdWarmUp(c, dst); err != nil {
				return nil, fmt.Errorf("%s: %w; server log: %s", d.ns, err, daemons[0].tail())
			}
		}
		sessions = append(sessions, ss)
	}
	clients := make([]*client.Client, len(sessions))
	for i, ss := range sessions {
		clients[i] = ss[0]
	}
	logf("homa: %d daemons up", len(daemons))
	payload := make([]byte, cfg.MaxMessage)
	return sdEachRun(cfg, n, wls, logf, note, sdTransport{
		name: "homa",
		unloaded: func(w *Workload) (*SDUnloaded, error) {
			return sdHomaUnloaded(clients[0], dst, SDProbeSizes(w), cfg.Reps, payload)
		},
		drive: func(w *Workload, sched [][]SDArrival, start time.Time, keep0, keep1 time.Duration) []sdDriverResult {
			// Each host's arrivals are dealt to its sessions in turn.
			var wg sync.WaitGroup
			per := make([][]sdDriverResult, len(sessions))
			for i, ss := range sessions {
				per[i] = make([]sdDriverResult, len(ss))
				for k, c := range ss {
					var sub []SDArrival
					for j := k; j < len(sched[i]); j += len(ss) {
						sub = append(sub, sched[i][j])
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						per[i][k] = sdHomaDriver(c, dst, sub, start, keep0, keep1, 10*time.Second, payload)
					}()
				}
			}
			wg.Wait()
			res := make([]sdDriverResult, len(sessions))
			for i := range per {
				res[i] = sdMergeResults(per[i])
			}
			return res
		},
		after: func(r *SlowdownRun) error {
			r.ServerReplyFailed = int(replyFailed.Swap(0))
			for i, d := range daemons {
				g, err := d.maxPassGap()
				role := "server"
				if i > 0 {
					role = fmt.Sprintf("client-%d", i)
				}
				lg := SDLoopGap{Loop: "homa daemon " + role, MaxGapUs: g * 1e6, Note: "homa_loop_max_pass_gap_seconds, max since the daemon started"}
				if err != nil {
					lg.Note = err.Error()
				}
				r.Loops = append(r.Loops, lg)
			}
			if serr != nil {
				return fmt.Errorf("server worker: %w", serr)
			}
			return nil
		},
	})
}

func runSDTCP(cfg SlowdownConfig, n *sdNet, wls map[string]*Workload, logf func(string, ...any), note func(string)) (runs []*SlowdownRun, err error) {
	if err := n.linuxAddrs(); err != nil {
		return nil, err
	}
	srv, err := sdStartTCPServer(n.server, sdIP(0))
	if err != nil {
		return nil, err
	}
	defer srv.close()
	var clients []*sdTCPClient
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	for _, ns := range n.clients {
		c, err := newSDTCPClient(ns, sdIP(0), 16)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	logf("tcp: %d clients connected", len(clients))
	return sdEachRun(cfg, n, wls, logf, note, sdTransport{
		name: "tcp",
		unloaded: func(w *Workload) (*SDUnloaded, error) {
			return sdTCPUnloaded(clients[0], SDProbeSizes(w), cfg.Reps)
		},
		drive: func(w *Workload, sched [][]SDArrival, start time.Time, keep0, keep1 time.Duration) []sdDriverResult {
			res := make([]sdDriverResult, len(clients))
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i] = sdTCPDriver(c, sched[i], start, keep0, keep1, 10*time.Second, w.Max())
				}()
			}
			wg.Wait()
			return res
		},
		after: func(*SlowdownRun) error {
			// A drained run closed its connections: reconnect.
			for i, c := range clients {
				c.mu.Lock()
				broken := len(c.all) == 0
				c.mu.Unlock()
				if broken {
					var err error
					if clients[i], err = newSDTCPClient(c.ns, sdIP(0), 16); err != nil {
						return err
					}
				}
			}
			return nil
		},
	})
}

// sdTransport is what differs between the transports in a slowdown run.
type sdTransport struct {
	name     string
	unloaded func(w *Workload) (*SDUnloaded, error)
	drive    func(w *Workload, sched [][]SDArrival, start time.Time, keep0, keep1 time.Duration) []sdDriverResult
	after    func(r *SlowdownRun) error // per run, after it is made and before it is logged
}

// sdEachRun runs t through every workload and load not skipped: the
// unloaded RTT once per workload (a failure leaves the workload out, with
// a note: most likely a previous run's backlog), then per load the same
// seeded Poisson schedule, with the bottleneck's band counters and the
// load average around it.
func sdEachRun(cfg SlowdownConfig, n *sdNet, wls map[string]*Workload, logf func(string, ...any), note func(string), t sdTransport) (runs []*SlowdownRun, err error) {
	for wi, name := range cfg.Workloads {
		w := wls[name]
		if sdAllSkipped(cfg, w) {
			continue
		}
		u, err := t.unloaded(w)
		if err != nil {
			note(fmt.Sprintf("%s %s: unloaded RTT: %v", t.name, name, err))
			continue
		}
		logf("%s %s unloaded: sizes %v RTT µs %.0f", t.name, name, u.Sizes, u.RTTUs)
		for li, load := range cfg.Loads {
			if sdSkip(cfg, w, load) {
				continue
			}
			sched := PoissonArrivals(w, len(n.clients), cfg.Period, cfg.RateBps, load, cfg.Seed+uint64(wi*100+li))
			before, _ := n.bands()
			la := sdLoadAvg()
			start := time.Now().Add(20 * time.Millisecond)
			keep0, keep1 := cfg.Period/20, cfg.Period-cfg.Period/20
			res := t.drive(w, sched, start, keep0, keep1)
			after, err := n.bands()
			if err != nil {
				return runs, err
			}
			r := newSDRun(t.name, w, load, sched, cfg, res, u, la)
			r.Bands = sdBandDelta(before, after)
			aerr := t.after(r)
			sdLogRun(logf, r)
			runs = append(runs, r)
			if aerr != nil {
				return runs, aerr
			}
		}
	}
	return runs, nil
}

// PrintSlowdown writes the headline table: per run, the short messages'
// slowdown and the throughput achieved.
func PrintSlowdown(w io.Writer, res *SlowdownResult) {
	fmt.Fprintf(w, "slowdown: %d clients -> 1 server, bottleneck %s, %g s per run\n", res.Clients, sdRateName(res.RateBps), res.Seconds)
	fmt.Fprintf(w, "%-5s %-3s %4s %9s %9s %9s %6s %10s %10s %9s %10s\n", "tx", "W", "load", "offered", "done", "lost+fail", "late", "short P50", "short P99", "all P99", "max gap µs")
	for _, r := range res.Runs {
		sp50, sp99 := "-", "-"
		if r.Short != nil {
			sp50, sp99 = fmt.Sprintf("%.2f", r.Short.P50), fmt.Sprintf("%.2f", r.Short.P99)
		}
		all := "-"
		if len(r.samples) > 0 {
			b := sdSummarize(r.samples, r.Unloaded)
			all = fmt.Sprintf("%.2f", b.P99)
		}
		gap := 0.0
		for _, l := range r.Loops {
			if strings.HasPrefix(l.Loop, "homa daemon") {
				gap = max(gap, l.MaxGapUs)
			}
		}
		gs := "-"
		if gap > 0 {
			gs = fmt.Sprintf("%.0f", gap)
		}
		late := fmt.Sprintf("%.1f%%", 100*r.LateFraction)
		if !r.ScheduleKept {
			late += "!"
		}
		fmt.Fprintf(w, "%-5s %-3s %3.0f%% %9d %9d %9d %6s %10s %10s %9s %10s\n", r.Transport, r.Workload, r.Load*100, r.Offered, r.Done,
			r.Lost+r.Failed, late, sp50, sp99, all, gs)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintln(w, "skipped:", sk)
	}
	fmt.Fprintln(w, "late: sends >1 ms behind the Poisson schedule; '!' = over 5%: the harness was starved, the slowdowns measure the machine")
	fmt.Fprintln(w, "max gap: longest gap between two passes of any Homa daemon's polling loop (homa_loop_max_pass_gap_seconds)")
	for _, p := range res.Plots {
		fmt.Fprintln(w, "plot:", p)
	}
}

func sdLoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}
