package hub

import (
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// closeWhilePolling closes hub while passes run (a detach waits for the
// loop).
func closeWhilePolling(n *testNet, hub *Hub) {
	closed := make(chan struct{})
	go func() { hub.Close(); close(closed) }()
	for {
		select {
		case <-closed:
			return
		default:
			n.pass()
		}
	}
}

// A worker that leaves while packets of its zero-copy message have not
// left the host keeps its region mapped until they have; only then is
// the region freed.
func TestHub_regionOutlivesZeroCopyPacketsInFlight(t *testing.T) {
	n := newTestNet(t)
	a, b := n.hosts[0], n.hosts[1]
	a.zeroCopy, a.autoSend = true, false
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8})
	defer closeWhilePolling(n, a.hub) // the hub's sessions are gone by now
	w := attachRaw(t, sock)
	for len(a.hub.sessions) == 0 {
		n.pass()
	}
	arena := w.At.Layout.Arena(w.At.Region)
	for i := range 20000 {
		arena[i] = byte(i)
	}
	w.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: b.ip, PeerPort: 99, Length: 20000})
	n.pass() // sends the message
	if c := w.Next(t, time.Second); c.Op != shm.CompAccepted {
		t.Fatalf("send: %+v", c)
	}
	if n := a.hub.counters.ZeroCopyMessages; n != 1 || len(a.refs) != 1 {
		t.Fatalf("%d zero-copy messages, %d references held; want 1, 1", n, len(a.refs))
	}
	w.At.Close() // the worker leaves
	deadline := time.Now().Add(5 * time.Second)
	for len(a.hub.draining) == 0 {
		n.pass() // takes the detach: the session drains
		if time.Now().After(deadline) {
			t.Fatal("the session did not start draining")
		}
	}
	for range 10 {
		n.pass()
	}
	if a.hub.srv.Sessions() != 1 || len(a.hub.draining) != 1 {
		t.Fatalf("region freed while its packets are in flight: %d sessions, %d draining", a.hub.srv.Sessions(), len(a.hub.draining))
	}
	a.sendPayloads() // the host's packets leave
	for a.hub.srv.Sessions() != 0 {
		n.pass()
		if time.Now().After(deadline) {
			t.Fatalf("region not freed after its packets: %d draining", len(a.hub.draining))
		}
	}
	if len(a.refs) != 0 {
		t.Errorf("%d payload references still held", len(a.refs))
	}
}

// A response that can never fit in the client worker's receive pool
// (larger than all of it) ends its RPC with a NoBufferSpace error
// completion (and is counted).
func TestHub_responseWithoutPoolSpaceFails(t *testing.T) {
	params := testWorkerParams
	params.PoolPages = 1 // 64 KB: a 100 KB response cannot fit
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{Params: params})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	cli := attachRaw(t, sockA)
	copy(cli.At.Layout.Arena(cli.At.Region), "give me 100 KB")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 5, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 14})
	acc := cli.Expect(t, shm.CompAccepted)
	rq := srv.Expect(t, shm.CompRequest)
	srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages})
	srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 6, RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: 100_000})
	srv.Expect(t, shm.CompAccepted)
	var failed shm.Completion
	for failed.Op != shm.CompError {
		c := cli.Next(t, 5*time.Second)
		if c.Op == shm.CompResponse {
			t.Fatalf("a 100 KB response arrived in a 64 KB pool: %+v", c)
		}
		if c.Op == shm.CompError {
			failed = c
		}
	}
	if failed.Err != shm.ErrCodeNoBufferSpace || failed.RPCID != acc.RPCID || failed.Cookie != 5 {
		t.Fatalf("error completion %+v, want NoBufferSpace for RPC %d, cookie 5", failed, acc.RPCID)
	}
	var wc Counters
	var drops uint64
	calls.do(func() {
		wc = a.hub.counts()
		drops = a.ep.Metrics().Drops[engine.DropNoRecvSpace]
	})
	if wc.NoRecvSpace != 1 || drops != 1 || wc.OutstandingRPCs != 0 {
		t.Errorf("no_recv_space %d, engine drops %d, outstanding %d; want 1, 1, 0", wc.NoRecvSpace, drops, wc.OutstandingRPCs)
	}
}

