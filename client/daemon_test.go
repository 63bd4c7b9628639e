package client

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

const (
	// goneWithin is how soon after the daemon's end a wait must return.
	goneWithin = 100 * time.Millisecond
	// settle is how long a test lets a wait run before it ends the
	// daemon: far past the default spin, so a wait that may sleep does.
	settle = 20 * time.Millisecond
)

// whenDaemonEnds runs wait in its own goroutine, lets it wait for
// settle, calls end and returns how long after end began wait returned,
// and its error. A wait still under way 30 s later ends the test binary, with
// no cleanup: its goroutine cannot be stopped, and the cleanup would
// unmap the region under it.
func whenDaemonEnds(t *testing.T, wait func() error, end func()) (after time.Duration, err error) {
	t.Helper()
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		err := wait()
		done <- result{err, time.Now()}
	}()
	time.Sleep(settle)
	start := time.Now()
	end()
	select {
	case r := <-done:
		return r.at.Sub(start), r.err
	case <-time.After(30 * time.Second):
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: the wait was still under way 30 s after the daemon's end\n", t.Name())
		os.Exit(1)
		return 0, nil
	}
}

// checkGone checks that a wait ended by the daemon's end returned
// ErrDaemonGone within goneWithin, and that later calls return it too.
func checkGone(t *testing.T, c *Client, err error, after time.Duration) {
	t.Helper()
	if !errors.Is(err, ErrDaemonGone) {
		t.Fatalf("the wait returned %v after %v, want ErrDaemonGone", err, after)
	}
	if after > goneWithin {
		t.Errorf("the wait returned %v after the daemon's end, want < %v", after, goneWithin)
	}
	t.Logf("ErrDaemonGone %v after the daemon's end", after)
	dst := Addr{IP: netip.AddrFrom4(host), Port: 4}
	if _, err := c.Send(dst, []byte("x")); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("Send afterwards: %v", err)
	}
	if _, err := c.Call(dst, []byte("x"), time.Second); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("Call afterwards: %v", err)
	}
	if _, err := c.Receive(0); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("Receive afterwards: %v", err)
	}
	if _, err := c.Wait(2, time.Second); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("Wait afterwards: %v", err)
	}
	if err := c.Bind(9); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("Bind afterwards: %v", err)
	}
	if err := c.AbortAll(); !errors.Is(err, ErrDaemonGone) {
		t.Errorf("AbortAll afterwards: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close afterwards: %v", err)
	}
}

// exits ends the fake engine as a daemon that dies does: every session's
// connection closes, and no last completion comes (the loop is paused
// first, so the failures that the detaches cause are never pushed — else
// the sink's leaving would fail the waiting RPC with Closed).
func exits(f *shmtest.Engine) {
	f.Pause()
	f.Close()
}

// A Call waiting for its response returns ErrDaemonGone within
// milliseconds when the daemon exits or ends this session, whether the
// wait is spinning on the ring (a 10 s spin: it never sleeps) or sleeping
// on the eventfd (no spin); later calls return it too.
func TestCall_daemonGone(t *testing.T) {
	endsSession := func(f *shmtest.Engine) { f.Kill(1) } // the Call's client is session 1
	for _, tc := range []struct {
		name string
		spin time.Duration
		end  func(*shmtest.Engine)
	}{
		{"spinning/exits", 10 * time.Second, exits},
		{"spinning/endsSession", 10 * time.Second, endsSession},
		{"sleeping/exits", -1, exits},
		{"sleeping/endsSession", -1, endsSession},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, testParams())
			sink := dial(t, f, Options{})
			if err := sink.Bind(4); err != nil {
				t.Fatal(err)
			}
			c := dial(t, f, Options{Spin: tc.spin})
			after, err := whenDaemonEnds(t, func() error {
				_, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 4}, []byte("never answered"), 5*time.Second)
				return err
			}, func() {
				req, err := sink.Receive(time.Second) // the Call was accepted: it waits
				if err != nil {
					t.Error(err)
				} else {
					req.Release()
				}
				tc.end(f)
			})
			sleeps := c.Stats().Sleeps
			checkGone(t, c, err, after)
			if tc.spin > 0 && sleeps != 0 {
				t.Errorf("a Call that spins 10 s slept %d times", sleeps)
			}
			if tc.spin < 0 && sleeps == 0 {
				t.Error("a Call that never spins did not sleep")
			}
		})
	}
}

