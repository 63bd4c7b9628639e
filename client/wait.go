package client

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spinCheck is how many ring checks a spin makes between looks at the
// clock.
const spinCheck = 256

// sleepState is what a sleep needs, kept in the Client so that a wait
// allocates nothing.
type sleepState struct {
	pfd [1]unix.PollFd
	ts  unix.Timespec
	buf [8]byte
}

// deadline returns the end of a wait of timeout: the zero time (no end)
// for a negative timeout, now for 0.
func deadline(timeout time.Duration) time.Time {
	if timeout < 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// waitCQ reads and dispatches completions, waiting for some if there are
// none: it spins for the Spin option, then sleeps on the eventfd as
// "Waiting" in shm/doc.go says. It returns true once it has read at least
// one completion, false when end (zero: none) passes first. A zero-time
// end in the past still reads what is there.
func (c *Client) waitCQ(end time.Time) bool {
	if c.progress() > 0 {
		return true
	}
	if c.spin > 0 {
		stop := time.Now().Add(c.spin)
		if !end.IsZero() && end.Before(stop) {
			stop = end
		}
		// The ring check is a load of the engine's index; the clock and
		// a yield (for goroutines sharing this thread's P, such as an
		// engine in tests) come only every spinCheck rounds, so that a
		// completion is seen within tens of nanoseconds.
		for i := 1; ; i++ {
			if c.progress() > 0 {
				return true
			}
			if i%spinCheck == 0 {
				if !time.Now().Before(stop) {
					break
				}
				runtime.Gosched()
			}
		}
	}
	for {
		left := time.Duration(-1)
		if !end.IsZero() {
			if left = time.Until(end); left <= 0 {
				return false
			}
		}
		// Say we are about to sleep, then look once more: either the
		// engine sees the flag after pushing, or we see what it pushed.
		c.cq.SetWaiting(true)
		if c.cq.Len() > 0 {
			c.cq.SetWaiting(false)
			if c.progress() > 0 {
				return true
			}
			continue
		}
		c.stats.Sleeps++
		woken := c.sleepFD(left)
		c.cq.SetWaiting(false)
		if c.progress() > 0 {
			return true
		}
		if woken {
			c.stats.Spurious++
		}
	}
}

// sleepFD waits for the eventfd to become readable, for up to left (no
// limit if negative), and resets it. It reports whether the eventfd was
// readable (false: the time ran out, or a signal interrupted the wait).
func (c *Client) sleepFD(left time.Duration) bool {
	w := &c.sleep
	w.pfd[0] = unix.PollFd{Fd: int32(c.efd), Events: unix.POLLIN}
	var ts *unix.Timespec
	if left >= 0 {
		w.ts = unix.NsecToTimespec(int64(left))
		ts = &w.ts
	}
	n, _ := unix.Ppoll(w.pfd[:], ts, nil) // EINTR: n is 0, the caller rechecks
	if n <= 0 || w.pfd[0].Revents&unix.POLLIN == 0 {
		return false
	}
	unix.Read(c.efd, w.buf[:]) // resets the counter; EAGAIN (already read) is fine
	return true
}
