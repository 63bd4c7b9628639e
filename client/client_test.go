package client

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

func TestCall_echoSizesByteExact(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{})
	if err := srv.Bind(99); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, srv, 0, nil)
	cl := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 99}
	for i, n := range []int{1, 100, 65536, 65537, DefaultMaxMessage} {
		msg := pattern(n, byte(i))
		m, err := cl.Call(dst, msg, 5*time.Second)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(m.Data, msg) {
			t.Fatalf("%d bytes: echo differs (got %d bytes)", n, len(m.Data))
		}
		if m.Request || m.ID == 0 || m.ID&1 != 0 || m.Peer.Port != 99 || m.Err != nil {
			t.Errorf("%d bytes: message %+v", n, m)
		}
		m.Release()
		if m.Data != nil {
			t.Error("Data kept after Release")
		}
		m.Release() // idempotent
	}
	stop()
	if st := cl.Stats(); st.Sent != 5 || st.Received != 5 || st.Errors != 0 {
		t.Errorf("client stats %+v", st)
	}
	if st := srv.Stats(); st.Replies != 5 || st.Received != 5 {
		t.Errorf("server stats %+v", st)
	}
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})
}

// Thousands of RPCs of mixed sizes, some through Send and Wait out of
// order, leave no arena byte or pool page behind.
func TestCall_manyNoLeak(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{})
	if err := srv.Bind(5); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, srv, 0, func(m *Message) []byte { return m.Data[:len(m.Data)/2+1] })
	cl := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 5}
	sizes := []int{1, 7, 64, 100, 1500, 4000, 65535, 65536, 70000, 200000}
	rounds := 3000
	if raceEnabled || testing.Short() {
		rounds = 300
	}
	for i := range rounds {
		n := sizes[i%len(sizes)]
		if i%100 == 99 {
			n = DefaultMaxMessage
		}
		msg := pattern(n, byte(i))
		if i%10 == 0 { // three at once, waited for in reverse
			var ids [3]uint64
			for k := range ids {
				id, err := cl.Send(dst, msg[:n-k%n])
				if err != nil {
					t.Fatal(err)
				}
				ids[k] = id
			}
			for k := 2; k >= 0; k-- {
				m, err := cl.Wait(ids[k], 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if want := msg[:(n-k%n)/2+1]; !bytes.Equal(m.Data, want) {
					t.Fatalf("round %d: response %d of %d bytes differs", i, k, len(want))
				}
				m.Release()
			}
			continue
		}
		m, err := cl.Call(dst, msg, 5*time.Second)
		if err != nil {
			t.Fatalf("round %d (%d bytes): %v", i, n, err)
		}
		if !bytes.Equal(m.Data, msg[:n/2+1]) {
			t.Fatalf("round %d: response differs", i)
		}
		m.Release()
	}
	stop()
	if len(cl.rpcs) != 0 || len(cl.queue) != 0 {
		t.Errorf("%d RPCs, %d messages left", len(cl.rpcs), len(cl.queue))
	}
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})
	t.Logf("client %+v", cl.Stats())
}

