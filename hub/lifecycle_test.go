package hub

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// churnParams are the smallest regions, for tests that make thousands.
var churnParams = shm.Params{SQEntries: 16, CQEntries: 16, ArenaSize: 1 << 16, PoolPages: 1}

// closeBound is how long a Close may take in these tests.
const closeBound = 5 * time.Second

// idleLoop polls n's hosts on a goroutine that sleeps idle after every
// pass, as an adaptive polling loop does when it finds no work (and so
// that it shares one P with the rest of the test), running calls between
// passes, until the returned stop is called; stop then runs each hub's
// Stop on the loop, as a host's drain does.
func idleLoop(n *testNet, idle time.Duration) (calls loopCalls, stop func()) {
	calls, stop, _ = idleLoopQuit(n, idle)
	return calls, stop
}

// idleLoopQuit is idleLoop whose loop can also end without a drain
// (quit): the hubs are then left as a loop that died leaves them.
func idleLoopQuit(n *testNet, idle time.Duration) (calls loopCalls, stop, quit func()) {
	var noDrain atomic.Bool
	var ending atomic.Bool
	var wg sync.WaitGroup
	calls = make(loopCalls)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !ending.Load() {
			n.pass()
			select {
			case fn := <-calls:
				fn()
			default:
			}
			time.Sleep(idle)
		}
		if noDrain.Load() {
			return
		}
		for _, h := range n.hosts {
			if h.hub != nil {
				h.hub.Stop()
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { ending.Store(true); wg.Wait() }) }
	return calls, stop, func() { noDrain.Store(true); stop() }
}

// closeWithin closes hub on another goroutine and fails the test if it
// has not returned within d.
func closeWithin(t *testing.T, hub *Hub, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- hub.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Close has not returned after %v", d)
		return nil
	}
}

// A worker that connects and leaves at once, 10,000 times, with one P, a
// goroutine hogging it and a loop that sleeps 1 ms between passes: the
// attach and the detach of a session often wait for the same pass (before
// attach and detach were one ordered channel, about 1 cycle in 10 left a
// ghost session, which also bound the port its worker had asked for). Each detach must find its session: no
// session is left, the daemon's descriptors and region mappings are
// back to where they were, and Close returns.
func TestHub_connectCloseChurnLeavesNoSession(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const cycles = 10_000
	n := newTestNet(t)
	a := n.hosts[0]
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8, Params: churnParams})
	calls, stopLoop := idleLoop(n, time.Millisecond)
	defer stopLoop()
	var hogStop atomic.Bool
	var hogWG sync.WaitGroup
	hogWG.Add(1)
	go func() { // burns the P half the time, in slices of 50 µs
		defer hogWG.Done()
		for !hogStop.Load() {
			for end := time.Now().Add(50 * time.Microsecond); time.Now().Before(end); {
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { hogStop.Store(true); hogWG.Wait() }()

	baseFDs, baseRegions := daemonFootprint(t)
	start := time.Now()
	var bind shm.Slot
	(&shm.Submission{Op: shm.OpBind, Port: 7, Cookie: 1}).Encode(&bind)
	for i := range cycles {
		at, err := shm.Dial(sock)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if i%2 == 0 { // leaves a bind in its ring: a ghost would hold port 7
			sq, err := shm.NewProducer(at.Layout.SQ(at.Region), at.Layout.SQEntries)
			if err != nil || !sq.Push(&bind) {
				t.Fatalf("cycle %d: cannot submit: %v", i, err)
			}
		}
		at.Close()
	}
	t.Logf("%d connect/close cycles in %v", cycles, time.Since(start))
	var live, draining int
	var wc Counters
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls.do(func() { live, draining, wc = len(a.hub.sessions), len(a.hub.draining), a.hub.counts() })
		fds, regions := daemonFootprint(t)
		held := a.hub.srv.Sessions()
		// Descriptors of earlier tests' sessions may still close after the
		// base was counted: fewer than the base is no leak.
		if live == 0 && draining == 0 && held == 0 && fds <= baseFDs && regions == baseRegions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d cycles: %d sessions in the loop, %d draining, %d regions held by the server, "+
				"%d descriptors (base %d), %d region mappings (base %d); attached %d, detached %d",
				cycles, live, draining, held, fds, baseFDs, regions, baseRegions, wc.Attached, wc.Detached)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if wc.Attached != cycles || wc.Detached != cycles {
		t.Errorf("attached %d, detached %d; want %d each", wc.Attached, wc.Detached, cycles)
	}
	w := attachRaw(t, sock) // port 7 is free again
	w.Submit(t, shm.Submission{Op: shm.OpBind, Port: 7, Cookie: 2})
	if c := w.Next(t, 5*time.Second); c.Op != shm.CompAccepted {
		t.Errorf("bind of port 7 after the churn: %v (err %v), want accepted", c.Op, c.Err)
	}
	w.At.Close()
	if err := closeWithin(t, a.hub, closeBound); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// attachedWorkers attaches k raw workers to sock (the first binds port 7)
// and waits until the loop serves them all.
func attachedWorkers(t *testing.T, sock string, h *testHost, calls loopCalls, k int) []*rawWorker {
	t.Helper()
	ws := make([]*rawWorker, k)
	for i := range ws {
		ws[i] = attachRaw(t, sock)
	}
	bindRaw(t, ws[0], 7)
	waitLoop(t, calls, "the workers to be served", func() bool { return len(h.hub.sessions) == k })
	return ws
}

// waitLoop waits up to 5 s for cond, which runs on the loop.
func waitLoop(t *testing.T, calls loopCalls, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var ok bool
		calls.do(func() { ok = cond() })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitHeld waits up to 5 s for the hub's server to hold want regions.
func waitHeld(t *testing.T, hub *Hub, want int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); hub.srv.Sessions() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d regions, want %d", hub.srv.Sessions(), want)
		}
	}
}

