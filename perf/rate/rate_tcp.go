package rate

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// Kernel TCP's side of the rate scenario: as many connections as Homa has
// RPCs outstanding, one RPC at a time on each, to the TCP peer's server
// (a goroutine per connection, over Go's epoll-based net package).

// tcpRate measures RPCs per second over TCP along path p.
func tcpRate(cfg Config, p tcppeer.Path) (Run, error) {
	var run Run
	err := tcppeer.Serve(p, cfg.Outstanding(), func(conns []*net.TCPConn) error {
		var stop atomic.Bool
		var done atomic.Int64
		// A deadline well past the run's end, so that no read blocks for
		// ever on a server that stopped answering.
		end := time.Now().Add(cfg.Warmup + cfg.Duration + workerEndWait)
		s := newRunSet(len(conns))
		for _, c := range conns {
			s.spawn(func() error { return tcpRateConn(c, cfg.Size, end, &stop, &done) })
		}
		var err error
		run, err = rateWindow(cfg, p.Name, nil, done.Load, s, nil)
		stop.Store(true)
		if werr := s.wait(); err == nil {
			err = werr
		}
		return err
	})
	return run, err
}

// tcpRateConn does RPCs of size bytes on c, one at a time, counting each
// in done, until stop.
func tcpRateConn(c *net.TCPConn, size int, end time.Time, stop *atomic.Bool, done *atomic.Int64) error {
	if err := c.SetDeadline(end); err != nil {
		return err
	}
	req, resp := tcppeer.Message(size, false), make([]byte, 4+size)
	for !stop.Load() {
		if err := tcppeer.RPC(c, req, resp); err != nil {
			return err
		}
		if !bytes.Equal(req, resp) {
			return fmt.Errorf("a response differs from its request")
		}
		done.Add(1)
	}
	return nil
}
