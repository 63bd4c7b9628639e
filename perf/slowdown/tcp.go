package slowdown

import (
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
	"golang.org/x/sys/unix"
)

// tcpPort is the TCP server's port: a tcppeer server, which answers each
// request with its 1-byte acknowledgement (tcppeer.Ask).
const tcpPort = "5099"

// tcpClient is one client host's pool of connections to the server.
type tcpClient struct {
	ns, dst string
	pool    chan net.Conn
	mu      sync.Mutex
	all     []net.Conn
}

func newTCPClient(ns, dst string, initial int) (*tcpClient, error) {
	c := &tcpClient{ns: ns, dst: dst, pool: make(chan net.Conn, 4096)}
	for range initial {
		conn, err := c.dial()
		if err != nil {
			c.close()
			return nil, err
		}
		c.pool <- conn
	}
	return c, nil
}

func (c *tcpClient) dial() (net.Conn, error) {
	conn, err := tcppeer.Dial(c.ns, c.dst+":"+tcpPort)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.all = append(c.all, conn)
	c.mu.Unlock()
	return conn, nil
}

func (c *tcpClient) close() {
	c.mu.Lock()
	for _, conn := range c.all {
		conn.Close()
	}
	c.all = nil
	c.mu.Unlock()
}

// get takes an idle connection, or dials a new one.
func (c *tcpClient) get() (net.Conn, error) {
	select {
	case conn := <-c.pool:
		return conn, nil
	default:
		return c.dial()
	}
}

// tcpTransport runs kernel TCP: the hosts get their addresses for the
// workload (the Homa daemons own eth0 otherwise: the kernel would answer
// their packets), a server, and a pool of connections per client.
func tcpTransport(cfg Config, n *topology, rate float64) transport {
	var srv *tcppeer.Server
	var clients []*tcpClient
	return transport{
		name: "tcp",
		setup: func() error {
			if err := n.linuxAddrs(); err != nil {
				return err
			}
			var err error
			if srv, err = tcppeer.StartServer(n.server, hostIP(0)+":"+tcpPort); err != nil {
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
				srv.Close()
			}
			n.flushAddrs()
		},
		unloaded: func(w *workload.Workload) (*Unloaded, error) {
			return tcpUnloaded(clients[0], workload.ProbeSizes(w), cfg.Reps, probeGap(rate))
		},
		drive: func(w *workload.Workload, sched [][]workload.Arrival, start time.Time, keep0, keep1 time.Duration) []driverResult {
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

// tcpDriver offers sched from c, open loop: each arrival runs in its
// own goroutine on a connection of its own (idle from the pool or new).
func tcpDriver(c *tcpClient, sched []workload.Arrival, start time.Time, keep0, keep1, drain time.Duration, maxSize int) driverResult {
	var r driverResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	bufs := sync.Pool{New: func() any { b := make([]byte, 4+maxSize); return &b }}
	// The driver sleeps in the kernel, on its own thread, as the Homa
	// drivers do (in their eventfd wait): Go's timers woke it more than
	// 1 ms late for 5-10% of the arrivals on this busy machine.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	last := time.Now()
	for _, a := range sched {
		if d := time.Until(start.Add(a.At)); d > 0 {
			ts = unix.NsecToTimespec(int64(d))
			unix.Nanosleep(&ts, nil) // EINTR: a little early, which the next check tolerates
		}
		now := time.Now()
		r.maxGap = max(r.maxGap, now.Sub(last))
		last = now
		r.maxLag = max(r.maxLag, now.Sub(start)-a.At)
		if now.Sub(start)-a.At > Late {
			r.late++
		}
		r.sent++
		wg.Add(1)
		go func(a workload.Arrival) {
			defer wg.Done()
			bp := bufs.Get().(*[]byte)
			defer bufs.Put(bp)
			t := time.Now()
			conn, err := c.get()
			if err == nil {
				if err = tcppeer.Ask(conn, *bp, a.Size); err == nil {
					c.pool <- conn
				} else {
					conn.Close()
				}
			}
			rtt := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.failed++
				if r.firstErr == nil {
					r.firstErr = err
				}
				return
			}
			r.done++
			if a.At >= keep0 && a.At < keep1 {
				r.samples = append(r.samples, Sample{Size: a.Size, RTT: rtt})
			}
		}(a)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain):
		// Unblock the stragglers: close every connection, count them lost.
		mu.Lock()
		before := r.done + r.failed
		mu.Unlock()
		c.close()
		<-done
		mu.Lock()
		r.lost = r.sent - before
		r.failed -= r.lost
		mu.Unlock()
	}
	return r
}

// tcpUnloaded measures the unloaded RTT of each size (probe).
func tcpUnloaded(c *tcpClient, sizes []int, reps int, gap time.Duration) (*Unloaded, error) {
	conn, err := c.get()
	if err != nil {
		return nil, err
	}
	defer func() { c.pool <- conn }()
	buf := make([]byte, 4+sizes[len(sizes)-1])
	for range 20 {
		if err := tcppeer.Ask(conn, buf, 1); err != nil {
			return nil, err
		}
	}
	return probe(sizes, reps, gap, func(size int) error { return tcppeer.Ask(conn, buf, size) })
}
