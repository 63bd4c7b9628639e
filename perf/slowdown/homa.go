package slowdown

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// daemon is one homa-dpdk run process in a host namespace.
type daemon struct {
	ns     string
	ip     string
	socket string
	log    string
	cmd    *exec.Cmd
	done   chan error
}

const metricsAddr = "127.0.0.1:9464"

// startDaemon runs `homa-dpdk run` in ns on its eth0.
func startDaemon(bin, dir, ns, ip, linkSpeed, eal, protocol, runtime string) (*daemon, error) {
	d := &daemon{ns: ns, ip: ip, socket: filepath.Join(dir, ns+".sock"), log: filepath.Join(dir, ns+".log")}
	cfg := fmt.Sprintf(`eal: [%s, "--no-pci", "--no-huge", "-m", "256", "--file-prefix", "%s", "--vdev", "net_af_packet0,iface=eth0"]
lcores: [1]
ports:
  - device: net_af_packet0
    address: %s/24
    link_speed: %s
metrics:
  address: %s
log:
  level: warn
protocol:
%sruntime:
  idle: adaptive
%sworkers:
  socket: %s
  max_bytes: 67108864
  pool_bytes: 536870912
  max_outstanding: 4096
`, eal, ns, ip, linkSpeed, metricsAddr, protocol, runtime, d.socket)
	path := filepath.Join(dir, ns+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	out, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	d.cmd = exec.Command("ip", "netns", "exec", ns, bin, "run", "--config", path)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no daemon outlives the harness
	if err := d.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	d.done = make(chan error, 1)
	go func() { d.done <- d.cmd.Wait(); out.Close() }()
	return d, nil
}

// dial attaches a worker, waiting for the daemon to come up.
func (d *daemon) dial(spin time.Duration) (*client.Client, error) {
	end := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(d.socket, client.Options{Spin: spin})
		if err == nil {
			return c, nil
		}
		select {
		case e := <-d.done:
			d.done <- e
			return nil, fmt.Errorf("daemon in %s exited (%v): %s", d.ns, e, d.tail())
		default:
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("worker socket of %s: %w; log: %s", d.ns, err, d.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail returns the end of the daemon's log.
func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// stop interrupts the daemon and waits for it (kills it after 10 s).
func (d *daemon) stop() {
	if d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case e := <-d.done:
		d.done <- e
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// counterLine matches one homa_engine_total sample of /metrics.
var counterLine = regexp.MustCompile(`^homa_engine_total\{counter="([a-zA-Z_]+)"[^}]*\} ([0-9.e+]+)$`)

// metrics reads the daemon's /metrics (in its namespace): the longest gap
// between two passes of its loop since it started
// (homa_loop_max_pass_gap_seconds) and its engine counters that are not 0
// (homa_engine_total, summed over ports).
func (d *daemon) metrics() (gap float64, counters map[string]float64, err error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		Dial:              func(network, addr string) (net.Conn, error) { return dialIn(d.ns, network, addr) },
	}}
	resp, err := hc.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	gap = -1.0
	counters = map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := counterLine.FindStringSubmatch(l); m != nil {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil && v != 0 {
				counters[m[1]] += v
			}
			continue
		}
		if !strings.HasPrefix(l, "homa_loop_max_pass_gap_seconds") {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && v > gap {
			gap = v
		}
	}
	if gap < 0 {
		return 0, counters, errors.New("no homa_loop_max_pass_gap_seconds in /metrics")
	}
	return gap, counters, nil
}

// Late is how late against its Poisson time a send counts as late.
const Late = time.Millisecond

// inflightRPC is an RPC in flight.
type inflightRPC struct {
	t    time.Time
	size int
	keep bool
}

// driverResult is what one client's driver measured.
type driverResult struct {
	samples    []Sample
	sent, done int
	failed     int
	lost       int // not answered before the drain ended
	maxLag     time.Duration
	maxGap     time.Duration // longest time between two passes of the driver's loop (waits included)
	firstErr   error
	late       int           // sends more than Late after their Poisson time
	maxCall    time.Duration // longest Send (Homa) or connection get+write (TCP) call
	maxOver    time.Duration // longest a Receive overran its timeout (Homa)
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

// homaDriver offers sched from c to dst, open loop, starting at start;
// RPCs sent in [keep0, keep1) are sampled. After the schedule it waits up
// to drain for the last responses.
func homaDriver(c *client.Client, dst client.Addr, sched []Arrival, start time.Time, keep0, keep1, drain time.Duration, payload []byte) driverResult {
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

// probe measures the median RTT of each size, one RPC (rpc) at a time,
// reps of each (a quarter as many above 100 KB, at least 3) after two
// that are not kept (they wake the loops up), with gap between two RPCs
// so that the bottleneck's bucket is full again: each RPC meets an idle
// link.
func probe(sizes []int, reps int, gap time.Duration, rpc func(size int) error) (*Unloaded, error) {
	u := &Unloaded{}
	for _, s := range sizes {
		n := reps
		if s > 100_000 {
			n = max(3, reps/4)
		}
		var v []float64
		for k := range n + 2 {
			time.Sleep(gap)
			t := time.Now()
			if err := rpc(s); err != nil {
				return nil, fmt.Errorf("unloaded %d bytes: %w", s, err)
			}
			if k >= 2 {
				v = append(v, float64(time.Since(t))/1e3)
			}
		}
		u.Sizes = append(u.Sizes, s)
		u.RTTUs = append(u.RTTUs, median(v))
	}
	return u, nil
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
