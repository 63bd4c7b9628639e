package shm

import (
	"errors"
	"fmt"
	"net"
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

// DoorbellRequest is what a worker writes on its control connection to get
// the daemon's doorbell (FeatureDoorbell); the answer is the same line with
// the eventfd, or "error <text>\n".
const DoorbellRequest = "doorbell\n"

// requests serves what an attached worker writes on its control
// connection until it closes: one doorbell request; anything else, or a
// second request, is answered with an error line and otherwise ignored.
// A worker can make it write at most one line per line it writes.
func (s *Server) requests(c *net.UnixConn, sess *Session) {
	bell := s.cfg.Doorbell
	if sess.doorbell > 2 && bell > 2 {
		bell = sess.doorbell
	}
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
			case bell <= 2:
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

// AskDoorbell asks the daemon for its doorbell (FeatureDoorbell must be in
// the header) and keeps it in a.Doorbell. Call it right after Dial, before
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
