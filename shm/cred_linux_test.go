package shm

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

func TestParseStatusGroups(t *testing.T) {
	const status = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n" +
		"Gid:\t1000\t1000\t1000\t1000\nFDSize:\t64\nGroups:\t4 24 27 1000 4294967294 \nNStgid:\t4242\n"
	for _, tc := range []struct {
		text string
		want []int
		err  string
	}{
		{status, []int{4, 24, 27, 1000, 4294967294}, ""},
		{"Uid:\t0\t0\t0\t0\nGroups:\t\nNStgid:\t1\n", []int{}, ""},
		{"Groups:\t7", []int{7}, ""}, // last line, no newline
		{"Uid:\t0\t0\t0\t0\n", nil, "no Groups: line"},
		{"Groups:\t4 -1\n", nil, `"-1" is not a gid`},
		{"Groups:\t4 4294967296\n", nil, "is not a gid"},
		{"Groups:\tstaff\n", nil, `"staff" is not a gid`},
	} {
		got, err := parseStatusGroups([]byte(tc.text))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, %v; want an error saying %q", tc.text, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.text, got, err, tc.want)
		}
	}
}

// For a connection of this process to itself, SO_PEERGROUPS and
// /proc/self/status name the groups the process has.
func TestPeerGroups_agreeWithTheProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got, err := peerGroups(peer, os.Getpid())
	slices.Sort(got)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SO_PEERGROUPS: %v, %v; the process has %v", got, err, want)
	}
	fromProc, err := procGroups(os.Getpid())
	slices.Sort(fromProc)
	if err != nil || !slices.Equal(fromProc, want) {
		t.Errorf("/proc/PID/status: %v, %v; the process has %v", fromProc, err, want)
	}
	if _, err := procGroups(0); err == nil {
		t.Error("groups for pid 0 (a peer in another pid namespace)")
	}
}

// /proc/PID/status names the supplementary groups of a process that runs
// with some (the fallback where SO_PEERGROUPS is missing).
func TestProcGroups_ofAChildWithSupplementaryGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a child other groups")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 4243, Gid: 4243, Groups: []uint32{4247, 4244}}}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var got []int
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if got, err = procGroups(cmd.Process.Pid); err == nil && len(got) == 2 { // after the exec, not the fork
			break
		}
	}
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []int{4244, 4247}) {
		t.Errorf("groups of the child: %v, %v; want [4244 4247]", got, err)
	}
}

// A worker whose primary gid is on no list but one of whose
// supplementary groups is on AllowGIDs attaches; one without such a group
// is refused by the credential check. The socket is the group's (mode
// 0660), so both can connect: the check, not the file mode, decides.
func TestControl_supplementaryGroupAllowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a worker as another uid and groups")
	}
	dir := publicDir(t)
	path := filepath.Join(dir, "workers.sock")
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), SocketGroup: "4247", AllowGIDs: []int{4244}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	bin := filepath.Join(dir, "shm.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(uid uint32, groups ...uint32) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), dialEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: groups}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child as uid %d, groups %v: %v\n%s", uid, groups, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(4243, 4247, 4244); got != "attached" {
		t.Errorf("uid 4243 with supplementary group 4244 (allowed): %q", got)
	}
	if got := run(4245, 4247); !strings.Contains(got, ErrRefused.Error()) {
		t.Errorf("uid 4245 with only the socket's group 4247: %q, want refused", got)
	}
	waitFor(t, "sessions to end", func() bool { return srv.Sessions() == 0 })
	if r := srv.Refused(); r != 1 {
		t.Errorf("%d refusals counted, want 1", r)
	}
}
