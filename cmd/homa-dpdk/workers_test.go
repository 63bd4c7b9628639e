package main

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// testWorkerParams are small regions: 64 KB arena, 32 pool pages.
var testWorkerParams = shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 32}

// workerHosts makes a ring pair whose hosts each have a worker socket,
// and runs both hosts' passes on a goroutine until the test ends.
func workerHosts(t *testing.T, lim workerLimits) (a, b *hostLoop, sockA, sockB string) {
	t.Helper()
	a, b = ringHosts(t, 2, 0)
	dir := t.TempDir()
	sockA, sockB = filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	if lim.params.SQEntries == 0 {
		lim.params = testWorkerParams
	}
	if lim.maxOutstanding == 0 {
		lim.maxOutstanding = 1024
	}
	for _, hs := range []struct {
		h    *hostLoop
		path string
	}{{a, sockA}, {b, sockB}} {
		hub, err := newWorkerHub(hs.h, hs.path, nil, nil, lim)
		if err != nil {
			t.Fatal(err)
		}
		hs.h.workers = hub
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			a.pass()
			b.pass()
		}
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	t.Cleanup(func() { // first: workers detach while the loop runs
		a.workers.close()
		b.workers.close()
	})
	return a, b, sockA, sockB
}

// rawWorker speaks the ring protocol directly, so that tests can write
// anything into the submission ring.
type rawWorker struct {
	at  *shm.Attach
	sq  *shm.Producer
	cq  *shm.Consumer
	lim shm.Limits
}

func attachRaw(t *testing.T, path string) *rawWorker {
	t.Helper()
	at, err := shm.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	sq, err1 := shm.NewProducer(at.Layout.SQ(at.Region), at.Layout.SQEntries)
	cq, err2 := shm.NewConsumer(at.Layout.CQ(at.Region), at.Layout.CQEntries)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	w := &rawWorker{at: at, sq: sq, cq: cq, lim: at.Layout.Limits(1_000_000)}
	t.Cleanup(func() { w.at.Close() })
	return w
}

func (w *rawWorker) pushSlot(t *testing.T, s *shm.Slot) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !w.sq.Push(s) {
		if time.Now().After(deadline) {
			t.Fatal("submission ring stays full")
		}
		time.Sleep(10 * time.Microsecond)
	}
}

func (w *rawWorker) submit(t *testing.T, s shm.Submission) {
	t.Helper()
	var slot shm.Slot
	s.Encode(&slot)
	w.pushSlot(t, &slot)
}

// next returns the next completion, failing the test after timeout.
func (w *rawWorker) next(t *testing.T, timeout time.Duration) shm.Completion {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var slot shm.Slot
	for !w.cq.Pop(&slot) {
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", timeout)
		}
		time.Sleep(5 * time.Microsecond)
	}
	c, code := shm.ParseCompletion(&slot, &w.lim)
	if code != shm.ErrCodeNone {
		t.Fatalf("bad completion from the daemon: %v (%+v)", code, c)
	}
	return c
}

// expect returns the next completion, which must have op.
func (w *rawWorker) expect(t *testing.T, op shm.CompOp) shm.Completion {
	t.Helper()
	c := w.next(t, 5*time.Second)
	if c.Op != op {
		t.Fatalf("completion %v (err %v), want %v: %+v", c.Op, c.Err, op, c)
	}
	return c
}

func (w *rawWorker) message(c shm.Completion) []byte {
	pool := w.at.Layout.Pool(w.at.Region)
	off := uint64(c.Page) * shm.PageSize
	return pool[off : off+uint64(c.Length)]
}

func TestWorkers_echoThroughTheEngine(t *testing.T) {
	_, _, sockA, sockB := workerHosts(t, workerLimits{})
	srv := attachRaw(t, sockB)
	cli := attachRaw(t, sockA)

	srv.submit(t, shm.Submission{Op: shm.OpBind, Port: 99, Cookie: 7})
	if c := srv.expect(t, shm.CompAccepted); c.Cookie != 7 || c.Port != 99 {
		t.Fatalf("bind: %+v", c)
	}
	srv.submit(t, shm.Submission{Op: shm.OpBind, Port: 99, Cookie: 8})
	if c := srv.expect(t, shm.CompError); c.Err != shm.ErrCodePortInUse || c.Cookie != 8 {
		t.Fatalf("second bind: %+v", c)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for i, size := range []int{1, 100, 1500, 70000, 300000} {
		req := make([]byte, size)
		for j := range req {
			req[j] = byte(rng.Uint32())
		}
		arena := cli.at.Layout.Arena(cli.at.Region)
		copy(arena, req)
		cookie := uint64(100 + i)
		cli.submit(t, shm.Submission{Op: shm.OpSend, Cookie: cookie, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: uint32(size)})
		acc := cli.expect(t, shm.CompAccepted)
		if acc.Cookie != cookie || acc.RPCID == 0 || acc.RPCID&1 != 0 {
			t.Fatalf("send accepted: %+v", acc)
		}

		rq := srv.expect(t, shm.CompRequest)
		if rq.Port != 99 || rq.PeerIP != [4]byte{10, 0, 0, 1} || rq.RPCID != acc.RPCID|1 || int(rq.Length) != size {
			t.Fatalf("request: %+v", rq)
		}
		got := srv.message(rq)
		if !bytes.Equal(got, req) {
			t.Fatalf("size %d: request bytes differ", size)
		}
		// The reply is the request reversed, from the server's arena.
		sarena := srv.at.Layout.Arena(srv.at.Region)
		for j := range got {
			sarena[size-1-j] = got[j]
		}
		srv.submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages, Cookie: 1})
		srv.submit(t, shm.Submission{Op: shm.OpReply, Cookie: 200 + uint64(i), RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: uint32(size)})
		if c := srv.expect(t, shm.CompAccepted); c.Cookie != 200+uint64(i) {
			t.Fatalf("reply: %+v", c)
		}

		if c := cli.expect(t, shm.CompReleased); c.Cookie != cookie || c.Offset != 0 || int(c.Length) != size {
			t.Fatalf("released: %+v", c)
		}
		resp := cli.expect(t, shm.CompResponse)
		if resp.Cookie != cookie || resp.RPCID != acc.RPCID || int(resp.Length) != size {
			t.Fatalf("response: %+v", resp)
		}
		body := cli.message(resp)
		for j := range body {
			if body[j] != req[size-1-j] {
				t.Fatalf("size %d: response byte %d differs", size, j)
			}
		}
		cli.submit(t, shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages, Cookie: 2})
		// The server's arena range comes back once the client acknowledged.
		if c := srv.expect(t, shm.CompReleased); c.Cookie != 200+uint64(i) || int(c.Length) != size {
			t.Fatalf("server released: %+v", c)
		}
	}
	// Pages returned twice, or never held: an error, nothing changes.
	cli.submit(t, shm.Submission{Op: shm.OpReturnPages, Page: 0, Pages: 1, Cookie: 3})
	if c := cli.expect(t, shm.CompError); c.Err != shm.ErrCodeBadPage || c.Cookie != 3 {
		t.Fatalf("return of pages not held: %+v", c)
	}
}
