package hub

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/engine"
)

// Workers that close, with the real Go client (package client) as their
// worker side: a server answers its client's calls and leaves at once;
// what it submitted must reach the client (linger.go).

const (
	lingerCalls = 3         // requests each server answers before it closes
	lingerReply = 256 << 10 // bytes of each reply
)

// lingerPattern is reply i's bytes for round r.
func lingerPattern(r, i int) []byte {
	b := make([]byte, lingerReply)
	for k := range b {
		b[k] = byte(k*7 + r*3 + i)
	}
	return b
}

// dialClient attaches a worker to the daemon at sock, closed when the
// test ends (a second Close of one the test closed does nothing).
func dialClient(t *testing.T, sock string) *client.Client {
	t.Helper()
	c, err := client.Dial(sock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serveAndClose is one server: it binds port, takes lingerCalls requests,
// answers each with its pattern (Reply, or ReplyAsync when async) and
// closes at once. ready is closed once it is bound.
func serveAndClose(sock string, port uint16, round int, async bool, ready chan<- struct{}) error {
	s, err := client.Dial(sock, client.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Bind(port); err != nil {
		return err
	}
	close(ready)
	for range lingerCalls {
		req, err := s.Receive(10 * time.Second)
		if err != nil {
			return err
		}
		resp := lingerPattern(round, int(req.Data[0]))
		if async {
			err = s.ReplyAsync(req, resp)
		} else {
			err = s.Reply(req, resp)
		}
		req.Release()
		if err != nil {
			return err
		}
	}
	return s.Close()
}

// callRound sends lingerCalls requests to dst and waits for each result;
// it returns how many came back whole and the errors of the others.
func callRound(t *testing.T, c *client.Client, dst client.Addr, round int) (whole int, errs []error) {
	t.Helper()
	var ids [lingerCalls]uint64
	for i := range ids {
		id, err := c.Send(dst, []byte{byte(i), byte(round)})
		if err != nil {
			t.Fatalf("round %d: send %d: %v", round, i, err)
		}
		ids[i] = id
	}
	for i, id := range ids {
		m, err := c.Wait(id, 10*time.Second)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if bytes.Equal(m.Data, lingerPattern(round, i)) {
			whole++
		} else {
			errs = append(errs, errors.New("a reply came back different"))
		}
		m.Release()
	}
	return whole, errs
}

// 1,000 servers in sequence each answer 3 calls with 256 KB and close at
// once (half with Reply, half with ReplyAsync, whose last reply is often
// still in the submission ring at the close): 0 of 3,000 replies lost,
// no client error. Before linger.go about 1 server in
// 2 lost its last reply (the client told ErrPeerRestarted).
func TestHub_closingServersLoseNoReply(t *testing.T) {
	const rounds = 1000
	a, b, sockA, sockB, calls := workerHostsCalls(t, Config{MaxOutstanding: 64})
	c := dialClient(t, sockA)
	lost, start := 0, time.Now()
	var firstErrs []string
	for r := range rounds {
		ready, done := make(chan struct{}), make(chan error, 1)
		// A port of its own: the last server's may be bound still, until
		// the loop takes its detach.
		port := uint16(100 + r)
		go func() { done <- serveAndClose(sockB, port, r, r%2 == 1, ready) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("round %d: server: %v", r, err)
		}
		whole, errs := callRound(t, c, client.Addr{IP: netip.AddrFrom4(b.ip), Port: port}, r)
		if err := <-done; err != nil {
			t.Fatalf("round %d: server: %v", r, err)
		}
		lost += lingerCalls - whole
		for _, e := range errs {
			if len(firstErrs) < 5 {
				firstErrs = append(firstErrs, e.Error())
			}
		}
	}
	var cnt Counters
	calls.do(func() { cnt = b.hub.counts() })
	t.Logf("%d servers in %v; replies taken after the close %d, lingered %d, abandoned %d; client A %d sessions",
		rounds, time.Since(start).Round(time.Millisecond), cnt.RepliesAfterClose, cnt.LingeredReplies, cnt.AbandonedReplies, a.hub.counts().ActiveSessions)
	if lost != 0 {
		t.Fatalf("%d of %d replies lost (%d servers); first errors: %s", lost, rounds*lingerCalls, rounds, strings.Join(firstErrs, "; "))
	}
	if cnt.AbandonedReplies != 0 {
		t.Fatalf("%d replies abandoned", cnt.AbandonedReplies)
	}
}

// A server that pushes its 3 replies (ReplyAsync) and closes while the
// loop is busy elsewhere: the loop takes the detach with the replies still
// in the submission ring. They are taken first (RepliesAfterClose 3) and
// reach the client, 3 of 3; before linger.go the session ended with them
// unread, and the client's RPCs failed.
func TestHub_repliesLeftInTheRingAtCloseAreSent(t *testing.T) {
	_, b, sockA, sockB, calls := workerHostsCalls(t, Config{})
	c, s := dialClient(t, sockA), dialClient(t, sockB)
	if err := s.Bind(7); err != nil {
		t.Fatal(err)
	}
	var ids [lingerCalls]uint64
	var err error
	for i := range ids {
		if ids[i], err = c.Send(client.Addr{IP: netip.AddrFrom4(b.ip), Port: 7}, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []*client.Message
	for range lingerCalls {
		req, err := s.Receive(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	blocked, unblock := make(chan struct{}), make(chan struct{})
	go calls.do(func() { close(blocked); <-unblock })
	<-blocked
	for _, req := range reqs {
		if err := s.ReplyAsync(req, lingerPattern(0, int(req.Data[0]))); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	time.Sleep(50 * time.Millisecond) // the detach is queued behind the loop
	close(unblock)
	whole := 0
	for i, id := range ids {
		m, err := c.Wait(id, 5*time.Second)
		if err != nil {
			t.Logf("call %d: %v", i, err)
			continue
		}
		if bytes.Equal(m.Data, lingerPattern(0, i)) {
			whole++
		}
		m.Release()
	}
	var cnt Counters
	calls.do(func() { cnt = b.hub.counts() })
	if whole != lingerCalls || cnt.RepliesAfterClose != lingerCalls {
		t.Fatalf("%d of %d replies arrived whole; %d taken from the ring after the close", whole, lingerCalls, cnt.RepliesAfterClose)
	}
}

// dropAfter makes h's host deliver the next n frames it receives and drop
// the rest, until pass; run both on the loop.
func dropAfter(h *testHost, n int) (pass func()) {
	seen := 0
	h.mh.SetReceive(func(f []byte) {
		if seen++; seen <= n {
			h.ep.Receive(f)
		}
	})
	return func() { h.mh.SetReceive(func(f []byte) { h.ep.Receive(f) }) }
}

// A reply its client cannot take (every packet after its first 20 lost)
// lingers for Config.Linger (200 ms here) and no longer: while it does,
// the session holds its place under MaxSessionsPerUID (1 here: a new
// worker of the uid is refused); then it is abandoned (AbandonedReplies
// 1), the session is freed, and the client, once it hears the server
// again, fails with ErrPortUnreachable (the server closed), not
// ErrPeerRestarted. Before linger.go the reply was aborted at the close:
// no session was held, and the client was told ErrPeerRestarted.
func TestHub_lingerBoundAbandonsRepliesAndSaysClosed(t *testing.T) {
	n := newTestNetWith(t, func(c *engine.Config) { c.TimeoutTicks = 2000 }) // the client outlives the linger
	a, b, sockA, sockB, calls := serveWorkers(t, n, Config{MaxSessionsPerUID: 1, Linger: 200 * time.Millisecond})
	c, s := dialClient(t, sockA), dialClient(t, sockB)
	if err := s.Bind(7); err != nil {
		t.Fatal(err)
	}
	id, err := c.Send(client.Addr{IP: netip.AddrFrom4(b.ip), Port: 7}, []byte{0})
	if err != nil {
		t.Fatal(err)
	}
	req, err := s.Receive(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var pass func()
	calls.do(func() { pass = dropAfter(a, 20) })
	if err := s.Reply(req, lingerPattern(0, 0)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	closed := time.Now()
	time.Sleep(50 * time.Millisecond)
	if extra, err := client.Dial(sockB, client.Options{}); err == nil {
		extra.Close()
		t.Error("a new session of the uid was admitted while the closed one lingered (max_sessions_per_uid 1)")
	}
	var cnt Counters
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		calls.do(func() { cnt = b.hub.counts() })
		if cnt.AbandonedReplies != 0 {
			break
		}
	}
	lingered := time.Since(closed)
	calls.do(pass)
	_, werr := c.Wait(id, 5*time.Second)
	if cnt.LingeredReplies != 1 || cnt.AbandonedReplies != 1 || lingered > 2*time.Second {
		t.Fatalf("lingered %d, abandoned %d after %v; want 1, 1 after about 200 ms", cnt.LingeredReplies, cnt.AbandonedReplies, lingered)
	}
	if !errors.Is(werr, client.ErrPortUnreachable) {
		t.Fatalf("the client's RPC ended with %v, want ErrPortUnreachable (the server closed)", werr)
	}
	again, err := client.Dial(sockB, client.Options{})
	if err != nil {
		t.Fatalf("after the linger a new session of the uid is refused: %v", err)
	}
	again.Close()
}
