package slowdown

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

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

var serverAddr = client.Addr{IP: netip.AddrFrom4([4]byte{10, 77, 0, 1}), Port: 99}

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
				return h, fmt.Errorf("%s: %w; server log: %s", d.ns, err, perf.Tail(h.daemons[0].log, 2000))
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
		unloaded: func(w *workload.Workload) (*Unloaded, error) {
			return homaUnloaded(h.sessions[0][0], serverAddr, workload.ProbeSizes(w), cfg.Reps, probeGap(rate), payload)
		},
		drive: func(w *workload.Workload, sched [][]workload.Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult {
			// Each host's arrivals are dealt to its sessions in turn.
			var wg sync.WaitGroup
			per := make([][]driverResult, len(h.sessions))
			for i, ss := range h.sessions {
				per[i] = make([]driverResult, len(ss))
				for k, c := range ss {
					var sub []workload.Arrival
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

// homaServer answers every request on port 99 with one byte until
// stop. A reply that fails (the client gave the RPC up) is counted, not
// fatal; a failing Receive ends the server with *errp set.
func homaServer(c *client.Client, stop *atomic.Bool, wg *sync.WaitGroup, errp *error, replyFailed *atomic.Int64) {
	defer wg.Done()
	resp := []byte{1}
	for !stop.Load() {
		m, err := c.Receive(20 * time.Millisecond)
		if err != nil {
			if errors.Is(err, client.ErrWaitTimeout) {
				continue
			}
			*errp = err
			return
		}
		switch {
		case m.Request:
			// Not waiting for the daemon's answer: a burst of requests
			// is answered within one pass of its loop.
			if err := c.ReplyAsync(m, resp); err != nil {
				replyFailed.Add(1)
			}
		case m.Err != nil: // a reply the daemon refused: the RPC had ended
			replyFailed.Add(1)
		}
		m.Release()
	}
}

// inflightRPC is an RPC in flight.
type inflightRPC struct {
	t    time.Time
	size int
	keep bool
}

// homaDriver offers sched from c to dst, open loop, starting at start;
// RPCs sent in [keep0, keep1) are sampled. After the schedule it waits up
// to drain for the last responses.
func homaDriver(c *client.Client, dst client.Addr, sched []workload.Arrival, start time.Time, keep0, keep1, drain time.Duration, payload []byte) driverResult {
	var r driverResult
	inflight := map[uint64]inflightRPC{}
	i := 0
	var end time.Time
	last := time.Now()
	take := func(m *client.Message) {
		now := time.Now()
		rpc, ok := inflight[m.ID]
		if ok {
			delete(inflight, m.ID)
			if m.Err != nil {
				r.failed++
				if r.firstErr == nil {
					r.firstErr = m.Err
				}
			} else {
				r.done++
				if rpc.keep {
					r.samples = append(r.samples, Sample{Size: rpc.size, RTT: now.Sub(rpc.t)})
				}
			}
		}
		m.Release()
	}
	for {
		now := time.Now()
		r.maxGap = max(r.maxGap, now.Sub(last))
		last = now
		el := now.Sub(start)
		for i < len(sched) && sched[i].At <= el {
			a := sched[i]
			r.maxLag = max(r.maxLag, el-a.At)
			if el-a.At > Late {
				r.late++
			}
			t := time.Now()
			id, err := c.Send(dst, payload[:a.Size])
			r.maxCall = max(r.maxCall, time.Since(t))
			i++
			if err != nil {
				r.failed++
				if r.firstErr == nil {
					r.firstErr = err
				}
				continue
			}
			r.sent++
			inflight[id] = inflightRPC{t: t, size: a.Size, keep: a.At >= keep0 && a.At < keep1}
			el = time.Since(start)
		}
		wait := 5 * time.Millisecond
		if i < len(sched) {
			wait = min(wait, max(sched[i].At-el, 0))
		} else {
			if len(inflight) == 0 {
				break
			}
			if end.IsZero() {
				end = time.Now().Add(drain)
			} else if time.Now().After(end) {
				break
			}
		}
		t0 := time.Now()
		m, err := c.Receive(wait)
		r.maxOver = max(r.maxOver, time.Since(t0)-wait)
		if err != nil {
			if !errors.Is(err, client.ErrWaitTimeout) && r.firstErr == nil {
				r.firstErr = err
			}
			continue
		}
		take(m)
		for {
			m, err := c.Receive(0)
			if err != nil {
				break
			}
			take(m)
		}
	}
	r.lost = len(inflight)
	c.AbortAll()
	return r
}

// homaUnloaded measures the unloaded RTT of each size (probe).
func homaUnloaded(c *client.Client, dst client.Addr, sizes []int, reps int, gap time.Duration, payload []byte) (*Unloaded, error) {
	return probe(sizes, reps, gap, func(size int) error {
		m, err := c.Call(dst, payload[:size], 30*time.Second)
		if err == nil {
			m.Release()
		}
		return err
	})
}

// warmUp calls dst until an RPC succeeds (ARP, daemon start-up).
func warmUp(c *client.Client, dst client.Addr) error {
	var err error
	for range 50 {
		var m *client.Message
		if m, err = c.Call(dst, []byte{0}, time.Second); err == nil {
			m.Release()
			for range 20 {
				if m, err = c.Call(dst, []byte{0}, time.Second); err != nil {
					return err
				}
				m.Release()
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no RPC to %v succeeded: %w", dst, err)
}
