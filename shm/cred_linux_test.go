package shm

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// someGroup is a group of /etc/group other than root's: its name and gid.
func someGroup(t *testing.T) (string, int) {
	t.Helper()
	f, err := os.Open("/etc/group")
	if err != nil {
		t.Skipf("no /etc/group: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if gid, err := strconv.Atoi(fields[2]); err == nil && gid > 0 {
			return fields[0], gid
		}
	}
	t.Skip("/etc/group has no group but root")
	return "", 0
}

// socketGID is the group that owns the socket at path.
func socketGID(t *testing.T, path string) int {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Sys().(*syscall.Stat_t).Gid)
}

// workers.socket_group gives the socket to a group, named or by number,
// and keeps its mode 0660; a group that does not exist is an error that
// names it.
func TestControl_socketGroupOwnsTheSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the socket to another group needs root")
	}
	name, gid := someGroup(t)
	for _, tc := range []struct {
		group string
		gid   int
	}{{name, gid}, {"4242", 4242}, {"root", 0}, {"", os.Getegid()}} {
		path := filepath.Join(t.TempDir(), "workers.sock")
		srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), SocketGroup: tc.group})
		if err != nil {
			t.Fatalf("socket_group %q: %v", tc.group, err)
		}
		if got := socketGID(t, path); got != tc.gid {
			t.Errorf("socket_group %q: the socket's gid is %d, want %d", tc.group, got, tc.gid)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o660 {
			t.Errorf("socket_group %q: mode %v, want 0660", tc.group, st.Mode().Perm())
		}
		srv.Close()
	}
	path := filepath.Join(t.TempDir(), "workers.sock")
	if _, err := Listen(ServerConfig{Path: path, Params: controlParams(), SocketGroup: "no-such-group-here"}); err == nil ||
		!strings.Contains(err.Error(), `"no-such-group-here"`) {
		t.Fatalf("unknown group: %v, want an error naming it", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket of a refused group is left behind: %v", err)
	}
}
