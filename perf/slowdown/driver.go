package slowdown

import (
	"fmt"
	"time"
)

// Late is how late against its Poisson time a send counts as late.
const Late = time.Millisecond

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