// The loop drains (Stop) with workers attached, then the hub is closed:
// Close returns at once, every region freed.
func TestHub_stopThenCloseFreesAtOnce(t *testing.T) {
	n := newTestNet(t)
	a := n.hosts[0]
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8, Params: churnParams})
	calls, stopLoop := idleLoop(n, 100*time.Microsecond)
	defer stopLoop()
	attachedWorkers(t, sock, a, calls, 3)
	stopLoop() // Stop runs on the loop
	start := time.Now()
	if err := closeWithin(t, a.hub, closeBound); err != nil {
		t.Errorf("Close after Stop: %v", err)
	}
	if d, held := time.Since(start), a.hub.srv.Sessions(); d > time.Second || held != 0 {
		t.Errorf("Close after Stop took %v and left %d regions; want under 1 s and 0", d, held)
	}
}

// The loop ends without its drain (it died, or its thread is stuck) with
// workers attached: Close returns after Config.CloseWait with
// ErrCloseTimeout, leaving the regions to the loop; a late Stop frees
// them.
func TestHub_closeWithTheLoopGoneReturnsAfterCloseWait(t *testing.T) {
	const wait = 200 * time.Millisecond
	n := newTestNet(t)
	a := n.hosts[0]
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8, Params: churnParams, CloseWait: wait})
	calls, _, quitLoop := idleLoopQuit(n, 100*time.Microsecond)
	defer quitLoop()
	attachedWorkers(t, sock, a, calls, 3)
	quitLoop() // no Stop: the hub does not know the loop is gone
	start := time.Now()
	err := closeWithin(t, a.hub, closeBound)
	d := time.Since(start)
	if !errors.Is(err, shm.ErrCloseTimeout) || d < wait || d > wait+time.Second {
		t.Fatalf("Close with the loop gone: %v after %v; want ErrCloseTimeout after %v", err, d, wait)
	}
	if held := a.hub.srv.Sessions(); held != 3 {
		t.Errorf("%d regions held after Close, want the loop's 3", held)
	}
	a.hub.Stop() // the loop's drain, late
	waitHeld(t, a.hub, 0)
}

// Close waits for a loop that is not polling; when the loop's drain
// (Stop) comes during the wait, Close returns then, without an error.
func TestHub_stopDuringCloseEndsTheWait(t *testing.T) {
	n := newTestNet(t)
	a := n.hosts[0]
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8, Params: churnParams, CloseWait: closeBound})
	calls, _, quitLoop := idleLoopQuit(n, 100*time.Microsecond)
	defer quitLoop()
	attachedWorkers(t, sock, a, calls, 3)
	quitLoop()
	time.AfterFunc(100*time.Millisecond, a.hub.Stop)
	start := time.Now()
	if err := closeWithin(t, a.hub, 2*closeBound); err != nil {
		t.Errorf("Close with Stop during its wait: %v", err)
	}
	if d, held := time.Since(start), a.hub.srv.Sessions(); d > closeBound/2 || held != 0 {
		t.Errorf("Close returned after %v with %d regions held; want soon after Stop, 0", d, held)
	}
}

// A session whose zero-copy packets never leave drains for ever: Close
// returns after CloseWait with ErrCloseTimeout, and the loop's Stop frees
// the region.
func TestHub_closeWithADrainingSessionReturnsAfterCloseWait(t *testing.T) {
	const wait = 200 * time.Millisecond
	n := newTestNet(t)
	a, b := n.hosts[0], n.hosts[1]
	a.zeroCopy, a.autoSend = true, false
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8, CloseWait: wait})
	calls, stopLoop := idleLoop(n, 100*time.Microsecond)
	defer stopLoop()
	w := attachRaw(t, sock)
	w.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: b.ip, PeerPort: 99, Length: 20000})
	w.Expect(t, shm.CompAccepted)
	w.At.Close()
	waitLoop(t, calls, "the session to drain", func() bool { return len(a.hub.draining) == 1 })
	start := time.Now()
	err := closeWithin(t, a.hub, closeBound)
	if d := time.Since(start); !errors.Is(err, shm.ErrCloseTimeout) || d > wait+time.Second {
		t.Fatalf("Close with a draining session: %v after %v; want ErrCloseTimeout after %v", err, d, wait)
	}
	stopLoop()
	waitHeld(t, a.hub, 0)
}
