package lcore

import (
	"time"

	"golang.org/x/sys/unix"
)

// bell is a loop's side of its Doorbell: the poll set, and what it counted.
// The zero bell (no Doorbell) sleeps with nanosleep.
type bell struct {
	d         *Doorbell
	pfds      []unix.PollFd
	drain     [8]byte
	rung      uint64 // sleeps a write to an FD ended
	refrained uint64 // sleeps Arm called off
}

func newBell(d *Doorbell) bell {
	if d == nil || len(d.FDs) == 0 {
		return bell{}
	}
	b := bell{d: d, pfds: make([]unix.PollFd, len(d.FDs))}
	for i, fd := range d.FDs {
		b.pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	return b
}

// sleep sleeps for d, or until the doorbell rings; it returns false,
// without sleeping, when Arm found work waiting.
func (b *bell) sleep(d time.Duration) bool {
	ts := unix.NsecToTimespec(int64(d))
	if b.d == nil {
		_ = unix.Nanosleep(&ts, nil)
		return true
	}
	if !b.d.Arm() {
		b.d.Disarm()
		b.refrained++
		return false
	}
	n, _ := unix.Ppoll(b.pfds, &ts, nil) // EINTR: as if the time passed
	b.d.Disarm()
	if n > 0 {
		b.rung++
		for i := range b.pfds {
			if b.pfds[i].Revents&unix.POLLIN != 0 {
				if b.d.Drain != nil {
					b.d.Drain(i)
				} else {
					_, _ = unix.Read(int(b.pfds[i].Fd), b.drain[:]) // reset the eventfd; EAGAIN is fine
				}
			}
			b.pfds[i].Revents = 0
		}
	}
	return true
}
