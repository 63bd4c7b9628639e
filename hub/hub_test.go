package hub

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// rawWorker speaks the ring protocol directly, so that tests can write
// anything into the submission ring.
type rawWorker struct{ *shmtest.Raw }

func attachRaw(t *testing.T, path string) *rawWorker { return &rawWorker{shmtest.DialRaw(t, path)} }

// testRawEcho's sizes: 1, 100 and 1500 bytes are under DefaultZeroCopyMin,
// 70000 and 300000 above it; each is a request and a reply.
const echoShort, echoLong = 3, 2

func TestHub_echoThroughTheEngine(t *testing.T) {
	a, b, sockA, sockB, calls := workerHostsCalls(t, Config{})
	testRawEcho(t, sockA, sockB)
	var zc, short, device [2]uint64
	calls.do(func() {
		zc = [2]uint64{a.hub.counters.ZeroCopyMessages, b.hub.counters.ZeroCopyMessages}
		short = [2]uint64{a.hub.counters.CopiedShort, b.hub.counters.CopiedShort}
		device = [2]uint64{a.hub.counters.CopiedDevice, b.hub.counters.CopiedDevice}
	})
	if zc != [2]uint64{} {
		t.Errorf("zero-copy messages %v on hosts that copy payloads", zc)
	}
	if short != [2]uint64{echoShort, echoShort} || device != [2]uint64{echoLong, echoLong} {
		t.Errorf("copied messages: short %v, device %v; want %d and %d on each host", short, device, echoShort, echoLong)
	}
}

// Where the host sends from memory, messages of DefaultZeroCopyMin bytes
// or more go with a payload reference, and each is Released only after
// its reference's packets have left.
func TestHub_echoWithPayloadReferences(t *testing.T) {
	a, b, sockA, sockB, calls := workerHostsCallsZeroCopy(t, Config{})
	testRawEcho(t, sockA, sockB)
	var zc, short [2]uint64
	var left [2]int
	calls.do(func() {
		zc = [2]uint64{a.hub.counters.ZeroCopyMessages, b.hub.counters.ZeroCopyMessages}
		short = [2]uint64{a.hub.counters.CopiedShort, b.hub.counters.CopiedShort}
		left = [2]int{len(a.refs), len(b.refs)}
	})
	if zc != [2]uint64{echoLong, echoLong} || short != [2]uint64{echoShort, echoShort} {
		t.Errorf("zero-copy messages %v, copied short %v; want %d and %d on each host", zc, short, echoLong, echoShort)
	}
	if left != [2]int{} {
		t.Errorf("payload references still held: %v", left)
	}
}

// Config.ZeroCopyMin negative copies every message, on a host that could
// send from memory, and says so; one of 1 byte sends every message from
// the arena.
func TestHub_zeroCopyMinBounds(t *testing.T) {
	a, b, sockA, sockB, calls := workerHostsCallsZeroCopy(t, Config{ZeroCopyMin: -1})
	testRawEcho(t, sockA, sockB)
	var zc, off [2]uint64
	calls.do(func() {
		zc = [2]uint64{a.hub.counters.ZeroCopyMessages, b.hub.counters.ZeroCopyMessages}
		off = [2]uint64{a.hub.counters.CopiedOff, b.hub.counters.CopiedOff}
	})
	if zc != [2]uint64{} || off != [2]uint64{echoShort + echoLong, echoShort + echoLong} {
		t.Errorf("zero-copy off: %v zero-copy, %v copied (off); want none and all", zc, off)
	}

	a, b, sockA, sockB, calls = workerHostsCallsZeroCopy(t, Config{ZeroCopyMin: 1})
	testRawEcho(t, sockA, sockB)
	calls.do(func() { zc = [2]uint64{a.hub.counters.ZeroCopyMessages, b.hub.counters.ZeroCopyMessages} })
	if zc != [2]uint64{echoShort + echoLong, echoShort + echoLong} {
		t.Errorf("zero_copy_min 1: %v zero-copy messages, want all", zc)
	}
}

