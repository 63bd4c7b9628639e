package shm

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// The daemon's loop sleeps on its doorbells: each session has one of its
// own, an eventfd (Session.DoorbellFD) that its worker gets a copy of
// (AskDoorbell) and writes when it finds its submission ring's wait flag
// raised after a push. A worker holds no other session's, so it can ring
// the loop but cannot take another worker's ring: reading its copy resets
// its own counter alone. The loop watches them all through one epoll set
// (Bells), edge-triggered: every write is a wake-up, and the daemon never
// reads a descriptor a worker shares, so a worker that empties its
// counter, or clears O_NONBLOCK on it (a flag of the description both
// hold), cannot make the loop's read block. The daemon's own wake-ups
// (attach, detach, stop) go through a Doorbell in the same set, which no
// worker holds.

// Doorbell is an eventfd that the daemon's own goroutines write to wake
// its loop (attaches, detaches, Stop); it is never given to a worker.
type Doorbell struct{ fd int }

// NewDoorbell makes a doorbell (a non-blocking, close-on-exec eventfd).
func NewDoorbell() (*Doorbell, error) {
	fd, err := newBellFD()
	if err != nil {
		return nil, err
	}
	return &Doorbell{fd: fd}, nil
}

func newBellFD() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("doorbell eventfd: %w", err)
	}
	return fd, nil
}

// FD is the eventfd, -1 once closed.
func (d *Doorbell) FD() int { return d.fd }

// Ring writes the eventfd (the set watches it edge-triggered and nothing
// reads it: its counter grows by one a ring, and never fills).
func (d *Doorbell) Ring() { RingFD(d.fd) }

// Close closes the eventfd; only once nothing polls it any more.
func (d *Doorbell) Close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// Bells is what a sleeping loop polls: an epoll set of doorbells (the
// sessions' and the daemon's own), readable when one of them was written
// since the last Drain. Add and Remove may run on any goroutine; FD, Wait
// and Drain on the loop's.
type Bells struct {
	ep  int
	evs []unix.EpollEvent
	pfd [1]unix.PollFd // Wait's
}

// bellsBatch is how many rung doorbells one epoll_wait takes, and
// bellsRounds how many batches one Drain takes at most: more stay pending
// and wake the next sleep at once.
const (
	bellsBatch  = 64
	bellsRounds = 16
)

// NewBells makes an empty set.
func NewBells() (*Bells, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("doorbells: epoll_create1: %w", err)
	}
	b := &Bells{ep: ep, evs: make([]unix.EpollEvent, bellsBatch)}
	b.pfd[0] = unix.PollFd{Fd: int32(ep), Events: unix.POLLIN}
	return b, nil
}

// FD is the epoll descriptor: readable while a doorbell rang and was not
// drained yet.
func (b *Bells) FD() int { return b.ep }

// Add watches doorbell fd (an eventfd) until Remove. Every write to it
// after Add rings once, whatever its counter.
func (b *Bells) Add(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(fd)}
	if err := unix.EpollCtl(b.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("watch a doorbell (epoll_ctl: %w; ENOSPC: raise fs.epoll.max_user_watches)", err)
	}
	return nil
}

// Remove stops watching fd; call it before fd is closed.
func (b *Bells) Remove(fd int) {
	_ = unix.EpollCtl(b.ep, unix.EPOLL_CTL_DEL, fd, nil)
}

// Drain takes the rings since the last Drain, so that FD is not readable
// any more unless a doorbell rings again, and returns how many doorbells
// rang (at most bellsBatch*bellsRounds; the rest wait for the next
// Drain). It reads no doorbell: edge-triggered, the set alone keeps them.
func (b *Bells) Drain() int {
	rung := 0
	for range bellsRounds {
		n, err := unix.EpollWait(b.ep, b.evs, 0)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 {
			break
		}
		rung += n
		if n < len(b.evs) {
			break
		}
	}
	return rung
}

// Wait sleeps until a doorbell rings or timeout passes, and reports
// whether one rang (drained).
func (b *Bells) Wait(timeout time.Duration) bool {
	ts := unix.NsecToTimespec(int64(timeout))
	if n, _ := unix.Ppoll(b.pfd[:], &ts, nil); n <= 0 {
		return false
	}
	return b.Drain() > 0
}

// Close closes the set; only once nothing polls it any more.
func (b *Bells) Close() {
	if b.ep >= 0 {
		unix.Close(b.ep)
		b.ep = -1
	}
}

var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// RingFD adds 1 to eventfd fd, as a worker rings its doorbell. Errors are
// ignored: EAGAIN comes only from a counter that its worker itself filled
// (about 2^64 in it).
func RingFD(fd int) { _, _ = unix.Write(fd, one) }

// DoorbellRequest is what a worker writes on its control connection to get
// its session's doorbell (FeatureDoorbell); the answer is the same line
// with the eventfd, or "error <text>\n".
const DoorbellRequest = "doorbell\n"

// requests serves what an attached worker writes on its control
// connection until it closes: one doorbell request; anything else, or a
// second request, is answered with an error line and otherwise ignored.
// A worker can make it write at most one line per line it writes.
func (s *Server) requests(c *net.UnixConn, sess *Session) {
	bell := sess.bell
	buf := make([]byte, 64)
	var line []byte
	given := false
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		for _, b := range buf[:n] {
			if b != '\n' {
				if len(line) < len(buf) {
					line = append(line, b)
				}
				continue
			}
			switch {
			case string(line)+"\n" != DoorbellRequest:
				c.Write([]byte("error unknown request\n"))
			case bell < 0:
				c.Write([]byte("error this daemon has no doorbell\n"))
			case given:
				c.Write([]byte("error the doorbell was given already\n"))
			default:
				given = true
				c.WriteMsgUnix([]byte(DoorbellRequest), unix.UnixRights(bell), nil)
			}
			line = line[:0]
		}
	}
}

// AskDoorbell asks the daemon for the session's doorbell (FeatureDoorbell
// must be in the header) and keeps it in a.Doorbell. Call it right after Dial, before
// anything else reads the control connection.
func (a *Attach) AskDoorbell() error {
	if a.Layout.Features&FeatureDoorbell == 0 {
		return errors.New("attach: the daemon offers no doorbell")
	}
	if a.Doorbell >= 0 {
		return nil
	}
	if _, err := a.conn.Write([]byte(DoorbellRequest)); err != nil {
		return fmt.Errorf("attach: ask for the doorbell: %w", err)
	}
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer a.conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := a.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return fmt.Errorf("attach: ask for the doorbell: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, _ = unix.ParseUnixRights(&msgs[0])
	}
	if string(buf[:n]) != DoorbellRequest || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("attach: ask for the doorbell: daemon says %q with %d descriptors", buf[:n], len(fds))
	}
	a.Doorbell = fds[0]
	return nil
}
