package client

import (
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"golang.org/x/sys/unix"
)

// Noticing that the daemon has gone. The daemon never writes on the
// control connection after the greeting, and the kernel closes its end
// when the daemon exits, is killed or ends this session; so the
// connection's descriptor turning readable, at end of file, is how a
// worker learns that no completion will ever come (shm/doc.go,
// "Attaching"). A wait looks at it only when it has found nothing on the
// completion ring: the sleep polls it together with the eventfd, a spin
// reads it once per controlCheck, and so does a wait whose time ran out
// before it says so. While completions flow, nothing here runs.

// controlCheck is how often a spinning or empty-handed wait reads the
// control connection: a read is a system call, and a wait notices the
// daemon's end at most this late.
const controlCheck = time.Millisecond

// controlFD returns the descriptor of a's control connection. Attach owns
// it (non-blocking, open until Attach.Close); the Client only polls and
// reads it, from the goroutine that uses the Client, which is also the
// only one that may close it.
func controlFD(a *shm.Attach) (int, error) {
	raw, err := a.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("client: control connection: %w", err)
	}
	fd := -1
	if err := raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1, fmt.Errorf("client: control connection: %w", err)
	}
	return fd, nil
}

// usable returns why the Client can take no call, or nil.
func (c *Client) usable() error {
	switch {
	case c.closed:
		return ErrClosed
	case c.gone:
		return ErrDaemonGone
	}
	return nil
}

// daemonGone reports whether the daemon is gone, reading the control
// connection if controlCheck has passed since the last read. now is the
// caller's clock reading.
func (c *Client) daemonGone(now time.Time) bool {
	if c.gone {
		return true
	}
	if now.Before(c.nextLook) {
		return false
	}
	c.nextLook = now.Add(controlCheck)
	return c.lookControl()
}

// lookControl reads the control connection without blocking and reports
// whether the daemon has closed it (end of file, or an error such as a
// reset); then every call fails with ErrDaemonGone. Nothing to read means
// the daemon is there. Bytes it sent, though the protocol has none, are
// read and dropped, so that the descriptor does not stay readable.
func (c *Client) lookControl() bool {
	n, err := unix.Read(c.ctl, c.sleep.ctlBuf[:])
	if err == unix.EAGAIN || err == unix.EINTR || (err == nil && n > 0) {
		return false
	}
	c.gone = true
	return true
}

// lastLook is what a wait returns once it finds the daemon gone: nil if
// the ring still holds completions the daemon pushed before it went (they
// are dispatched; the caller looks at what it waits for once more),
// ErrDaemonGone otherwise.
func (c *Client) lastLook() error {
	if c.progress() > 0 {
		return nil
	}
	return ErrDaemonGone
}