func testRawEcho(t *testing.T, sockA, sockB string) {
	srv := attachRaw(t, sockB)
	cli := attachRaw(t, sockA)

	srv.Submit(t, shm.Submission{Op: shm.OpBind, Port: 99, Cookie: 7})
	if c := srv.Expect(t, shm.CompAccepted); c.Cookie != 7 || c.Port != 99 {
		t.Fatalf("bind: %+v", c)
	}
	srv.Submit(t, shm.Submission{Op: shm.OpBind, Port: 99, Cookie: 8})
	if c := srv.Expect(t, shm.CompError); c.Err != shm.ErrCodePortInUse || c.Cookie != 8 {
		t.Fatalf("second bind: %+v", c)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for i, size := range []int{1, 100, 1500, 70000, 300000} {
		req := make([]byte, size)
		for j := range req {
			req[j] = byte(rng.Uint32())
		}
		arena := cli.At.Layout.Arena(cli.At.Region)
		copy(arena, req)
		cookie := uint64(100 + i)
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: cookie, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: uint32(size)})
		acc := cli.Expect(t, shm.CompAccepted)
		if acc.Cookie != cookie || acc.RPCID == 0 || acc.RPCID&1 != 0 {
			t.Fatalf("send accepted: %+v", acc)
		}

		rq := srv.Expect(t, shm.CompRequest)
		if rq.Port != 99 || rq.PeerIP != [4]byte{10, 0, 0, 1} || rq.RPCID != acc.RPCID|1 || int(rq.Length) != size {
			t.Fatalf("request: %+v", rq)
		}
		got := srv.Message(rq)
		if !bytes.Equal(got, req) {
			t.Fatalf("size %d: request bytes differ", size)
		}
		// The reply is the request reversed, from the server's arena.
		sarena := srv.At.Layout.Arena(srv.At.Region)
		for j := range got {
			sarena[size-1-j] = got[j]
		}
		srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages, Cookie: 1})
		srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 200 + uint64(i), RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: uint32(size)})
		if c := srv.Expect(t, shm.CompAccepted); c.Cookie != 200+uint64(i) {
			t.Fatalf("reply: %+v", c)
		}

		if c := cli.Expect(t, shm.CompReleased); c.Cookie != cookie || c.Offset != 0 || int(c.Length) != size {
			t.Fatalf("released: %+v", c)
		}
		resp := cli.Expect(t, shm.CompResponse)
		if resp.Cookie != cookie || resp.RPCID != acc.RPCID || int(resp.Length) != size {
			t.Fatalf("response: %+v", resp)
		}
		body := cli.Message(resp)
		for j := range body {
			if body[j] != req[size-1-j] {
				t.Fatalf("size %d: response byte %d differs", size, j)
			}
		}
		cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages, Cookie: 2})
		// The server's arena range comes back once the client acknowledged.
		if c := srv.Expect(t, shm.CompReleased); c.Cookie != 200+uint64(i) || int(c.Length) != size {
			t.Fatalf("server released: %+v", c)
		}
	}
	// Pages returned twice, or never held: an error, nothing changes.
	cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: 0, Pages: 1, Cookie: 3})
	if c := cli.Expect(t, shm.CompError); c.Err != shm.ErrCodeBadPage || c.Cookie != 3 {
		t.Fatalf("return of pages not held: %+v", c)
	}
}

// bindRaw binds port on a raw worker.
func bindRaw(t *testing.T, w *rawWorker, port uint16) {
	t.Helper()
	w.Submit(t, shm.Submission{Op: shm.OpBind, Port: port, Cookie: 1})
	w.Expect(t, shm.CompAccepted)
}

// echoRaw answers requests on a raw worker with their own bytes until
// stop is closed; it returns the pages as it goes.
func echoRaw(t *testing.T, w *rawWorker, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		arena := w.At.Layout.Arena(w.At.Region)
		var slot shm.Slot
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !w.CQ.Pop(&slot) {
				time.Sleep(2 * time.Microsecond)
				continue
			}
			c, code := shm.ParseCompletion(&slot, &w.Lim)
			if code != shm.ErrCodeNone || c.Op != shm.CompRequest {
				continue // Accepted, Released
			}
			copy(arena, w.Message(c)) // one at a time: the range is free again
			var s shm.Slot
			(&shm.Submission{Op: shm.OpReturnPages, Page: c.Page, Pages: c.Pages}).Encode(&s)
			for !w.SQ.Push(&s) {
			}
			(&shm.Submission{Op: shm.OpReply, RPCID: c.RPCID, PeerIP: c.PeerIP, PeerPort: c.PeerPort, Length: c.Length}).Encode(&s)
			for !w.SQ.Push(&s) {
			}
		}
	}()
	return &wg
}

