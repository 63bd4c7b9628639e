package slowdown

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// Config is one invocation of the slowdown scenario.
type Config struct {
	Bin       string // the homa-dpdk program (daemons run `Bin run`)
	Workloads []string
	Loads     []float64 // fractions of the bottleneck rate
	Period    time.Duration
	// RateBps is the highest bottleneck rate; each workload runs at the
	// rate that needs RPCRate RPCs per second at its highest load, if
	// that is lower (rateFor).
	RateBps float64
	// RPCRate is the RPCs per second a workload's highest load offers
	// (unless RateBps caps it lower): what the daemons and the harness
	// sustain on this machine. W1 and W2 (hundreds of bytes per message)
	// would need thousands per second at tens of Mb/s.
	RPCRate    float64
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
	// two spaces; "" = Protocol of each workload's rate.
	Protocol string
	// IdleSpin and IdleMaxSleepUs are the daemons' runtime.idle_spin_passes
	// and runtime.idle_max_sleep_us.
	IdleSpin, IdleMaxSleepUs int
	// Sessions is the worker sessions per Homa client host.
	Sessions int
}

// rateFor is the bottleneck rate for w: the rate at which the highest
// load offers cfg.RPCRate RPCs per second, at most cfg.RateBps, rounded
// down to 1 kbit/s.
func rateFor(cfg Config, w *Workload) float64 {
	r := cfg.RateBps
	if cfg.RPCRate > 0 {
		r = min(r, cfg.RPCRate*w.Mean(HomaWireBytes)*8/slices.Max(cfg.Loads))
	}
	return max(math.Floor(r/1000)*1000, 1000)
}

