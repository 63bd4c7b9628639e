package shm

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Who may attach: the socket's mode and group decide who can connect at
// all; the peer's credentials, taken from the connection (SO_PEERCRED,
// and SO_PEERGROUPS for its supplementary groups), decide who attaches.

// allowed applies the allow-lists to the peer of c: root always, a uid
// on AllowUIDs, or a gid on AllowGIDs, the primary one or any of the
// supplementary groups (read only when the others did not decide).
func (s *Server) allowed(c *net.UnixConn, cred *unix.Ucred) bool {
	uid, gid := int(cred.Uid), int(cred.Gid)
	if uid == 0 || slices.Contains(s.cfg.AllowUIDs, uid) || slices.Contains(s.cfg.AllowGIDs, gid) {
		return true
	}
	if len(s.cfg.AllowGIDs) == 0 {
		return false
	}
	groups, err := peerGroups(c, int(cred.Pid))
	if err != nil {
		return false // refused, like a peer whose credentials cannot be read
	}
	return slices.ContainsFunc(groups, func(g int) bool { return slices.Contains(s.cfg.AllowGIDs, g) })
}

// peerGroups are the supplementary groups of c's peer: SO_PEERGROUPS, the
// groups it had when it connected (Linux 4.13 and later), or where the
// kernel lacks it the "Groups:" line of /proc/PID/status for the pid
// SO_PEERCRED named — the groups that process has now, if it still runs.
func peerGroups(c *net.UnixConn, pid int) ([]int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var gids []uint32
	var gerr error
	if err := raw.Control(func(fd uintptr) { gids, gerr = getsockoptPeerGroups(int(fd)) }); err != nil {
		return nil, err
	}
	if gerr == nil {
		groups := make([]int, len(gids))
		for i, g := range gids {
			groups[i] = int(g)
		}
		return groups, nil
	}
	if !errors.Is(gerr, unix.ENOPROTOOPT) {
		return nil, fmt.Errorf("SO_PEERGROUPS: %w", gerr)
	}
	return procGroups(pid)
}

// procGroups reads the supplementary groups of process pid from
// /proc/PID/status.
func procGroups(pid int) ([]int, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("no pid for the peer (%d)", pid) // in another pid namespace
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseStatusGroups(status)
}

// parseStatusGroups reads the "Groups:" line of a /proc/PID/status text:
// the supplementary gids, in decimal, separated by blanks (none: an empty
// list).
func parseStatusGroups(status []byte) ([]int, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("Groups:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		groups := make([]int, 0, len(fields))
		for _, f := range fields {
			g, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("/proc status: Groups: %q is not a gid", f)
			}
			groups = append(groups, int(g))
		}
		return groups, nil
	}
	return nil, errors.New("/proc status: no Groups: line")
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
