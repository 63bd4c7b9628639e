package client

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// Where the daemon takes them, pages ride on the next Send or Reply and
// ReplyAsync asks for no Accepted: each side of an echo submits one entry
// per exchange (the server's Bind and a last page return aside), and
// nothing is lost.
func TestEcho_oneSubmissionPerExchange(t *testing.T) {
	f := newFake(t, testParams())
	srv := dial(t, f, Options{})
	if err := srv.Bind(99); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, f, Options{})
	dst := Addr{IP: netip.AddrFrom4(host), Port: 99}
	const rounds = 50
	for i := range rounds {
		msg := pattern(100+i, byte(i))
		id, err := cl.Send(dst, msg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := srv.Receive(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.ReplyAsync(req, req.Data); err != nil {
			t.Fatal(err)
		}
		req.Release()
		m, err := cl.Wait(id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Data, msg) {
			t.Fatalf("round %d: echo differs", i)
		}
		m.Release()
	}
	if _, err := srv.Receive(time.Millisecond); err != ErrWaitTimeout { // empty-handed: the last request's pages go back
		t.Fatal(err)
	}
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})
	waitFor(t, "the server's replies to be done", func() bool {
		srv.progress()
		return srv.Stats().Replies == rounds
	})
	si, _ := f.Session(0)
	ci, _ := f.Session(1)
	if si.Quiet != rounds || ci.Quiet != 0 {
		t.Errorf("quiet submissions: server %d, client %d; want %d, 0 (Send waits for its RPC id)", si.Quiet, ci.Quiet, rounds)
	}
	if si.PagesOnSubmit != rounds-1 || ci.PagesOnSubmit != rounds-1 { // each run but the last rides on the next
		t.Errorf("page runs on submissions: server %d, client %d; want %d each", si.PagesOnSubmit, ci.PagesOnSubmit, rounds-1)
	}
	if si.Submissions != rounds+2 || ci.Submissions != rounds+1 { // + Bind and ReturnPages; + ReturnPages
		t.Errorf("submissions: server %d, client %d; want %d, %d", si.Submissions, ci.Submissions, rounds+2, rounds+1)
	}
}

// An engine whose loop sleeps (300 ms at a time here) with its doorbell
// armed: each Call rings it and completes without waiting out the sleep.
func TestCall_ringsASleepingEngine(t *testing.T) {
	eng, err := shmtest.Start(shmtest.Config{Path: filepath.Join(t.TempDir(), "s"), Params: testParams(),
		Doorbell: true, IdleSleep: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	eng.Script(7, shm.ErrCodeNone)
	c := dial(t, eng, Options{Spin: -1})
	if c.att.Doorbell < 0 {
		t.Fatal("the client did not take the engine's doorbell")
	}
	dst := Addr{IP: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: 7}
	for i := range 5 {
		time.Sleep(5 * time.Millisecond) // the engine's loop goes to sleep after 200 µs idle
		m, err := c.Call(dst, pattern(100, byte(i)), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		m.Release()
	}
	if rung, woke := c.Stats().Doorbells, eng.DoorbellWakeups(); rung == 0 || woke == 0 {
		t.Errorf("the client rang %d times, the engine woke %d times; want both", rung, woke)
	}
}

// A long message's pages go back as soon as it is released, without
// waiting for the next Send or Reply: held back, they are the room the
// next long message needs (a 64 MB echo timed out so, its request dropped
// for want of pages at a server that kept the last one's back).
func TestRelease_longMessageGoesBackAtOnce(t *testing.T) {
	f := newFake(t, testParams()) // 40 pages: a quarter is 10
	f.Script(7, shm.ErrCodeNone)
	c := dial(t, f, Options{})
	small, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, pattern(100, 1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, pattern(1_000_000, 2), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	small.Release() // one page: kept back for the next submission
	long.Release()  // 16 pages: back at once, and the small one's with them
	waitFor(t, "the long message's pages back at the engine", func() bool {
		info, _ := f.Session(0)
		return info.PagesHeld == 0
	})
}