// The other waits — Receive for a request, Send for arena room, Reply for
// its acceptance, Release for room in the submission ring — return
// ErrDaemonGone (Release: the call after it) when the daemon exits.
func TestWaits_daemonGone(t *testing.T) {
	dst := Addr{IP: netip.AddrFrom4(host), Port: 4}
	for _, tc := range []struct {
		name   string
		params func(*shm.Params)
		// wait readies c (session 1; session 0 has bound port 4 and never
		// answers) and returns the call that waits.
		wait func(t *testing.T, f *shmtest.Engine, sink, c *Client) func() error
	}{
		{"Receive", nil, func(t *testing.T, _ *shmtest.Engine, _, c *Client) func() error {
			if err := c.Bind(6); err != nil {
				t.Fatal(err)
			}
			return func() error { _, err := c.Receive(-1); return err }
		}},
		{"Send/arenaRoom", func(p *shm.Params) { p.ArenaSize = 256 << 10 },
			func(t *testing.T, _ *shmtest.Engine, _, c *Client) func() error {
				for i := range 4 { // each request keeps its range: the sink never answers
					if _, err := c.Send(dst, pattern(64<<10, byte(i))); err != nil {
						t.Fatal(err)
					}
				}
				return func() error { _, err := c.Send(dst, []byte("no room")); return err }
			}},
		{"Reply/accepted", nil, func(t *testing.T, f *shmtest.Engine, sink, c *Client) func() error {
			if err := c.Bind(6); err != nil {
				t.Fatal(err)
			}
			if _, err := sink.Send(Addr{IP: netip.AddrFrom4(host), Port: 6}, []byte("answer me")); err != nil {
				t.Fatal(err)
			}
			req, err := c.Receive(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			f.Pause() // the reply is never taken
			return func() error { return c.Reply(req, []byte("unheard")) }
		}},
		{"Release/ringRoom", func(p *shm.Params) { p.SQEntries = 4 },
			func(t *testing.T, f *shmtest.Engine, _, c *Client) func() error {
				f.Script(7, shm.ErrCodeNone)
				var ms []*Message
				for i := range 10 {
					m, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, pattern(100, byte(i)), time.Second)
					if err != nil {
						t.Fatal(err)
					}
					ms = append(ms, m)
				}
				f.Pause() // the fifth ReturnPages finds the ring full
				return func() error {
					for _, m := range ms {
						m.Release()
					}
					_, err := c.Receive(0)
					return err
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			if tc.params != nil {
				tc.params(&p)
			}
			f := newFake(t, p)
			sink := dial(t, f, Options{})
			if err := sink.Bind(4); err != nil {
				t.Fatal(err)
			}
			c := dial(t, f, Options{})
			wait := tc.wait(t, f, sink, c)
			after, err := whenDaemonEnds(t, wait, func() { exits(f) })
			checkGone(t, c, err, after)
		})
	}
}

// fakeEnv names, to a re-executed test binary, the socket it serves as a
// fake engine (fakeEngineProcess).
const fakeEnv = "HOMA_CLIENT_TEST_FAKE_ENGINE"

// startFakeProcess runs the fake engine in a child process — this test
// binary again — and returns it once it listens on the returned socket.
// The test's cleanup kills it.
func startFakeProcess(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the fake engine's process said %q (%v)", line, err)
	}
	return cmd, path
}

// A Receive waiting in a worker returns ErrDaemonGone within milliseconds
// when the daemon's process dies: killed (SIGKILL: the kernel closes its
// descriptors) while the Receive sleeps or spins, or ending cleanly on
// SIGTERM.
func TestReceive_daemonProcessDies(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		spin time.Duration
	}{
		{"SIGKILL/sleeping", syscall.SIGKILL, 0},
		{"SIGKILL/spinning", syscall.SIGKILL, 10 * time.Second},
		{"SIGTERM/sleeping", syscall.SIGTERM, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, path := startFakeProcess(t)
			c, err := Dial(path, Options{Spin: tc.spin})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Bind(6); err != nil {
				t.Fatal(err)
			}
			after, err := whenDaemonEnds(t, func() error { _, err := c.Receive(-1); return err },
				func() { cmd.Process.Signal(tc.sig) })
			sleeps := c.Stats().Sleeps
			checkGone(t, c, err, after)
			if tc.spin > 0 && sleeps != 0 {
				t.Errorf("a Receive that spins 10 s slept %d times", sleeps)
			}
			if tc.spin == 0 && sleeps == 0 {
				t.Error("the Receive did not sleep")
			}
		})
	}
}
