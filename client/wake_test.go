package client

import (
	"errors"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// A server blocked in Receive sleeps on the eventfd and is woken by the
// engine when a request arrives.
func TestSleep_wokenByEventfd(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{})
	cl := dial(t, f, Options{Spin: -1}) // never spins: every wait sleeps
	if err := srv.Bind(3); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := srv.Receive(20 * time.Millisecond); err != ErrWaitTimeout {
		t.Fatalf("Receive with nothing to receive: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Receive(20ms) returned after %v", d)
	}
	sleeps := srv.Stats().Sleeps
	if sleeps == 0 {
		t.Error("the timed-out Receive did not sleep")
	}
	got := make(chan *Message, 1)
	errc := make(chan error, 1)
	go func() {
		m, err := srv.Receive(5 * time.Second)
		if err != nil {
			errc <- err
			return
		}
		got <- m
	}()
	time.Sleep(20 * time.Millisecond) // long past the spin: the server sleeps
	id, err := cl.Send(Addr{IP: netip.AddrFrom4(host), Port: 3}, []byte("wake up"))
	if err != nil {
		t.Fatal(err)
	}
	var req *Message
	select {
	case req = <-got:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("the sleeping server was not woken")
	}
	if string(req.Data) != "wake up" {
		t.Fatalf("request %q", req.Data)
	}
	if st := srv.Stats(); st.Sleeps <= sleeps {
		t.Errorf("server stats %+v: no sleep in the blocking Receive", st)
	}
	if err := srv.Reply(req, []byte("awake")); err != nil {
		t.Fatal(err)
	}
	req.Release()
	m, err := cl.Wait(id, 5*time.Second)
	if err != nil || string(m.Data) != "awake" {
		t.Fatalf("response: %v %+v", err, m)
	}
	m.Release()
	if st := cl.Stats(); st.Sleeps == 0 {
		t.Errorf("a client that never spins never slept: %+v", st)
	}
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})
}

// A Call that times out aborts its RPC; the result never reaches Receive.
func TestCall_timeoutAbandons(t *testing.T) {
	f := newFake(t, testParams())
	sink := dial(t, f, Options{})
	if err := sink.Bind(4); err != nil {
		t.Fatal(err)
	}
	c := dial(t, f, Options{})
	_, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 4}, []byte("lost"), 10*time.Millisecond)
	if err != ErrWaitTimeout {
		t.Fatalf("Call to a silent server: %v", err)
	}
	if len(c.rpcs) != 0 {
		t.Errorf("the abandoned RPC is still known: %v", c.rpcs)
	}
	if m, err := c.Receive(20 * time.Millisecond); err != ErrWaitTimeout {
		t.Errorf("Receive after an abandoned Call: %v %+v", err, m)
	}
	req, err := sink.Receive(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Reply(req, []byte("too late")); !errors.Is(err, ErrNoRPC) {
		t.Errorf("reply to an aborted RPC: %v", err)
	}
	req.Release()
	checkNoLeak(t, f, []*Client{c, sink}, []int{0, 1})
}

// Malformed completions are counted and skipped; a valid one for an RPC
// nobody sent is counted and its pages given back; the client carries on.
func TestCompletion_malformedSkipped(t *testing.T) {
	f := newFake(t, testParams())
	f.Script(7, shm.ErrCodeNone)
	c := dial(t, f, Options{})
	var bad shm.Slot
	bad[0] = 99 // no such op
	f.Inject(0, bad)
	outside := shm.Completion{Op: shm.CompResponse, Cookie: 1, RPCID: 2, PeerIP: host, PeerPort: 7,
		Length: 10, Page: uint32(testParams().PoolPages), Pages: 1}
	outside.Encode(&bad) // pages beyond the pool
	f.Inject(0, bad)
	short := shm.Completion{Op: shm.CompRequest, Port: 1, RPCID: 3, PeerIP: host, PeerPort: 7,
		Length: shm.PageSize + 1, Page: 0, Pages: 1}
	short.Encode(&bad) // more bytes than its pages hold
	f.Inject(0, bad)
	noErr := shm.Completion{Op: shm.CompError, Cookie: 1}
	noErr.Encode(&bad) // an error without a code
	f.Inject(0, bad)
	rel := shm.Completion{Op: shm.CompReleased, Cookie: 12345, Offset: 0, Length: 64}
	rel.Encode(&bad) // a range never submitted: not freed
	f.Inject(0, bad)
	strayResponse(t, f, 0, 70000)

	m, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, []byte("still works"), time.Second)
	if err != nil || string(m.Data) != "still works" {
		t.Fatalf("Call after bad completions: %v %+v", err, m)
	}
	m.Release()
	st := c.Stats()
	if st.BadCompletions != 4 || st.Stray != 2 || st.Received != 1 {
		t.Errorf("stats %+v, want 4 bad, 2 stray, 1 received", st)
	}
	c.stats.BadCompletions = 0 // checked; checkNoLeak wants none
	checkNoLeak(t, f, []*Client{c}, []int{0})
}