// mergeResults adds up the results of one host's sessions.
func mergeResults(rs []driverResult) driverResult {
	var m driverResult
	for _, r := range rs {
		m.samples = append(m.samples, r.samples...)
		m.sent += r.sent
		m.done += r.done
		m.failed += r.failed
		m.lost += r.lost
		m.late += r.late
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

// Protocol scales Homa's knobs to the bottleneck: the unscheduled
// bytes to the rate times 1 ms (the software RTT here is 0.15-0.3 ms;
// the kernel default, 40 KB, would be 3 ms of queue at 100 Mb/s; at
// least 2 full packets) and max_incoming to 4 times that. RESENDs wait
// for 100 ms of silence, twice what one band of the bottleneck queues
// (BandQueue): a RESEND sooner would ask again for packets still
// waiting there, and the server, not yet knowing the request, would
// answer RPC_UNKNOWN and make the client send all of it again. A server
// asks for a missing ack (NEED_ACK) as seldom: every 2 ms, as kernel Homa
// does, each unacknowledged RPC would cost an ACK packet through a
// bottleneck a thousand times slower than a datacenter link, and at a
// few Mb/s those ACKs alone filled the top band and collapsed the run.
// An RPC fails after 5 s of silence.
func Protocol(rateBps float64) string {
	unsched := max(int(rateBps/8*1e-3), 2*homaPerPacketPayload)
	resend := int(2 * BandQueue / time.Millisecond)
	return fmt.Sprintf("  unsched_bytes: %d\n  max_incoming: %d\n  resend_ticks: %d\n  resend_interval: %d\n  request_ack_ticks: %d\n  timeout_ticks: %d\n",
		unsched, 4*unsched, resend, resend, resend, 5000)
}

// DefaultConfig is a full run.
func DefaultConfig() Config {
	return Config{Workloads: []string{"W1", "W2", "W3", "W4", "W5"}, Loads: []float64{0.5, 0.8},
		Period: 10 * time.Second, RateBps: 200e6, Clients: 2, Transports: []string{"homa", "tcp"},
		Reps: 30, Seed: 1, Out: "slowdown-out", Log: io.Discard, MaxMessage: 1_000_000, LinkSpeed: "auto", Float: true, Sessions: 4, RPCRate: 1500,
		IdleSpin: 100, IdleMaxSleepUs: 100}
}

// SmokeConfig is a run that finishes well within a minute.
func SmokeConfig() Config {
	c := DefaultConfig()
	c.Workloads, c.Loads, c.Period, c.Clients, c.Reps = []string{"W3"}, []float64{0.5}, 3*time.Second, 2, 8
	return c
}

// RunResult is one transport × workload × load.
type RunResult struct {
	Transport string  `json:"transport"`
	Workload  string  `json:"workload"`
	Load      float64 `json:"load"`
	RateBps   float64 `json:"rate_bps"` // the bottleneck's rate in this run
	// HomaProtocol is the protocol: section the daemons ran with (Homa).
	HomaProtocol string `json:"homa_protocol,omitempty"`
	// DaemonCounters are each Homa daemon's engine counters (those not 0)
	// at the end of the run, warm-up included: packets sent and received
	// by type, RESENDs, timeouts, drops.
	DaemonCounters map[string]map[string]float64 `json:"daemon_counters,omitempty"`
	Offered        int                           `json:"rpcs_offered"`
	Sent           int                           `json:"rpcs_sent"`
	Done           int                           `json:"rpcs_done"`
	Failed         int                           `json:"rpcs_failed"`
	Lost           int                           `json:"rpcs_unanswered"`
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
	Loops    []LoopGap `json:"loops"`
	Bands    []Band    `json:"bottleneck_bands"`
	Short    *Bucket   `json:"short_messages,omitempty"` // <= ShortLimit bytes
	Buckets  []Bucket  `json:"buckets"`
	Unloaded *Unloaded `json:"unloaded"`
	Seconds  float64   `json:"seconds"`
	// LoadAvg is /proc/loadavg just before the run: other work on the
	// machine shows up here.
	LoadAvg string `json:"loadavg_before"`
	samples []Sample
}

// LoopGap is one polling loop's longest gap.
type LoopGap struct {
	Loop     string  `json:"loop"`
	MaxGapUs float64 `json:"max_gap_us"`
	Note     string  `json:"note,omitempty"`
}

// Result is what the scenario writes to slowdown.json.
type Result struct {
	Scenario    string  `json:"scenario"`
	Method      string  `json:"method"`
	Distortions string  `json:"distortions"`
	RateBps     float64 `json:"max_rate_bps"` // --rate; each run has its own rate_bps
	RPCRate     float64 `json:"rpc_rate"`     // --rpc-rate
	Clients     int     `json:"clients"`
	Seconds     float64 `json:"seconds_per_run"`
	// Skipped lists the workload × load runs not made, and why.
	Skipped []string     `json:"skipped,omitempty"`
	CPUs    int          `json:"cpus"`
	Runs    []*RunResult `json:"runs"`
	Plots   []string     `json:"plots"`
}

// Run runs the scenario and writes its results to cfg.Out: per
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
			slices.Max(cfg.Loads)*rate/8/w.Mean(HomaWireBytes), 100*slices.Max(cfg.Loads))
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
				writeJSON(cfg.Out, res)
				return res, fmt.Errorf("%s %s: %w", tr, name, err)
			}
		}
	}
	plots, err := Plot(res, cfg.Out)
	res.Plots = plots
	if werr := writeJSON(cfg.Out, res); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

func writeJSON(dir string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "slowdown.json"), append(b, '\n'), 0o644)
}

