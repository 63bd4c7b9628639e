package client

import (
	"errors"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spinCheck is how many ring checks a spin makes between looks at the
// clock.
const spinCheck = 256

// spinYield is how long a spin polls between two yields of the processor
// (runtime.Gosched), which let goroutines that share the spinner's P run
// (an engine on the same P, in tests). A yield is not free: a goroutine
// locked to its thread, as a latency-critical worker's is, is handed to
// another thread of the runtime and back, two thread wake-ups, often on
// another CPU; and any yield may wake an idle thread to look for work.
// Once every spinCheck checks (every couple of µs) that was hundreds of
// thousands of wake-ups a second during a long wait: in perf starts the
// harness's threads, woken on the daemon's loop CPU, preempted its
// polling loop 10,000 to 30,000 times a second of 1 MB RPCs. Every 50 µs
// a goroutine sharing the P still gets its turn within a small RPC's
// time.
const spinYield = 50 * time.Microsecond

// yield gives up the processor; a test counts the calls.
var yield = runtime.Gosched

// sleepState is what a sleep needs, kept in the Client so that a wait
// allocates nothing.
type sleepState struct {
	pfd    [2]unix.PollFd // the eventfd, the control connection
	ts     unix.Timespec
	buf    [8]byte
	ctlBuf [64]byte // what lookControl reads
}

// errEnd is waitCQ's when the end of the wait passed with nothing read;
// each caller says it its own way (ErrWaitTimeout, ErrNoAnswer, ...).
var errEnd = errors.New("client: the wait's end passed")

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
// "Waiting" in shm/doc.go says, watching the control connection meanwhile
// (daemon.go). It returns nil once it has read at least one completion,
// errEnd when end (zero: none) passes first, ErrDaemonGone when the
// daemon has gone. A zero-time end in the past still reads what is there.
func (c *Client) waitCQ(end time.Time) error {
	if c.progress() > 0 {
		return nil
	}
	if c.gone {
		return ErrDaemonGone
	}
	if c.spin > 0 {
		if err := c.spinCQ(end); err != errEnd {
			return err
		}
	}
	for {
		now := time.Now()
		left := time.Duration(-1)
		if !end.IsZero() {
			if left = end.Sub(now); left <= 0 {
				c.flush() // empty-handed: pages kept back for a Send or Reply go now
				if c.daemonGone(now) {
					return c.lastLook()
				}
				return errEnd
			}
		}
		// Pages kept back for a Send or Reply go now: the client may
		// sleep long.
		c.flush()
		// Say we are about to sleep, then look once more: either the
		// engine sees the flag after pushing, or we see what it pushed.
		c.cq.SetWaiting(true)
		if c.cq.Len() > 0 {
			c.cq.SetWaiting(false)
			if c.progress() > 0 {
				return nil
			}
			continue
		}
		c.stats.Sleeps++
		woken := c.sleepFD(left)
		c.cq.SetWaiting(false)
		if c.progress() > 0 {
			return nil
		}
		if c.gone {
			return ErrDaemonGone
		}
		if woken {
			c.stats.Spurious++
		}
	}
}

// spinCQ polls the completion ring for the Spin option, or until end: nil
// once it has read a completion, errEnd when the spin is over,
// ErrDaemonGone when the daemon has gone.
func (c *Client) spinCQ(end time.Time) error {
	stop := time.Now().Add(c.spin)
	if !end.IsZero() && end.Before(stop) {
		stop = end
	}
	// The ring check is a load of the engine's index; the clock and the
	// control connection (at most once per controlCheck) come only every
	// spinCheck rounds, so that a completion is seen within tens of
	// nanoseconds, and a yield (for goroutines sharing this thread's P)
	// at most every spinYield.
	nextYield := time.Now().Add(spinYield)
	for i := 1; ; i++ {
		if c.progress() > 0 {
			return nil
		}
		if i%spinCheck == 0 {
			now := time.Now()
			if c.daemonGone(now) {
				return c.lastLook()
			}
			if !now.Before(stop) {
				return errEnd
			}
			if !now.Before(nextYield) {
				yield()
				nextYield = now.Add(spinYield)
			}
		}
	}
}

// sleepFD waits for the eventfd or the control connection to become
// readable, for up to left (no limit if negative), and resets the
// eventfd; a readable control connection is read (lookControl), which
// sets gone if the daemon closed it. It reports whether the eventfd was
// readable (false: the time ran out, a signal interrupted the wait, or
// only the control connection woke it).
func (c *Client) sleepFD(left time.Duration) bool {
	w := &c.sleep
	w.pfd[0] = unix.PollFd{Fd: int32(c.efd), Events: unix.POLLIN}
	w.pfd[1] = unix.PollFd{Fd: int32(c.ctl), Events: unix.POLLIN}
	var ts *unix.Timespec
	if left >= 0 {
		w.ts = unix.NsecToTimespec(int64(left))
		ts = &w.ts
	}
	n, _ := unix.Ppoll(w.pfd[:], ts, nil) // EINTR: n is 0, the caller rechecks
	if n <= 0 {
		return false
	}
	if w.pfd[1].Revents != 0 { // POLLIN, or POLLHUP / POLLERR: the daemon closed it
		c.lookControl()
	}
	if w.pfd[0].Revents&unix.POLLIN == 0 {
		return false
	}
	unix.Read(c.efd, w.buf[:]) // resets the counter; EAGAIN (already read) is fine
	return true
}