// Close ends the session at the daemon; the Client refuses further calls.
func TestClose_endsSession(t *testing.T) {
	f := newFake(t, testParams())
	f.Script(7, shm.ErrCodeNone)
	srv := dial(t, f, Options{})
	if err := srv.Bind(8); err != nil {
		t.Fatal(err)
	}
	c := dial(t, f, Options{})
	if n := f.Sessions(); n != 2 {
		t.Fatalf("%d sessions", n)
	}
	m, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, []byte("kept"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(Addr{IP: netip.AddrFrom4(host), Port: 8}, []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session to end", func() bool { return f.Sessions() == 1 })
	m.Release() // after Close: nothing to do, no crash
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Send(Addr{IP: netip.AddrFrom4(host), Port: 7}, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if _, err := c.Receive(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Receive after Close: %v", err)
	}
	// The server holds the closed client's request; its reply finds no RPC.
	req, err := srv.Receive(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reply(req, []byte("nobody")); !errors.Is(err, ErrNoRPC) {
		t.Errorf("reply to a closed client: %v", err)
	}
	req.Release()
	checkNoLeak(t, f, []*Client{srv}, []int{0})
}

// The steady state of Call with a small message allocates only the
// response's Message (the fake engine allocates nothing either).
func TestCall_allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	f := newFake(t, testParams())
	f.Script(7, shm.ErrCodeNone)
	c := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 7}
	msg := pattern(100, 1)
	call := func() {
		m, err := c.Call(dst, msg, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		m.Release()
	}
	for range 100 {
		call()
	}
	n := testing.AllocsPerRun(500, call)
	if n > 1 {
		t.Errorf("%v allocations per Call, want ≤ 1", n)
	}
	t.Logf("%v allocations per Call", n)
}

// With the engine stalled, page returns fill a small submission ring; the
// client yields until the engine drains it, and nothing is lost.
func TestSubmit_ringFullWaits(t *testing.T) {
	p := testParams()
	p.SQEntries = 4
	f := newFake(t, p)
	f.Script(7, shm.ErrCodeNone)
	c := dial(t, f, Options{})
	var ms []*Message
	for i := range 10 {
		m, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, pattern(1000, byte(i)), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	f.Pause() // the engine's loop stops between passes
	time.AfterFunc(20*time.Millisecond, f.Resume)
	for _, m := range ms {
		m.Release() // given back at the next call that reads completions
	}
	if _, err := c.Receive(time.Millisecond); err != ErrWaitTimeout { // ReturnPages: the fifth finds the ring full
		t.Fatalf("receive: %v", err)
	}
	if st := c.Stats(); st.SQFull == 0 {
		t.Errorf("stats %+v: the ring never filled", st)
	}
	checkNoLeak(t, f, []*Client{c}, []int{0})
}

// A spin yields the processor at most once every spinYield, not once per
// spinCheck ring checks: a yield wakes other threads, which on a small
// machine run on the daemon's polling CPU (perf starts saw its loop
// preempted tens of thousands of times a second while a worker spun
// through 1 MB round trips).
func TestSpin_yieldsAtMostEverySpinYield(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{Spin: time.Hour}) // spins for the whole wait
	if err := srv.Bind(3); err != nil {
		t.Fatal(err)
	}
	yields := 0
	yield = func() { yields++ }
	defer func() { yield = runtime.Gosched }()
	const wait = 5 * time.Millisecond
	start := time.Now()
	if _, err := srv.Receive(wait); err != ErrWaitTimeout {
		t.Fatalf("Receive with nothing to receive: %v", err)
	}
	spun := time.Since(start)
	if most := int(spun/spinYield) + 1; yields == 0 || yields > most {
		t.Errorf("%d yields in a spin of %v; want 1 to %d (one per %v)", yields, spun, most, spinYield)
	}
}
