package perf

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// Kernel TCP's side of the rate scenario: as many connections as Homa has
// RPCs outstanding, one RPC at a time on each, to the TCP peer's server
// (a goroutine per connection, over Go's epoll-based net package).

// tcpRate measures RPCs per second over TCP along path p.
func tcpRate(cfg RateConfig, p TCPPath) (RateRun, error) {
	srv, err := StartTCPServer(p.serverNS, p.listen)
	if err != nil {
		return RateRun{}, err
	}
	run, err := func() (RateRun, error) {
		conns := make([]*net.TCPConn, 0, cfg.Outstanding())
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range cfg.Outstanding() {
			c, err := TCPDial(p.clientNS, srv.addr)
			if err != nil {
				return RateRun{}, fmt.Errorf("connection %d: %w", len(conns), err)
			}
			conns = append(conns, c)
		}
		var stop atomic.Bool
		var done atomic.Int64
		// A deadline well past the run's end, so that no read blocks for
		// ever on a server that stopped answering.
		end := time.Now().Add(cfg.Warmup + cfg.Duration + workerEndWait)
		s := newRunSet(len(conns))
		for _, c := range conns {
			s.spawn(func() error { return tcpRateConn(c, cfg.Size, end, &stop, &done) })
		}
		run, err := rateWindow(cfg, p.name, nil, done.Load, s, nil)
		stop.Store(true)
		if werr := s.wait(); err == nil {
			err = werr
		}
		return run, err
	}()
	if cerr := srv.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("server: %w", cerr)
	}
	return run, err
}

// tcpRateConn does RPCs of size bytes on c, one at a time, counting each
// in done, until stop.
func tcpRateConn(c *net.TCPConn, size int, end time.Time, stop *atomic.Bool, done *atomic.Int64) error {
	if err := c.SetDeadline(end); err != nil {
		return err
	}
	req, resp := TCPMessage(size, false), make([]byte, 4+size)
	for !stop.Load() {
		if err := TCPRPC(c, req, resp); err != nil {
			return err
		}
		if !bytes.Equal(req, resp) {
			return fmt.Errorf("a response differs from its request")
		}
		done.Add(1)
	}
	return nil
}