// Garbage in one worker's submission ring gets error completions, one per
// entry, while another worker of the same host carries on with RPCs.
func TestHub_garbageSubmissionsRefusedOthersUndisturbed(t *testing.T) {
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	stop := make(chan struct{})
	defer echoRaw(t, srv, stop).Wait()
	defer close(stop)

	good := attachRaw(t, sockA)
	bad := attachRaw(t, sockA)
	rng := rand.New(rand.NewPCG(7, 7))
	const garbage = 2000
	var got int
	done := make(chan struct{})
	go func() { // the bad worker: random slots, some of them shaped like real ops
		defer close(done)
		for i := range garbage {
			var s shm.Slot
			for j := range s {
				s[j] = byte(rng.Uint32())
			}
			if i%3 == 0 { // a plausible op with random fields
				s[0] = byte(1 + rng.IntN(6))
			}
			for !bad.SQ.Push(&s) {
				time.Sleep(time.Microsecond)
				for { // keep the CQ moving
					var c shm.Slot
					if !bad.CQ.Pop(&c) {
						break
					}
					got++
				}
			}
		}
	}()
	arena := good.At.Layout.Arena(good.At.Region)
	for i := range 300 {
		msg := []byte("rpc number " + string(rune('a'+i%26)))
		copy(arena, msg)
		good.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: uint64(i + 1), PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: uint32(len(msg))})
		good.Expect(t, shm.CompAccepted)
		good.Expect(t, shm.CompReleased)
		resp := good.Expect(t, shm.CompResponse)
		if !bytes.Equal(good.Message(resp), msg) {
			t.Fatalf("rpc %d: response differs", i)
		}
		good.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages})
	}
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for got < garbage && time.Now().Before(deadline) {
		var s shm.Slot
		if !bad.CQ.Pop(&s) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		c, code := shm.ParseCompletion(&s, &bad.Lim)
		if code != shm.ErrCodeNone || c.Op != shm.CompError {
			t.Fatalf("garbage answered with %v (%v): %+v", c.Op, code, c)
		}
		got++
	}
	if got != garbage {
		t.Fatalf("%d completions for %d garbage entries", got, garbage)
	}
	var wc Counters
	calls.do(func() { wc = a.hub.counts() })
	if wc.BadEntries+wc.Refused < garbage || wc.ActiveSessions != 2 {
		t.Errorf("counters: %+v", wc)
	}
}

// A worker may have max_outstanding RPCs in flight; one more is refused
// with Limit and releases its arena range at once.
func TestHub_outstandingLimit(t *testing.T) {
	_, _, sockA, sockB := workerHosts(t, Config{MaxOutstanding: 4})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99) // binds, never answers
	cli := attachRaw(t, sockA)
	for i := range 4 {
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: uint64(i + 1), PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 10})
		cli.Expect(t, shm.CompAccepted)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 9, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 10})
	c := cli.Expect(t, shm.CompError)
	if c.Err != shm.ErrCodeLimit || c.Cookie != 9 || c.Flags&shm.CompFlagReleased == 0 {
		t.Fatalf("fifth send: %+v", c)
	}
	// Abort one: its error completion, then room for another.
	cli.Submit(t, shm.Submission{Op: shm.OpAbortAll, Cookie: 10})
	var aborted int
	for aborted < 4 {
		c := cli.Next(t, 5*time.Second)
		switch {
		case c.Op == shm.CompReleased:
		case c.Op == shm.CompError && c.Err == shm.ErrCodeAborted:
			aborted++
		default:
			t.Fatalf("after abort-all: %+v", c)
		}
	}
	if c := cli.Expect(t, shm.CompAccepted); c.Cookie != 10 {
		t.Fatalf("abort-all: %+v", c)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 11, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 10})
	cli.Expect(t, shm.CompAccepted)
}

