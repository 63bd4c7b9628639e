package perf

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// sdTCPPort is the TCP server's port.
const sdTCPPort = "5099"

// sdTCPServer answers every framed request with a 1-byte framed response.
type sdTCPServer struct {
	l     net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func sdStartTCPServer(ns, ip string) (*sdTCPServer, error) {
	l, err := sdListenIn(ns, "tcp4", ip+":"+sdTCPPort)
	if err != nil {
		return nil, err
	}
	s := &sdTCPServer{l: l, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	return s, nil
}

func (s *sdTCPServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	var hdr [4]byte
	buf := make([]byte, 64<<10)
	resp := []byte{0, 0, 0, 1, 1}
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		for n > 0 {
			k, err := c.Read(buf[:min(n, len(buf))])
			if err != nil {
				return
			}
			n -= k
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

func (s *sdTCPServer) close() {
	s.l.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// sdTCPClient is one client host's pool of connections to the server.
type sdTCPClient struct {
	ns, dst string
	pool    chan net.Conn
	mu      sync.Mutex
	all     []net.Conn
}

func newSDTCPClient(ns, dst string, initial int) (*sdTCPClient, error) {
	c := &sdTCPClient{ns: ns, dst: dst, pool: make(chan net.Conn, 4096)}
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

func (c *sdTCPClient) dial() (net.Conn, error) {
	conn, err := sdDialIn(c.ns, "tcp4", c.dst+":"+sdTCPPort)
	if err != nil {
		return nil, err
	}
	conn.(*net.TCPConn).SetNoDelay(true)
	c.mu.Lock()
	c.all = append(c.all, conn)
	c.mu.Unlock()
	return conn, nil
}

func (c *sdTCPClient) close() {
	c.mu.Lock()
	for _, conn := range c.all {
		conn.Close()
	}
	c.all = nil
	c.mu.Unlock()
}

// get takes an idle connection, or dials a new one.
func (c *sdTCPClient) get() (net.Conn, error) {
	select {
	case conn := <-c.pool:
		return conn, nil
	default:
		return c.dial()
	}
}

// rpc sends one request of len(req)-4 bytes (req is framed by rpc) and
// reads the response.
func sdTCPRPC(conn net.Conn, req []byte, size int) error {
	binary.BigEndian.PutUint32(req[:4], uint32(size))
	if _, err := conn.Write(req[:4+size]); err != nil {
		return err
	}
	var resp [5]byte
	if _, err := io.ReadFull(conn, resp[:]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(resp[:4]) != 1 {
		return errors.New("bad response frame")
	}
	return nil
}

// sdTCPDriver offers sched from c, open loop: each arrival runs in its
// own goroutine on a connection of its own (idle from the pool or new).
func sdTCPDriver(c *sdTCPClient, sched []SDArrival, start time.Time, keep0, keep1, drain time.Duration, maxSize int) sdDriverResult {
	var r sdDriverResult
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
		if now.Sub(start)-a.At > SDLate {
			r.late++
		}
		r.sent++
		wg.Add(1)
		go func(a SDArrival) {
			defer wg.Done()
			bp := bufs.Get().(*[]byte)
			defer bufs.Put(bp)
			t := time.Now()
			conn, err := c.get()
			if err == nil {
				if err = sdTCPRPC(conn, *bp, a.Size); err == nil {
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
				r.samples = append(r.samples, SDSample{Size: a.Size, RTT: rtt})
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

// sdTCPUnloaded measures the unloaded RTT of each size (sdProbe).
func sdTCPUnloaded(c *sdTCPClient, sizes []int, reps int, gap time.Duration) (*SDUnloaded, error) {
	conn, err := c.get()
	if err != nil {
		return nil, err
	}
	defer func() { c.pool <- conn }()
	buf := make([]byte, 4+sizes[len(sizes)-1])
	for range 20 {
		if err := sdTCPRPC(conn, buf, 1); err != nil {
			return nil, err
		}
	}
	return sdProbe(sizes, reps, gap, func(size int) error { return sdTCPRPC(conn, buf, size) })
}
