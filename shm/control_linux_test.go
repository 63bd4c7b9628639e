package shm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const dialEnv = "HOMA_SHM_TEST_DIAL"

func TestMain(m *testing.M) {
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(dialChild(path))
	}
	os.Exit(m.Run())
}

// publicDir makes a directory every user can enter and removes it at the
// end of the test (t.TempDir is private to root).
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "homa-shm")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// dialChild is the body of a re-executed test binary that attaches to the
// socket named in dialEnv and reports the outcome.
func dialChild(path string) int {
	a, err := Dial(path)
	if err != nil {
		fmt.Println("error:", err)
		return 0
	}
	fmt.Println("attached")
	a.Close()
	return 0
}

func controlParams() Params {
	return Params{SQEntries: 64, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 4}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestControl_attachShareRingsDetachFrees(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the credential check is tested as root")
	}
	path := filepath.Join(t.TempDir(), "workers.sock")
	var attached, detached atomic.Int32
	var sess atomic.Pointer[Session]
	baseline := openFDs(t)
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(),
		OnAttach: func(s *Session) error { attached.Add(1); sess.Store(s); return nil },
		OnDetach: func(*Session) { detached.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v (%v), want 0660", st.Mode().Perm(), err)
	}
	withSocket := openFDs(t)
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sess.Load()
	if s == nil || attached.Load() != 1 || s.UID != 0 || s.PID != os.Getpid() {
		t.Fatalf("session %+v", s)
	}
	if a.Layout != s.Layout {
		t.Errorf("worker sees layout %+v, daemon %+v", a.Layout, s.Layout)
	}
	// The worker submits through its mapping; the daemon pops from its own.
	prod, err := NewProducer(a.Layout.SQ(a.Region), a.Layout.SQEntries)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := NewConsumer(s.Layout.SQ(s.Region), s.Layout.SQEntries)
	if err != nil {
		t.Fatal(err)
	}
	var in, out Slot
	copy(in[:], "submitted by the worker")
	if !prod.Push(&in) || !cons.Pop(&out) || out != in {
		t.Fatal("an entry did not cross the shared region")
	}
	a.Close()
	waitFor(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	if detached.Load() != 1 {
		t.Errorf("OnDetach ran %d times", detached.Load())
	}
	waitFor(t, "descriptors back to baseline", func() bool { return openFDs(t) == withSocket })
	if s.Region != nil {
		t.Error("the daemon's mapping of the region was not released")
	}
	srv.Close()
	if n := openFDs(t); n != baseline {
		t.Errorf("%d descriptors open after Close, %d before Listen", n, baseline)
	}
}

func TestControl_uidNotAllowedIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a worker as another uid")
	}
	dir := publicDir(t)
	path := filepath.Join(dir, "workers.sock")
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{4242}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Let anyone reach the socket, so that the credential check, not the
	// file mode, is what refuses.
	os.Chmod(path, 0o666)
	// The test binary, where another uid may run it.
	bin := filepath.Join(dir, "shm.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(uid uint32) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), dialEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child as uid %d: %v\n%s", uid, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(65534); !strings.Contains(got, ErrRefused.Error()) {
		t.Errorf("uid 65534 (nobody): %q, want refused", got)
	}
	if got := run(4242); got != "attached" {
		t.Errorf("uid 4242 (allowed): %q", got)
	}
	waitFor(t, "sessions to end", func() bool { return srv.Sessions() == 0 })
	refused := srv.Refused()
	if refused != 1 {
		t.Errorf("%d refusals counted, want 1", refused)
	}
}

func TestControl_badSocketPathNamed(t *testing.T) {
	_, err := Listen(ServerConfig{Path: "/nonexistent/dir/w.sock", Params: controlParams()})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/dir/w.sock") {
		t.Fatalf("got %v", err)
	}
	if _, err := Listen(ServerConfig{Path: filepath.Join(t.TempDir(), "w.sock")}); err == nil {
		t.Fatal("a zero region was accepted")
	}
	if _, err := Dial(filepath.Join(t.TempDir(), "none.sock")); err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("dial to nothing: %v", err)
	}
}

func TestControl_admitRefusesAfterAllowLists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	var open atomic.Bool
	var asked atomic.Int32
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{os.Getuid()},
		Admit: func(uid, gid, pid int) bool {
			if uid == os.Getuid() && gid == os.Getgid() && pid == os.Getpid() {
				asked.Add(1)
			}
			return open.Load()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Dial(path); !errors.Is(err, ErrRefused) {
		t.Fatalf("dial while Admit says no: %v", err)
	}
	open.Store(true)
	a, err := Dial(path)
	if err != nil {
		t.Fatalf("dial while Admit says yes: %v", err)
	}
	a.Close()
	waitFor(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	refused := srv.Refused()
	if refused != 1 || asked.Load() != 2 {
		t.Errorf("%d refusals, Admit asked %d times with this process's credentials; want 1 and 2", refused, asked.Load())
	}
}

// An OnAttach error refuses the worker with its text; the region is
// freed and OnDetach does not run.
func TestControl_onAttachErrorRefusesWithItsText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	var detached atomic.Int32
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{os.Getuid()},
		OnAttach: func(*Session) error { return errors.New("not today") },
		OnDetach: func(*Session) { detached.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Dial(path); err == nil || !strings.Contains(err.Error(), "not today") {
		t.Fatalf("dial: %v, want the OnAttach error's text", err)
	}
	waitFor(t, "the region to be freed", func() bool { return srv.Sessions() == 0 })
	if detached.Load() != 0 {
		t.Errorf("OnDetach ran %d times for a refused worker", detached.Load())
	}
}

// CloseWithin returns after its wait when an OnDetach does not return,
// with ErrCloseTimeout; the region is freed once it does.
func TestControl_closeWithinBoundsTheWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	release := make(chan struct{})
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{os.Getuid()},
		OnDetach: func(*Session) { <-release }})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	start := time.Now()
	err = srv.CloseWithin(100 * time.Millisecond)
	if d := time.Since(start); !errors.Is(err, ErrCloseTimeout) || d > 2*time.Second {
		t.Fatalf("CloseWithin: %v after %v, want ErrCloseTimeout after 100ms", err, d)
	}
	if srv.Sessions() != 1 {
		t.Errorf("%d sessions held, want the one whose OnDetach waits", srv.Sessions())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket still there after CloseWithin: %v", err)
	}
	close(release)
	waitFor(t, "the region to be freed", func() bool { return srv.Sessions() == 0 })
}