// workerChildEnv makes the test binary a worker process that attaches to
// the socket, sends one RPC to 10.0.0.2:99, says "sent" and waits to be
// killed.
const workerChildEnv = "HOMA_TEST_WORKER_CHILD"

func workerChild(sock string) int {
	at, err := shm.Dial(sock)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	sq, _ := shm.NewProducer(at.Layout.SQ(at.Region), at.Layout.SQEntries)
	cq, _ := shm.NewConsumer(at.Layout.CQ(at.Region), at.Layout.CQEntries)
	copy(at.Layout.Arena(at.Region), "never answered")
	var s shm.Slot
	(&shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: 14}).Encode(&s)
	sq.Push(&s)
	for !cq.Pop(&s) {
		time.Sleep(10 * time.Microsecond)
	}
	fmt.Println("sent")
	for { // until killed; a bare select{} is a deadlock to the runtime, which ends the process
		time.Sleep(time.Hour)
	}
}

// daemonFootprint counts this process's open descriptors and its
// mappings of worker regions.
func daemonFootprint(t *testing.T) (fds, regions int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents), strings.Count(string(maps), "homa-worker")
}

// Killing a worker in the middle of an RPC aborts the RPC and frees its
// region: the daemon's descriptors and mappings return to where they were.
func TestHub_killedWorkerIsCleanedUp(t *testing.T) {
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99) // binds, never answers
	baseFDs, baseRegions := daemonFootprint(t)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerChildEnv+"="+sockA)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "sent\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("worker child said %q", line)
	}
	srv.Expect(t, shm.CompRequest) // the RPC is under way
	var rpcs, sessions int
	calls.do(func() { rpcs, sessions = a.ep.NumRPCs(), len(a.hub.sessions) })
	if rpcs != 1 || sessions != 1 {
		t.Fatalf("before the kill: %d RPCs, %d sessions on the client's host", rpcs, sessions)
	}
	// The session holds the region's memfd, the eventfd and the socket
	// (the child's pipe and pidfd come on top).
	if fds, regions := daemonFootprint(t); fds < baseFDs+3 || regions != baseRegions+1 {
		t.Errorf("with the worker: %d descriptors (base %d), %d region mappings (base %d); want at least +3 and +1", fds, baseFDs, regions, baseRegions)
	}
	cmd.Process.Kill()
	cmd.Wait()

	deadline := time.Now().Add(5 * time.Second)
	for {
		calls.do(func() { rpcs, sessions = a.ep.NumRPCs(), len(a.hub.sessions) })
		fds, regions := daemonFootprint(t)
		if rpcs == 0 && sessions == 0 && fds == baseFDs && regions == baseRegions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: %d RPCs, %d sessions, %d descriptors (base %d), %d region mappings (base %d)",
				rpcs, sessions, fds, baseFDs, regions, baseRegions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var wc Counters
	calls.do(func() { wc = a.hub.counts() })
	if wc.Attached != 1 || wc.Detached != 1 || wc.OutstandingRPCs != 0 {
		t.Errorf("client host's worker counters: %+v", wc)
	}
}

// A pass with attached, idle workers allocates nothing.
func TestHub_idlePassAllocatesNothing(t *testing.T) {
	n := newTestNet(t)
	a := n.hosts[0]
	sock := a.openHub(t, t.TempDir(), Config{MaxOutstanding: 8})
	w := attachRaw(t, sock)
	for len(a.hub.sessions) == 0 {
		n.pass() // takes the session
	}
	w.Submit(t, shm.Submission{Op: shm.OpBind, Port: 5, Cookie: 1})
	for w.CQ.Len() == 0 {
		n.pass()
	}
	if allocs := testing.AllocsPerRun(1000, n.pass); allocs != 0 {
		t.Errorf("a pass with an idle worker allocates %.1f times, want 0", allocs)
	}
	w.At.Close()
	closeWhilePolling(n, a.hub)
}