// newRunResult fills in what every transport's run has.
func newRunResult(tr string, w *Workload, load, rate float64, sched [][]Arrival, cfg Config, res []driverResult, u *Unloaded, loadAvg string) *RunResult {
	r := &RunResult{Transport: tr, Workload: w.Name, Load: load, RateBps: rate, Unloaded: u, Seconds: cfg.Period.Seconds(), LoadAvg: loadAvg}
	var offered, achieved float64
	for _, s := range sched {
		r.Offered += len(s)
		for _, a := range s {
			offered += HomaWireBytes(a.Size)
		}
	}
	late := 0
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
		r.Loops = append(r.Loops, LoopGap{Loop: fmt.Sprintf("%s driver client-%d", tr, i+1), MaxGapUs: float64(d.maxGap) / 1e3,
			Note: "harness loop; includes waiting for the next arrival"})
		late += d.late
	}
	// Achieved: the answered share of the offered wire bytes.
	if r.Offered > 0 {
		achieved = offered * float64(r.Done) / float64(r.Offered)
		r.LateFraction = float64(late) / float64(r.Offered)
	}
	r.OfferedMbps = offered * 8 / cfg.Period.Seconds() / 1e6
	r.AchievedMbps = achieved * 8 / cfg.Period.Seconds() / 1e6
	r.ScheduleKept = r.LateFraction <= 0.05
	r.Sampled = len(r.samples)
	r.Buckets = Buckets(r.samples, u)
	r.Short = Short(r.samples, u)
	return r
}