// A uid holds at most MaxSessionsPerUID sessions at once — root too,
// whom the allow-lists always let through: one more is refused with a
// greeting that says why (ErrSessionLimit), counted; once a session ends
// the uid may attach again.
func TestControl_sessionsPerUIDCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	cfg := ServerConfig{Path: path, Params: controlParams(), MaxSessionsPerUID: 1}
	if os.Geteuid() != 0 {
		cfg.AllowUIDs = []int{os.Getuid()}
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	first, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Dial(path)
	if !errors.Is(err, ErrSessionLimit) || !strings.Contains(err.Error(), fmt.Sprintf("uid %d holds 1 sessions", os.Getuid())) {
		t.Fatalf("second dial: %v, want ErrSessionLimit naming uid %d", err, os.Getuid())
	}
	if n, r := srv.SessionLimitRefusals(), srv.Refused(); n != 1 || r != 0 {
		t.Errorf("session-limit refusals %d, credential refusals %d; want 1, 0", n, r)
	}
	first.Close()
	waitFor(t, "the first session to end", func() bool { return srv.Sessions() == 0 })
	again, err := Dial(path)
	if err != nil {
		t.Fatalf("dial after the first session ended: %v", err)
	}
	again.Close()
}

// The control connection's descriptor has nothing to read while the
// daemon is there (EAGAIN: it is non-blocking) and reads end of file once
// the daemon has closed the session.
func TestAttach_syscallConnEndsWithDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{os.Getuid()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	raw, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	read := func() (n int, err error) {
		buf := make([]byte, 16)
		if cerr := raw.Control(func(fd uintptr) { n, err = syscall.Read(int(fd), buf) }); cerr != nil {
			t.Fatal(cerr)
		}
		return n, err
	}
	if n, err := read(); err != syscall.EAGAIN {
		t.Fatalf("read with the daemon there: %d, %v; want EAGAIN", n, err)
	}
	srv.Close()
	if n, err := read(); n != 0 || err != nil {
		t.Fatalf("read after the daemon closed: %d, %v; want end of file", n, err)
	}
}

// A refused worker's error names its uid and gid and the keys that
// decide; the daemon hears why (OnRefuse), for its log.
func TestControl_refusalNamesCredentialsAndKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workers.sock")
	var heard atomic.Value
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), MaxSessionsPerUID: 1,
		Admit:    func(uid, gid, pid int) bool { return false },
		OnRefuse: func(uid, gid, pid int, why string) { heard.Store(fmt.Sprintf("%d %d %d: %s", uid, gid, pid, why)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = Dial(path)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("dial: %v", err)
	}
	for _, w := range []string{fmt.Sprintf("uid %d, gid %d", os.Getuid(), os.Getgid()), "workers.allow_uids", "workers.allow_gids", "the daemon logs why"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("worker's error %q does not name %q", err, w)
		}
	}
	waitFor(t, "OnRefuse", func() bool { return heard.Load() != nil })
	if got, want := heard.Load().(string), fmt.Sprintf("%d %d %d: uid %d, gid %d: not admitted by the daemon", os.Getuid(), os.Getgid(), os.Getpid(), os.Getuid(), os.Getgid()); got != want {
		t.Errorf("OnRefuse heard %q, want %q", got, want)
	}
}

// ServerConfig.Host is in every region's header (FeatureHostInfo), as the
// worker and the daemon both see it; without it the header says nothing;
// a host with no address is refused at Listen, naming HostIPv4.
func TestControl_hostInEveryHeader(t *testing.T) {
	host := HostInfo{IPv4: [4]byte{10, 0, 0, 1}, IPv6: [16]byte{0xfd, 15: 1}, LinkMbps: 25000, MTU: 9000}
	for _, want := range []HostInfo{host, {}} {
		path := filepath.Join(t.TempDir(), "workers.sock")
		var sess atomic.Pointer[Session]
		srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), AllowUIDs: []int{os.Getuid()}, Host: want,
			OnAttach: func(s *Session) error { sess.Store(s); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		a, err := Dial(path)
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		said := a.Layout.Features&FeatureHostInfo != 0
		if a.Layout.Host != want || said != (want != HostInfo{}) || a.Layout != sess.Load().Layout {
			t.Errorf("host %+v: the worker sees %+v (FeatureHostInfo %v), the daemon %+v", want, a.Layout, said, sess.Load().Layout)
		}
		a.Close()
		srv.Close()
	}
	_, err := Listen(ServerConfig{Path: filepath.Join(t.TempDir(), "w.sock"), Params: controlParams(),
		Host: HostInfo{LinkMbps: 10000}})
	var le *LayoutError
	if !errors.As(err, &le) || le.Field != "HostIPv4" {
		t.Fatalf("Listen with a host of no address: %v, want a LayoutError naming HostIPv4", err)
	}
}
