package hub

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// pushUntilRefused pushes up to n entries made by next, waiting while the
// submission ring is full; it returns how many went in before the ring
// stayed full for 100 ms (the daemon stopped reading it).
func (w *rawWorker) pushUntilRefused(n int, next func(i int, s *shm.Slot)) int {
	for i := range n {
		var s shm.Slot
		next(i, &s)
		for deadline := time.Now().Add(100 * time.Millisecond); !w.SQ.Push(&s); time.Sleep(20 * time.Microsecond) {
			if time.Now().After(deadline) {
				return i
			}
		}
	}
	return n
}

// answeredAtOnce makes entry i of a stream of submissions that are each
// answered by exactly one completion and leave nothing under way: bad
// entries (unknown op, random bytes) and valid ones the engine refuses or
// accepts at once (a second bind of port 9, an abort of no RPC, a return
// of the whole pool, an abort-all without client RPCs).
func answeredAtOnce(rng *rand.Rand, poolPages uint32) func(i int, s *shm.Slot) {
	return func(i int, s *shm.Slot) {
		var sub shm.Submission
		switch i % 6 {
		case 0, 1:
			for j := range s {
				s[j] = byte(rng.Uint32())
			}
			s[0] = 0xee // no such op
			return
		case 2:
			sub = shm.Submission{Op: shm.OpBind, Port: 9}
		case 3:
			sub = shm.Submission{Op: shm.OpAbort, RPCID: 2 * (1 + rng.Uint64N(1<<40))}
		case 4:
			sub = shm.Submission{Op: shm.OpReturnPages, Page: 0, Pages: poolPages} // the whole pool: never all held
		case 5:
			sub = shm.Submission{Op: shm.OpAbortAll}
		}
		sub.Cookie = uint64(i + 1)
		sub.Encode(s)
	}
}

// A worker that never reads its completion ring while it submits 200,000
// entries makes the daemon hold exactly workers.max_backlog completions
// (500), no more: the daemon stops reading its submission ring at the
// bound (counted once) and drops requests to its ports (counted), and
// keeps the session. Once the worker reads, every entry it submitted is
// answered, in order, none lost.
func TestHub_unreadCompletionsStopAtMaxBacklog(t *testing.T) {
	const bound, total = 500, 200_000
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{MaxBacklog: bound})
	w := attachRaw(t, sockA)
	bindRaw(t, w, 9)
	cq, sq := int(w.At.Layout.CQEntries), int(w.At.Layout.SQEntries)

	rng := rand.New(rand.NewPCG(9, 9))
	next := answeredAtOnce(rng, uint32(w.At.Layout.PoolPages))
	pushed := w.pushUntilRefused(total, next)
	if want := cq + bound + sq; pushed != want {
		t.Errorf("%d entries went in before the ring stayed full; want CQ %d + backlog %d + SQ %d = %d", pushed, cq, bound, sq, want)
	}
	var wc Counters
	calls.do(func() { wc = a.hub.counts() })
	if wc.Submissions != uint64(1+cq+bound) || wc.Backlogged != bound || wc.BacklogFull != 1 ||
		wc.BacklogOverflows != 0 || wc.ActiveSessions != 1 {
		t.Fatalf("at the bound: submissions %d (want 1 + %d), backlogged %d (want %d), backlog_full %d (want 1), "+
			"overflows %d, sessions %d (want 0, 1)", wc.Submissions, cq+bound, wc.Backlogged, bound, wc.BacklogFull,
			wc.BacklogOverflows, wc.ActiveSessions)
	}

	// A request to the worker's port while its backlog is full is dropped
	// (its client retries); the session stays.
	cli := attachRaw(t, sockB)
	copy(cli.At.Layout.Arena(cli.At.Region), "knock")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: [4]byte{10, 0, 0, 1}, PeerPort: 9, Length: 5})
	cli.Expect(t, shm.CompAccepted)
	waitLoop(t, calls, "the request to be dropped", func() bool { return a.hub.counters.LimitRefusals > 0 })
	calls.do(func() { wc = a.hub.counts() })
	if wc.Backlogged != bound || wc.BacklogOverflows != 0 || wc.ActiveSessions != 1 {
		t.Fatalf("after a request to the full worker: backlogged %d, overflows %d, sessions %d; want %d, 0, 1",
			wc.Backlogged, wc.BacklogOverflows, wc.ActiveSessions, bound)
	}

	// The worker reads now, and submits the rest as it goes: one answer
	// per entry, cookies in order (bad entries' cookies are random).
	answered, requests := 0, 0
	readAll := func() {
		var s shm.Slot
		for w.CQ.Pop(&s) {
			c, code := shm.ParseCompletion(&s, &w.Lim)
			switch {
			case code != shm.ErrCodeNone:
				t.Fatalf("bad completion %v: %+v", code, c)
			case c.Op == shm.CompRequest:
				requests++ // the dropped request, retried
				continue
			case answered%6 >= 2 && c.Cookie != uint64(answered+1):
				t.Fatalf("answer %d has cookie %d", answered, c.Cookie)
			}
			answered++
		}
	}
	for i := pushed; i < total; i++ {
		var s shm.Slot
		next(i, &s)
		for !w.SQ.Push(&s) {
			readAll()
		}
	}
	for deadline := time.Now().Add(10 * time.Second); answered < total; time.Sleep(100 * time.Microsecond) {
		readAll()
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries answered", answered, total)
		}
	}
	calls.do(func() { wc = a.hub.counts() })
	if wc.Backlogged != 0 || wc.BacklogOverflows != 0 || wc.Submissions != total+1 {
		t.Errorf("after reading: backlogged %d, overflows %d, submissions %d; want 0, 0, %d",
			wc.Backlogged, wc.BacklogOverflows, wc.Submissions, total+1)
	}
}

// A worker that never reads its completion ring while its RPCs run (it
// keeps submitting sends to an echo server): the backlog fills, the
// daemon stops reading, and the first completion still owed past the
// bound ends the session — counted, its RPCs aborted, its region freed.
func TestHub_unreadCompletionsOfRunningRPCsEndTheSession(t *testing.T) {
	const bound, total = 100, 200_000
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{MaxBacklog: bound})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	stop := make(chan struct{})
	defer echoRaw(t, srv, stop).Wait()
	defer close(stop)

	w := attachRaw(t, sockA)
	copy(w.At.Layout.Arena(w.At.Region), "echo me")
	pushed := w.pushUntilRefused(total, func(i int, s *shm.Slot) {
		(&shm.Submission{Op: shm.OpSend, Cookie: uint64(i + 1), PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 7}).Encode(s)
	})
	if pushed == total {
		t.Fatalf("all %d sends went in: the daemon never stopped reading", total)
	}
	var wc Counters
	var rpcs, held int
	waitLoop(t, calls, "the session to end", func() bool {
		wc, rpcs, held = a.hub.counts(), a.ep.NumRPCs(), a.hub.srv.Sessions()
		return wc.ActiveSessions == 0 && held == 0 && rpcs == 0
	})
	if wc.BacklogOverflows != 1 || wc.Detached != 1 || wc.Backlogged != 0 || wc.BacklogFull != 1 {
		t.Errorf("overflows %d, detached %d, backlogged %d, backlog_full %d; want 1, 1, 0, 1",
			wc.BacklogOverflows, wc.Detached, wc.Backlogged, wc.BacklogFull)
	}
	if max := uint64(int(w.At.Layout.CQEntries) + bound); wc.Completions > max {
		t.Errorf("%d completions made for the worker, more than its CQ and backlog hold (%d)", wc.Completions, max)
	}
}
