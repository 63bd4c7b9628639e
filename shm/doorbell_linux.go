package shm

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Doorbell is an eventfd that wakes a sleeping polling loop: the daemon's
// side makes one per loop (ServerConfig.Doorbell) and polls it while it
// sleeps; workers that got a copy (Attach.AskDoorbell) ring it when they
// find their submission ring's wait flag raised after a push.
type Doorbell struct{ fd int }

// NewDoorbell makes a doorbell (a non-blocking, close-on-exec eventfd).
func NewDoorbell() (*Doorbell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("doorbell eventfd: %w", err)
	}
	return &Doorbell{fd: fd}, nil
}

// FD is the eventfd, -1 once closed.
func (d *Doorbell) FD() int { return d.fd }

// Ring writes the eventfd (a full counter is as good as a ring: EAGAIN is
// ignored).
func (d *Doorbell) Ring() { RingFD(d.fd) }

// Close closes the eventfd; only once nothing polls it any more.
func (d *Doorbell) Close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// Wait sleeps until the doorbell rings or d passes, and reports whether
// it rang (the eventfd is read back to zero).
func (d *Doorbell) Wait(timeout time.Duration) bool {
	ts := unix.NsecToTimespec(int64(timeout))
	p := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLIN}}
	if n, _ := unix.Ppoll(p, &ts, nil); n <= 0 {
		return false
	}
	var b [8]byte
	_, _ = unix.Read(d.fd, b[:])
	return true
}

var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// RingFD adds 1 to eventfd fd, as a worker rings a daemon's doorbell.
func RingFD(fd int) { _, _ = unix.Write(fd, one) }
