package client

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// host is the fake engine's one host: every session is there.
var host = [4]byte{10, 0, 0, 1}

func TestMain(m *testing.M) {
	if path := os.Getenv(fakeEnv); path != "" {
		os.Exit(fakeEngineProcess(path))
	}
	os.Exit(m.Run())
}

// fakeEngineProcess is the body of a re-executed test binary
// (startFakeProcess): a fake engine on path that says "ready" on standard
// output once it listens and runs until SIGTERM, when it closes cleanly,
// or until it is killed.
func fakeEngineProcess(path string) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	f, err := shmtest.Start(shmtest.Config{Path: path, Params: testParams(), Host: host})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	<-stop
	f.Close()
	return 0
}

func testParams() shm.Params {
	return shm.Params{SQEntries: 128, CQEntries: 256, ArenaSize: 2 << 20, PoolPages: 40}
}

// newFake starts a fake engine (shmtest) whose aborts end the RPC at the
// server too, so that a late reply is refused; the test's cleanup stops it.
func newFake(t *testing.T, p shm.Params) *shmtest.Engine {
	t.Helper()
	f, err := shmtest.Start(shmtest.Config{Path: filepath.Join(t.TempDir(), "s"), Params: p, Host: host,
		AbortEndsServer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// dial attaches a client; the test's cleanup closes it (before anything
// registered earlier).
func dial(t *testing.T, f *shmtest.Engine, opt Options) *Client {
	t.Helper()
	c, err := Dial(f.Path(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// strayResponse hands session i a valid Response of n bytes for an RPC it
// never sent.
func strayResponse(t *testing.T, f *shmtest.Engine, i, n int) {
	t.Helper()
	np := shm.PagesFor(n)
	page, ok := f.Hold(i, np)
	if !ok {
		t.Fatal("no pages for a stray response")
	}
	c := shm.Completion{Op: shm.CompResponse, Cookie: 0xdead, RPCID: 1 << 40, PeerIP: [4]byte{10, 9, 9, 9},
		PeerPort: 7, Length: uint32(n), Page: uint32(page), Pages: uint32(np)}
	var s shm.Slot
	c.Encode(&s)
	f.Inject(i, s)
}

// pattern returns n bytes that differ with seed and position, so a
// misplaced or truncated message shows.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i>>8) ^ seed
	}
	return b
}

// serve answers every request to c (which has bound its ports) in a
// goroutine, after delay, with handle's reply (nil handle: echo) until
// the returned stop is called (the test's cleanup calls it too, before c
// is closed). Other messages are an error of the test.
func serve(t *testing.T, c *Client, delay time.Duration, handle func(*Message) []byte) (stop func()) {
	t.Helper()
	var quit atomic.Bool
	done := make(chan error, 1)
	go func() {
		time.Sleep(delay)
		for !quit.Load() {
			m, err := c.Receive(5 * time.Millisecond)
			if err == ErrWaitTimeout {
				continue
			}
			if err != nil {
				done <- err
				return
			}
			if !m.Request {
				done <- fmt.Errorf("server got a non-request: id %d err %v", m.ID, m.Err)
				return
			}
			resp := m.Data
			if handle != nil {
				resp = handle(m)
			}
			if err := c.Reply(m, resp); err != nil {
				done <- err
				return
			}
			m.Release()
		}
		done <- nil
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			quit.Store(true)
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// checkNoLeak checks, once the clients (idle now) have read what is left
// in their rings and the engine has taken their ReturnPages, that every
// arena is free, no page is held by a Message, every fake pool is free and
// no submission was malformed. sessions are the fake's indices of cs.
func checkNoLeak(t *testing.T, f *shmtest.Engine, cs []*Client, sessions []int) {
	t.Helper()
	for i, c := range cs {
		waitFor(t, fmt.Sprintf("client %d's arena to be free", i), func() bool {
			c.progress()
			c.flush() // an idle client gives its pages back before it sleeps
			return c.Stats().ArenaFree == c.arena.size
		})
		if st := c.Stats(); st.PagesHeld != 0 || st.BadCompletions != 0 || st.RingCorrupt != 0 {
			t.Errorf("client %d: %+v", i, st)
		}
		if len(c.inflight) != 0 || len(c.arena.free) != 1 {
			t.Errorf("client %d: %d ranges in flight, free list %v", i, len(c.inflight), c.arena.free)
		}
	}
	for _, s := range sessions {
		waitFor(t, fmt.Sprintf("session %d's pool to be free", s), func() bool {
			info, _ := f.Session(s)
			return info.Layout.PoolPages > 0 && info.PagesHeld == 0 && info.PagesFree == int(info.Layout.PoolPages)
		})
	}
	if n := f.BadSubmissions(); n != 0 {
		t.Errorf("the engine refused %d malformed submissions", n)
	}
}
