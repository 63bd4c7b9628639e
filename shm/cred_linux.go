package shm

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Who may attach: the socket's mode and group decide who can connect at
// all; the peer's credentials, taken from the connection (SO_PEERCRED),
// decide who attaches.

// allowed applies the allow-lists; root is always allowed.
func (s *Server) allowed(uid, gid int) bool {
	return uid == 0 || slices.Contains(s.cfg.AllowUIDs, uid) || slices.Contains(s.cfg.AllowGIDs, gid)
}

// admitted asks the daemon's own check (ServerConfig.Admit), if any.
func (s *Server) admitted(cred *unix.Ucred) bool {
	return s.cfg.Admit == nil || s.cfg.Admit(int(cred.Uid), int(cred.Gid), int(cred.Pid))
}

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	err = raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil {
		return nil, err
	}
	return cred, cerr
}

// chownGroup gives the socket at path to group (a name or a numeric
// gid); "" leaves it as it is.
func chownGroup(path, group string) error {
	if group == "" {
		return nil
	}
	gid, err := lookupGroup(group)
	if err != nil {
		return fmt.Errorf("socket group %q: %w", group, err)
	}
	if err := os.Chown(path, -1, gid); err != nil {
		return fmt.Errorf("socket group %q: %w", group, err)
	}
	return nil
}

// lookupGroup reads a group name or a numeric gid.
func lookupGroup(group string) (int, error) {
	if gid, err := strconv.Atoi(group); err == nil {
		if gid < 0 {
			return 0, fmt.Errorf("gid %d is negative", gid)
		}
		return gid, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}
