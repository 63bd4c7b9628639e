package client

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
func checkNoLeak(t *testing.T, f *fakeEngine, cs []*Client, sessions []int) {
	t.Helper()
	for i, c := range cs {
		waitFor(t, fmt.Sprintf("client %d's arena to be free", i), func() bool {
			c.progress()
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
			free, held := f.poolFree(s)
			return held == 0 && free == int(testParams().PoolPages)
		})
	}
	if n := f.badSubmissions(); n != 0 {
		t.Errorf("the engine refused %d malformed submissions", n)
	}
}