// A response that finds the client worker's pool full for now, but fits
// in it, waits: its packet is dropped, the RPC asks for it again, and it
// arrives once the worker has given pages back (it used to fail with
// NoBufferSpace, which failed a job's large collectives whenever two of
// them met in a worker's pool).
func TestHub_responseWaitsForPoolSpace(t *testing.T) {
	params := testWorkerParams
	params.PoolPages = 1
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{Params: params})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	cli := attachRaw(t, sockA)
	arena := cli.At.Layout.Arena(cli.At.Region)
	copy(arena, "one")
	copy(arena[4096:], "two")
	sarena := srv.At.Layout.Arena(srv.At.Region)
	copy(sarena, "first answer")
	copy(sarena[4096:], "second answer")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 3})
	cli.Expect(t, shm.CompAccepted)
	for i, n := range []uint32{12, 13} {
		rq := srv.Next(t, 5*time.Second)
		for rq.Op != shm.CompRequest { // the first reply's Released may come first
			rq = srv.Next(t, 5*time.Second)
		}
		srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages})
		srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: uint64(10 + i), RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Offset: uint64(4096 * i), Length: n})
		srv.Expect(t, shm.CompAccepted)
		if i == 0 {
			cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 2, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Offset: 4096, Length: 3})
		}
	}
	// The first response holds the client's only page; the second waits.
	var first shm.Completion
	for first.Op != shm.CompResponse {
		if c := cli.Next(t, 5*time.Second); c.Op == shm.CompError {
			t.Fatalf("error completion %+v", c)
		} else if c.Op == shm.CompResponse {
			first = c
		}
	}
	answers := map[string]bool{"first answer": true, "second answer": true}
	got1 := string(cli.Message(first))
	if !answers[got1] {
		t.Fatalf("first response %q", got1)
	}
	delete(answers, got1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var m engine.Metrics
		calls.do(func() { m = a.ep.Metrics() })
		if m.ResponsesWaitingForBuffer > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second response was not refused a page")
		}
		time.Sleep(time.Millisecond)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: first.Page, Pages: first.Pages})
	var second shm.Completion
	for second.Op != shm.CompResponse {
		c := cli.Next(t, 5*time.Second)
		if c.Op == shm.CompError {
			t.Fatalf("the waiting response failed: %+v", c)
		}
		if c.Op == shm.CompResponse {
			second = c
		}
	}
	if got := string(cli.Message(second)); !answers[got] {
		t.Fatalf("second response %q after %q", got, got1)
	}
}

// A response that waits for pool pages the worker never gives back fails
// with NoBufferSpace after engine.Config.BufferWaitTicks, so a worker
// that holds its pool keeps no RPC alive.
func TestHub_responseWaitForPoolSpaceIsBounded(t *testing.T) {
	params := testWorkerParams
	params.PoolPages = 1
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{Params: params})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	stop := make(chan struct{})
	defer echoRaw(t, srv, stop).Wait()
	defer close(stop)
	cli := attachRaw(t, sockA)
	copy(cli.At.Layout.Arena(cli.At.Region), "echo me")
	for cookie := uint64(1); cookie <= 2; cookie++ {
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: cookie, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 7})
	}
	var got []shm.Completion
	start := time.Now()
	for len(got) < 2 {
		if c := cli.Next(t, 30*time.Second); c.Op == shm.CompResponse || c.Op == shm.CompError {
			got = append(got, c)
		}
	}
	if got[0].Op != shm.CompResponse || got[1].Op != shm.CompError || got[1].Err != shm.ErrCodeNoBufferSpace {
		t.Fatalf("completions %+v; want a response (holding the only page), then NoBufferSpace", got)
	}
	var m engine.Metrics
	calls.do(func() { m = a.ep.Metrics() })
	if m.ResponsesWaitingForBuffer == 0 {
		t.Errorf("responses_waiting_for_buffer 0: the second response did not wait")
	}
	t.Logf("the waiting response failed after %v (%d refusals)", time.Since(start).Round(time.Millisecond), m.ResponsesWaitingForBuffer)
}

// A request that finds the server worker's pool full is dropped; its
// client retries (RESEND, RPC_UNKNOWN, restart) and it arrives once the
// worker has given pages back.
func TestHub_requestWithoutPoolSpaceIsRetried(t *testing.T) {
	params := testWorkerParams
	params.PoolPages = 1
	a, b, sockA, sockB, calls := workerHostsCalls(t, Config{Params: params})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	cli := attachRaw(t, sockA)
	arena := cli.At.Layout.Arena(cli.At.Region)
	copy(arena, "first")
	copy(arena[4096:], "second")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 5})
	first := srv.Expect(t, shm.CompRequest) // holds the pool's only page
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 2, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Offset: 4096, Length: 6})
	deadline := time.Now().Add(5 * time.Second)
	for { // the second request is dropped: no page for it
		var wc Counters
		calls.do(func() { wc = b.hub.counters })
		if wc.NoRecvSpace > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second request was not refused a page")
		}
		time.Sleep(time.Millisecond)
	}
	srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: first.Page, Pages: first.Pages})
	second := srv.Expect(t, shm.CompRequest) // after the client's retry
	if got := string(srv.Message(second)); got != "second" {
		t.Fatalf("second request %q", got)
	}
	var m engine.Metrics
	calls.do(func() { m = a.ep.Metrics() })
	if m.RPCRestarts == 0 {
		t.Errorf("the client did not restart the dropped request (client_rpc_restarts %d)", m.RPCRestarts)
	}
}