func logRun(logf func(string, ...any), r *RunResult) {
	short := "n/a"
	if r.Short != nil {
		short = fmt.Sprintf("P50 %.2f P99 %.2f (n=%d)", r.Short.P50, r.Short.P99, r.Short.Count)
	}
	logf("  %s %s %.0f%%: offered %d RPCs (%.1f Mb/s), done %d, failed %d, unanswered %d, late sends %.1f%% (max %.0f µs); short (<=%d B) slowdown %s",
		r.Transport, r.Workload, r.Load*100, r.Offered, r.OfferedMbps, r.Done, r.Failed, r.Lost, 100*r.LateFraction, r.MaxSendLagUs, ShortLimit, short)
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
	unloaded     func(w *Workload) (*Unloaded, error)
	drive        func(w *Workload, sched [][]Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult
	after        func(r *RunResult) error // per run, after it is made and before it is logged
}

// homaSet is the Homa side of one load: a daemon per host, the server
// worker answering on port 99 and each client host's worker sessions.
type homaSet struct {
	daemons     []*daemon
	srv         *client.Client
	sessions    [][]*client.Client // per client host; arrivals are dealt to them in turn
	stop        atomic.Bool
	swg         sync.WaitGroup
	serr        error
	replyFailed atomic.Int64
}

var serverAddr = client.Addr{IP: [4]byte{10, 77, 0, 1}, Port: 99}

// startHoma starts the daemons, the server worker and the client
// sessions, and warms each session up (ARP, first RPCs). On error what
// was started is returned, for close.
func startHoma(cfg Config, n *topology, dir, protocol string) (*homaSet, error) {
	h := &homaSet{}
	eal := `"-l", "0,1", "--main-lcore", "0"`
	if cfg.Float {
		eal = `"--lcores", "0@(0-1),1@(0-1)", "--main-lcore", "0"`
	}
	rt := fmt.Sprintf("  idle_spin_passes: %d\n  idle_max_sleep_us: %d\n", cfg.IdleSpin, cfg.IdleMaxSleepUs)
	for i, ns := range append([]string{n.server}, n.clients...) {
		d, err := startDaemon(cfg.Bin, dir, ns, hostIP(i), cfg.LinkSpeed, eal, protocol, rt)
		if err != nil {
			return h, err
		}
		h.daemons = append(h.daemons, d)
	}
	var err error
	if h.srv, err = h.daemons[0].dial(20 * time.Microsecond); err != nil {
		return h, err
	}
	if err := h.srv.Bind(serverAddr.Port); err != nil {
		return h, err
	}
	h.swg.Add(1)
	go homaServer(h.srv, &h.stop, &h.swg, &h.serr, &h.replyFailed)
	for _, d := range h.daemons[1:] {
		var ss []*client.Client
		for range max(cfg.Sessions, 1) {
			c, err := d.dial(20 * time.Microsecond)
			if err != nil {
				h.sessions = append(h.sessions, ss)
				return h, err
			}
			ss = append(ss, c)
			if err := warmUp(c, serverAddr); err != nil {
				h.sessions = append(h.sessions, ss)
				return h, fmt.Errorf("%s: %w; server log: %s", d.ns, err, h.daemons[0].tail())
			}
		}
		h.sessions = append(h.sessions, ss)
	}
	return h, nil
}

// close stops the server worker, detaches every session and stops the
// daemons.
func (h *homaSet) close() {
	if h.srv != nil {
		h.stop.Store(true)
		h.swg.Wait()
		h.srv.Close()
	}
	for _, ss := range h.sessions {
		for _, c := range ss {
			c.Close()
		}
	}
	for _, d := range h.daemons {
		d.stop()
	}
}

// homaTransport runs Homa at rate: fresh daemons for every load, the
// unloaded RTT measured on the first load's.
func homaTransport(cfg Config, n *topology, dir string, rate float64) transport {
	proto := cfg.Protocol
	if proto == "" {
		proto = Protocol(rate)
	}
	payload := make([]byte, cfg.MaxMessage)
	var h *homaSet
	start := func() error {
		t0 := time.Now()
		var err error
		h, err = startHoma(cfg, n, dir, proto)
		if err == nil {
			fmt.Fprintf(cfg.Log, "homa: %d daemons up in %.1f s\n", len(h.daemons), time.Since(t0).Seconds())
		}
		return err
	}
	stop := func() {
		if h != nil {
			h.close()
			h = nil
		}
	}
	return transport{
		name:     "homa",
		setup:    start,
		reset:    func() error { stop(); return start() },
		teardown: stop,
		unloaded: func(w *Workload) (*Unloaded, error) {
			return homaUnloaded(h.sessions[0][0], serverAddr, ProbeSizes(w), cfg.Reps, probeGap(rate), payload)
		},
		drive: func(w *Workload, sched [][]Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult {
			// Each host's arrivals are dealt to its sessions in turn.
			var wg sync.WaitGroup
			per := make([][]driverResult, len(h.sessions))
			for i, ss := range h.sessions {
				per[i] = make([]driverResult, len(ss))
				for k, c := range ss {
					var sub []Arrival
					for j := k; j < len(sched[i]); j += len(ss) {
						sub = append(sub, sched[i][j])
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						per[i][k] = homaDriver(c, serverAddr, sub, start, keep0, keep1, 10*time.Second, payload)
					}()
				}
			}
			wg.Wait()
			res := make([]driverResult, len(h.sessions))
			for i := range per {
				res[i] = mergeResults(per[i])
			}
			return res
		},
		after: func(r *RunResult) error {
			r.HomaProtocol = proto
			r.ServerReplyFailed = int(h.replyFailed.Swap(0))
			for i, d := range h.daemons {
				g, counters, err := d.metrics()
				role := "server"
				if i > 0 {
					role = fmt.Sprintf("client-%d", i)
				}
				if r.DaemonCounters == nil {
					r.DaemonCounters = map[string]map[string]float64{}
				}
				r.DaemonCounters[role] = counters
				lg := LoopGap{Loop: "homa daemon " + role, MaxGapUs: g * 1e6, Note: "homa_loop_max_pass_gap_seconds, max since the daemon started (before this run's warm-up)"}
				if err != nil {
					lg.Note = err.Error()
				}
				r.Loops = append(r.Loops, lg)
			}
			if h.serr != nil {
				return fmt.Errorf("server worker: %w", h.serr)
			}
			return nil
		},
	}
}

// tcpTransport runs kernel TCP: the hosts get their addresses for the
// workload (the Homa daemons own eth0 otherwise: the kernel would answer
// their packets), a server, and a pool of connections per client.
func tcpTransport(cfg Config, n *topology, rate float64) transport {
	var srv *tcpServer
	var clients []*tcpClient
	return transport{
		name: "tcp",
		setup: func() error {
			if err := n.linuxAddrs(); err != nil {
				return err
			}
			var err error
			if srv, err = startTCPServer(n.server, hostIP(0)); err != nil {
				return err
			}
			for _, ns := range n.clients {
				c, err := newTCPClient(ns, hostIP(0), 16)
				if err != nil {
					return err
				}
				clients = append(clients, c)
			}
			return nil
		},
		reset: func() error { return nil },
		teardown: func() {
			for _, c := range clients {
				c.close()
			}
			if srv != nil {
				srv.close()
			}
			n.flushAddrs()
		},
		unloaded: func(w *Workload) (*Unloaded, error) {
			return tcpUnloaded(clients[0], ProbeSizes(w), cfg.Reps, probeGap(rate))
		},
		drive: func(w *Workload, sched [][]Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult {
			res := make([]driverResult, len(clients))
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i] = tcpDriver(c, sched[i], start, keep0, keep1, 10*time.Second, w.Max())
				}()
			}
			wg.Wait()
			return res
		},
		after: func(*RunResult) error {
			// A drained run closed its connections: reconnect.
			for i, c := range clients {
				c.mu.Lock()
				broken := len(c.all) == 0
				c.mu.Unlock()
				if broken {
					var err error
					if clients[i], err = newTCPClient(c.ns, hostIP(0), 16); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

// probeGap is the pause between two unloaded RPCs: twice the time the
// bottleneck's bucket (one 1600-byte frame) takes to fill at rate.
func probeGap(rate float64) time.Duration {
	return time.Duration(2 * 1600 * 8 / rate * 1e9)
}

// runWorkload runs t through every load of w at rate: the unloaded RTT
// first (a failure leaves the workload out for t, with a note), then per
// load the same seeded Poisson schedule for every transport, with the
// bottleneck's band counters and the load average around it.
func runWorkload(cfg Config, n *topology, w *Workload, wi int, rate float64, logf func(string, ...any), note func(string), t transport) (runs []*RunResult, err error) {
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
		sched := PoissonArrivals(w, len(n.clients), cfg.Period, rate, load, cfg.Seed+uint64(wi*100+li))
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

// Print writes the headline table: per run, the short messages'
// slowdown and the throughput achieved.
func Print(w io.Writer, res *Result) {
	fmt.Fprintf(w, "slowdown: %d clients -> 1 server, bottleneck per workload (%.0f RPC/s at the highest load, at most %s), %g s per run\n",
		res.Clients, res.RPCRate, rateName(res.RateBps), res.Seconds)
	fmt.Fprintf(w, "%-5s %-3s %4s %11s %8s %8s %9s %6s %10s %10s %13s %9s %10s\n", "tx", "W", "load", "rate", "offered", "done", "lost+fail", "late", "short P50", "short P99", "short P99 µs", "all P99", "max gap µs")
	for _, r := range res.Runs {
		sp50, sp99, sp99us := "-", "-", "-"
		if r.Short != nil {
			sp50, sp99, sp99us = fmt.Sprintf("%.2f", r.Short.P50), fmt.Sprintf("%.2f", r.Short.P99), fmt.Sprintf("%.0f", r.Short.P99RTTUs)
		}
		all := "-"
		if len(r.samples) > 0 {
			b := summarize(r.samples, r.Unloaded)
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
		fmt.Fprintf(w, "%-5s %-3s %3.0f%% %11s %8d %8d %9d %6s %10s %10s %13s %9s %10s\n", r.Transport, r.Workload, r.Load*100, rateName(r.RateBps), r.Offered, r.Done,
			r.Lost+r.Failed, late, sp50, sp99, sp99us, all, gs)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintln(w, "skipped:", sk)
	}
	fmt.Fprintf(w, "short: messages of at most %d bytes; slowdown = RTT / unloaded RTT of the size; µs: the RTT itself\n", ShortLimit)
	fmt.Fprintln(w, "late: sends >1 ms behind the Poisson schedule; '!' = over 5%: the harness was starved, the slowdowns measure the machine")
	fmt.Fprintln(w, "max gap: longest gap between two passes of any Homa daemon's polling loop (homa_loop_max_pass_gap_seconds)")
	for _, p := range res.Plots {
		fmt.Fprintln(w, "plot:", p)
	}
}

func readLoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}