// Wait takes its RPC's result out of order; Receive takes the rest in the
// order they arrived, requests and results alike.
func TestReceiveVsWait(t *testing.T) {
	f := newFake(t, testParams())
	f.Script(7, shm.ErrCodeNone) // the engine echoes
	a := dial(t, f, Options{})
	b := dial(t, f, Options{})
	if err := a.Bind(9); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Receive(0); err != ErrWaitTimeout || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("empty Receive(0): %v", err)
	}
	bid, err := b.Send(Addr{IP: netip.AddrFrom4(host), Port: 9}, []byte("request"))
	if err != nil {
		t.Fatal(err)
	}
	echo := Addr{IP: netip.AddrFrom4(host), Port: 7}
	a1, err := a.Send(echo, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := a.Send(echo, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.Wait(a2, time.Second)
	if err != nil || string(m.Data) != "two" || m.ID != a2 {
		t.Fatalf("Wait(a2): %v %+v", err, m)
	}
	m.Release()
	req, err := a.Receive(time.Second)
	if err != nil || !req.Request || string(req.Data) != "request" || req.Port != 9 || req.ID&1 != 1 {
		t.Fatalf("first Receive: %v %+v", err, req)
	}
	resp, err := a.Receive(time.Second)
	if err != nil || resp.Request || resp.ID != a1 || string(resp.Data) != "one" || resp.Peer != echo {
		t.Fatalf("second Receive: %v %+v", err, resp)
	}
	resp.Release()
	if _, err := a.Wait(a1, time.Second); !errors.Is(err, ErrNoRPC) {
		t.Errorf("Wait for a result Receive took: %v", err)
	}
	if _, err := a.Wait(1000, 0); !errors.Is(err, ErrNoRPC) {
		t.Errorf("Wait for an unknown RPC: %v", err)
	}
	if _, err := a.Wait(3, 0); !isCode(err, shm.ErrCodeBadRPC) {
		t.Errorf("Wait for an odd id: %v", err)
	}
	if err := a.Reply(req, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	if err := a.Reply(resp, []byte("x")); err == nil {
		t.Error("Reply to a response accepted")
	}
	req.Release()
	m, err = b.Wait(bid, time.Second)
	if err != nil || string(m.Data) != "answer" || m.Peer.Port != 9 {
		t.Fatalf("B's response: %v %+v", err, m)
	}
	m.Release()
	checkNoLeak(t, f, []*Client{a, b}, []int{0, 1})
}

func isCode(err error, c shm.ErrCode) bool {
	var ce *CodeError
	return errors.As(err, &ce) && ce.Code == c
}

// Error completions become the matching errors, through Call, Wait and
// Receive; local checks refuse bad input before anything is submitted.
func TestErrors(t *testing.T) {
	f := newFake(t, testParams())
	codes := map[shm.ErrCode]error{
		shm.ErrCodeTimeout: ErrTimeout, shm.ErrCodeUnreachable: ErrUnreachable,
		shm.ErrCodeAborted: ErrAborted, shm.ErrCodeNoBufferSpace: ErrNoBufferSpace,
		shm.ErrCodeNoRPC: ErrNoRPC, shm.ErrCodeLimit: ErrLimit,
		shm.ErrCodePeerRestarted: ErrPeerRestarted, shm.ErrCodeClosed: ErrClosed,
	}
	port := uint16(100)
	ports := map[shm.ErrCode]uint16{}
	for code := range codes {
		f.Script(port, code)
		ports[code] = port
		port++
	}
	c := dial(t, f, Options{})
	sink := dial(t, f, Options{}) // binds a port and never receives
	if err := sink.Bind(50); err != nil {
		t.Fatal(err)
	}
	for code, want := range codes {
		_, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: ports[code]}, []byte("x"), time.Second)
		if !errors.Is(err, want) || !isCode(err, code) {
			t.Errorf("code %v: got %v", code, err)
		}
	}
	if _, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 77}, []byte("x"), time.Second); !errors.Is(err, ErrPortUnreachable) {
		t.Errorf("unbound port: %v", err)
	}
	if err := c.Bind(50); !errors.Is(err, ErrPortInUse) {
		t.Errorf("bind of a taken port: %v", err)
	}
	if got := c.Stats().Errors; got != uint64(len(codes))+2 {
		t.Errorf("%d error completions counted, want %d", got, len(codes)+2)
	}

	// A per-worker limit refuses the third Send; its range is free again.
	f.SetMaxRPCs(2)
	dst := Addr{IP: netip.AddrFrom4(host), Port: 50}
	id1, err1 := c.Send(dst, []byte("one"))
	id2, err2 := c.Send(dst, []byte("two"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	inUse := c.arena.size - c.Stats().ArenaFree
	if _, err := c.Send(dst, make([]byte, 5000)); !errors.Is(err, ErrLimit) {
		t.Errorf("third Send: %v", err)
	}
	if c.arena.size-c.Stats().ArenaFree != inUse {
		t.Error("the refused Send's arena range was not freed")
	}
	f.SetMaxRPCs(0)
	// Abort one: Wait sees ErrAborted. AbortAll the other: Receive sees it.
	if err := c.Abort(id1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(id1, time.Second); !errors.Is(err, ErrAborted) {
		t.Errorf("aborted RPC: %v", err)
	}
	if err := c.Abort(id1); !errors.Is(err, ErrNoRPC) {
		t.Errorf("abort of an ended RPC: %v", err)
	}
	if err := c.AbortAll(); err != nil {
		t.Fatal(err)
	}
	m, err := c.Receive(0) // AbortAll returns after the failures arrived
	if err != nil || m.ID != id2 || !errors.Is(m.Err, ErrAborted) || m.Data != nil || m.Peer != dst {
		t.Fatalf("Receive after AbortAll: %v %+v", err, m)
	}
	m.Release() // a failure holds no pages

	// Local refusals: nothing reaches the engine.
	before := c.Stats()
	for _, tc := range []struct {
		err  error
		want func(error) bool
	}{
		{c.Bind(0), func(e error) bool { return isCode(e, shm.ErrCodeBadPort) }},
		{c.Bind(0x8000), func(e error) bool { return isCode(e, shm.ErrCodeBadPort) }},
		{c.Abort(3), func(e error) bool { return isCode(e, shm.ErrCodeBadRPC) }},
		{second(c.Send(Addr{Port: 9}, []byte("x"))), func(e error) bool { return isCode(e, shm.ErrCodeBadPeer) }},
		{second(c.Send(Addr{IP: netip.AddrFrom4(host), Port: 0x8000}, []byte("x"))), func(e error) bool { return isCode(e, shm.ErrCodeBadPort) }},
		{second(c.Send(dst, nil)), func(e error) bool { return errors.Is(e, ErrMessageSize) }},
		{second(c.Send(dst, make([]byte, DefaultMaxMessage+1))), func(e error) bool { return errors.Is(e, ErrMessageSize) }},
	} {
		if !tc.want(tc.err) {
			t.Errorf("local check: got %v", tc.err)
		}
	}
	if after := c.Stats(); after != before {
		t.Errorf("refused calls changed the stats: %+v -> %+v", before, after)
	}
	for range 2 { // the sink's two requests, whose clients aborted
		m, err := sink.Receive(time.Second)
		if err != nil || !m.Request {
			t.Fatalf("sink: %v %+v", err, m)
		}
		m.Release()
	}
	checkNoLeak(t, f, []*Client{c, sink}, []int{0, 1})
}

func second[T any](_ T, err error) error { return err }

// A message longer than a small arena is refused locally; a full arena
// makes Call time out (ErrArenaFull) and Send wait until a reply releases
// room.
func TestArena_fullThenFreed(t *testing.T) {
	p := testParams()
	p.ArenaSize = 256 << 10
	f := newFake(t, p)
	srv := dial(t, f, Options{})
	if err := srv.Bind(5); err != nil {
		t.Fatal(err)
	}
	c := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 5}
	if _, err := c.Send(dst, make([]byte, 300<<10)); !errors.Is(err, ErrMessageSize) {
		t.Fatalf("message longer than the arena: %v", err)
	}
	// The server does not answer yet: each request keeps its range.
	var ids []uint64
	for i := range 4 {
		id, err := c.Send(dst, pattern(64<<10, byte(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if free := c.Stats().ArenaFree; free != 0 {
		t.Fatalf("%d bytes free, want a full arena", free)
	}
	start := time.Now()
	if _, err := c.Call(dst, []byte("more"), 20*time.Millisecond); !errors.Is(err, ErrArenaFull) {
		t.Fatalf("Call on a full arena: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 2*time.Second {
		t.Errorf("Call gave up after %v", d)
	}
	if c.Stats().Sent != 4 {
		t.Error("a refused Call was submitted")
	}
	// The server answers after a while; the waiting Send then goes out.
	stop := serve(t, srv, 30*time.Millisecond, nil)
	id, err := c.Send(dst, pattern(64<<10, 9))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	for i, id := range ids {
		m, err := c.Wait(id, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seed := byte(i)
		if i == 4 {
			seed = 9
		}
		if !bytes.Equal(m.Data, pattern(64<<10, seed)) {
			want := pattern(64<<10, seed)
			first := -1
			for k := range want {
				if m.Data[k] != want[k] {
					first = k
					break
				}
			}
			t.Errorf("response %d differs: %d bytes, first difference at %d: %x vs %x", i, len(m.Data), first, m.Data[first:first+8], want[first:first+8])
		}
		m.Release()
	}
	if st := c.Stats(); st.ArenaWaits < 2 {
		t.Errorf("arena waits %d, want ≥ 2", st.ArenaWaits)
	}
	stop()
	checkNoLeak(t, f, []*Client{c, srv}, []int{0, 1})
}

// ReplyAsync answers a burst of requests without waiting for each answer;
// the responses arrive byte-exact, the acceptances are counted, and a
// reply the daemon refuses (its client aborted) comes back through
// Receive as a failed Message with the request's ID.
func TestReplyAsync_burstAndRefusal(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{})
	if err := srv.Bind(11); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 11}
	const n = 40
	ids := make([]uint64, n)
	for i := range ids {
		id, err := cl.Send(dst, pattern(100+i*997, byte(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	// The last request's client gives up before the reply.
	if err := cl.Abort(ids[n-1]); err != nil {
		t.Fatal(err)
	}
	for range n {
		req, err := srv.Receive(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.ReplyAsync(req, req.Data[:len(req.Data)/3+1]); err != nil {
			t.Fatal(err)
		}
		req.Release()
	}
	if err := srv.ReplyAsync(&Message{ID: 3, Request: false}, []byte("x")); err == nil {
		t.Error("ReplyAsync to a non-request accepted")
	}
	for i, id := range ids[:n-1] {
		m, err := cl.Wait(id, time.Second)
		if err != nil {
			t.Fatalf("RPC %d: %v", i, err)
		}
		if want := pattern(100+i*997, byte(i)); !bytes.Equal(m.Data, want[:len(want)/3+1]) {
			t.Fatalf("RPC %d: response differs", i)
		}
		m.Release()
	}
	if _, err := cl.Wait(ids[n-1], time.Second); !errors.Is(err, ErrAborted) {
		t.Errorf("aborted RPC: %v", err)
	}
	fail, err := srv.Receive(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if fail.Request || fail.ID&1 != 1 || !errors.Is(fail.Err, ErrNoRPC) || fail.Data != nil {
		t.Errorf("refused reply: %+v", fail)
	}
	fail.Release() // nothing to give back
	if st := srv.Stats(); st.Replies != n-1 || st.ReplyRefused != 1 || st.Errors != 1 {
		t.Errorf("server stats %+v, want %d replies, 1 refused", st, n-1)
	}
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})
}
