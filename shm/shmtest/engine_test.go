package shmtest

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

var here = defaultHost

// A Send to a scripted echo port, then one to a worker's port answered
// with a Reply: the completions each side sees, per Release mode.
func TestRelease_modes(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		echo     string // the client's completions of the echo
		accepted string // of the Send to the server, before the Request
		server   string // the server's, after its Reply
		ended    string // the client's, after the Reply
	}{
		{"end",
			`accepted c1; released c1 4@0; response c1 "ping" from 7`,
			`accepted c2`,
			`accepted c3; released c3 4@0`,
			`released c2 3@4; response c2 "PONG" from 9`},
		{"separate",
			`accepted c1; released c1 4@0; response c1 "ping" from 7`,
			`accepted c2; released c2 3@4`,
			`accepted c3; released c3 4@0`,
			`response c2 "PONG" from 9`},
		{"flag",
			`accepted c1 released; response c1 "ping" from 7`,
			`accepted c2 released`,
			`accepted c3 released`,
			`response c2 "PONG" from 9`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			mode, err := ParseRelease(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			e := start(t, Config{Release: mode})
			e.Script(7, shm.ErrCodeNone)
			srv, cl := attach(t, e), attach(t, e)
			srv.submit(shm.Submission{Op: shm.OpBind, Cookie: 9, Port: 9})
			if got, _ := srv.read(1); got != "accepted c9" {
				t.Fatalf("bind: %s", got)
			}
			cl.send(1, here, 7, "ping")
			cl.send(2, here, 9, "req")
			got, req := srv.read(1)
			if got != `request c0 "req" from 32770` {
				t.Errorf("request: %s", got)
			}
			srv.reply(3, req, "PONG")
			for _, step := range []struct {
				w          *worker
				what, want string
			}{{cl, "echo", tc.echo}, {cl, "accepted", tc.accepted}, {srv, "server", tc.server},
				{cl, "ended", tc.ended}} {
				if got, _ := step.w.read(lines(step.want)); got != step.want {
					t.Errorf("%s:\n got %s\nwant %s", step.what, got, step.want)
				}
			}
			cl.idle()
			srv.idle()
		})
	}
	if _, err := ParseRelease("later"); err == nil {
		t.Error("ParseRelease took an unknown name")
	}
}

// lines is the number of completions in a line of worker.read.
func lines(s string) int { return strings.Count(s, "; ") + 1 }

// Routing: another host, an unbound port, a scripted failure, a taken
// port, the per-session RPC limit.
func TestSend_errors(t *testing.T) {
	e := start(t, Config{})
	e.Script(5, shm.ErrCodePeerRestarted)
	w := attach(t, e)
	w.send(1, [4]byte{10, 1, 2, 3}, 7, "x")
	w.send(2, here, 77, "x")
	w.send(3, here, 5, "x")
	w.submit(shm.Submission{Op: shm.OpBind, Cookie: 4, Port: 5})
	want := "accepted c1; released c1 1@0; error c1 peer unreachable; " +
		"accepted c2; released c2 1@1; error c2 port unreachable; " +
		"accepted c3; released c3 1@2; error c3 peer restarted; error c4 port in use"
	if got, _ := w.read(10); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	w.submit(shm.Submission{Op: shm.OpBind, Cookie: 5, Port: 6})
	w.read(1)
	e.SetMaxRPCs(1)
	w.send(6, here, 6, "one")
	w.send(7, here, 6, "two")
	want = `accepted c6; request c0 "one" from 32769; error c7 worker limit reached`
	if got, _ := w.read(3); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if info, _ := e.Session(0); info.RPCs != 1 || info.Submissions != 7 || info.BadSubmissions != 0 {
		t.Errorf("session %+v", info)
	}
}

// A request that finds no free pages at its server waits there; pages
// given back let it through.
func TestSend_requestWaitsForPages(t *testing.T) {
	p := testParams()
	p.PoolPages = 1
	e := start(t, Config{Params: p})
	srv, cl := attach(t, e), attach(t, e)
	srv.submit(shm.Submission{Op: shm.OpBind, Cookie: 1, Port: 3})
	srv.read(1)
	cl.send(1, here, 3, "first")
	cl.send(2, here, 3, "second")
	cl.read(2)
	got, first := srv.read(1)
	if got != `request c0 "first" from 32770` {
		t.Fatalf("first: %s", got)
	}
	srv.idle()
	srv.submit(shm.Submission{Op: shm.OpReturnPages, Page: first.Page, Pages: first.Pages})
	if got, _ := srv.read(1); got != `request c0 "second" from 32770` {
		t.Errorf("second: %s", got)
	}
}

// Without AbortEndsServer the server keeps an aborted RPC and its Reply
// is accepted; with it, the Reply is refused. A client that leaves is
// treated the same way.
func TestAbort_atTheServer(t *testing.T) {
	for _, ends := range []bool{false, true} {
		e := start(t, Config{AbortEndsServer: ends})
		srv, cl := attach(t, e), attach(t, e)
		srv.submit(shm.Submission{Op: shm.OpBind, Cookie: 1, Port: 3})
		srv.read(1)
		cl.send(1, here, 3, "a")
		_, acc := cl.read(1)
		_, req := srv.read(1)
		cl.submit(shm.Submission{Op: shm.OpAbort, Cookie: 2, RPCID: acc.RPCID})
		if got, _ := cl.read(3); got != "released c1 1@0; error c1 aborted; accepted c2" {
			t.Errorf("abort: %s", got)
		}
		cl.submit(shm.Submission{Op: shm.OpAbort, Cookie: 3, RPCID: acc.RPCID})
		if got, _ := cl.read(1); got != "error c3 no such RPC" {
			t.Errorf("second abort: %s", got)
		}
		srv.reply(4, req, "late")
		want := "accepted c4; released c4 4@0"
		if ends {
			want = "error c4 no such RPC"
		}
		if got, _ := srv.read(lines(want)); got != want {
			t.Errorf("AbortEndsServer %v: reply after the abort: %s", ends, got)
		}
		cl.idle()

		cl.send(5, here, 3, "b")
		cl.read(1)
		_, req = srv.read(1)
		cl.a.Close()
		waitFor(t, func() bool { info, _ := e.Session(1); return !info.Live })
		srv.reply(6, req, "gone")
		want = "accepted c6; released c6 4@4"
		if ends {
			want = "error c6 no such RPC"
		}
		if got, _ := srv.read(lines(want)); got != want {
			t.Errorf("AbortEndsServer %v: reply after the client left: %s", ends, got)
		}
	}
}

// A server that leaves fails the RPCs it held at their clients.
func TestDetach_serverFailsItsRPCs(t *testing.T) {
	e := start(t, Config{})
	srv, cl := attach(t, e), attach(t, e)
	srv.submit(shm.Submission{Op: shm.OpBind, Cookie: 1, Port: 3})
	srv.read(1)
	cl.send(1, here, 3, "a")
	cl.read(1)
	srv.read(1)
	if !e.Kill(0) {
		t.Fatal("Kill of a live session")
	}
	if got, _ := cl.read(2); got != "released c1 1@0; error c1 closed" {
		t.Errorf("client: %s", got)
	}
	if e.Kill(0) {
		t.Error("Kill of a dead session")
	}
	// The server frees the region once the detach has returned, on its
	// control goroutine: wait for it.
	for deadline := time.Now().Add(5 * time.Second); e.Sessions() != 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := e.Sessions(); n != 1 {
		t.Errorf("%d sessions after the kill, want 1", n)
	}
	cl.send(2, here, 3, "b") // the port went with its server
	if got, _ := cl.read(3); got != "accepted c2; released c2 1@1; error c2 port unreachable" {
		t.Errorf("after: %s", got)
	}
}

// Pause stops the loop (Inject waits for Resume); Refuse refuses attaches;
// Hold hands pages over; a malformed submission is counted.
func TestControl_hooks(t *testing.T) {
	e := start(t, Config{})
	e.Refuse(true)
	if _, err := shm.Dial(e.Path()); !errors.Is(err, shm.ErrRefused) {
		t.Fatalf("attach while refusing: %v", err)
	}
	e.Refuse(false)
	w := attach(t, e)
	e.Pause()
	w.submit(shm.Submission{Op: shm.OpBind, Cookie: 1, Port: 3})
	var raw shm.Slot
	(&shm.Completion{Op: shm.CompAccepted, Cookie: 77}).Encode(&raw)
	if !e.Inject(0, raw) || e.Inject(1, raw) {
		t.Fatal("Inject: session 0 is live, 1 does not exist")
	}
	w.idle()
	e.Resume()
	if got, _ := w.read(2); got != "accepted c77; accepted c1" {
		t.Errorf("after Resume: %s", got)
	}
	page, ok := e.Hold(-1, 3)
	if info, _ := e.Session(-1); !ok || page != 0 || info.PagesHeld != 3 || info.Index != 0 {
		t.Errorf("Hold: page %d %v, %+v", page, ok, info)
	}
	w.submit(shm.Submission{Op: shm.OpReturnPages, Page: 0, Pages: 4})
	w.submit(shm.Submission{Op: shm.OpReturnPages, Page: 0, Pages: 3})
	w.submit(shm.Submission{Op: shm.OpSend, Cookie: 9}) // no peer, no length
	if got, _ := w.read(2); got != "error c0 page range outside the receive pool; error c9 bad peer address" {
		t.Errorf("%s", got)
	}
	info, _ := e.Session(0)
	if info.PagesHeld != 0 || info.BadSubmissions != 1 || e.BadSubmissions() != 1 || info.Layout != w.a.Layout {
		t.Errorf("session %+v", info)
	}
}

// RingStart puts both rings' indices just below 1<<64: they wrap.
func TestRingStart_wraps(t *testing.T) {
	first := uint64(math.MaxUint64 - 20)
	e := start(t, Config{RingStart: first})
	e.Script(7, shm.ErrCodeNone)
	w := attach(t, e)
	cqTail := func() uint64 { return binary.LittleEndian.Uint64(w.a.Layout.CQ(w.a.Region)) }
	if got := cqTail(); got != first {
		t.Fatalf("CQ tail %d, want %d", got, first)
	}
	for i := range 20 {
		w.send(uint64(i+1), here, 7, "abc")
		_, resp := w.read(3)
		w.submit(shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages})
	}
	if got := cqTail(); got >= first || got > 60 {
		t.Errorf("CQ tail %d after 60 completions from %d", got, first)
	}
	waitFor(t, func() bool { info, _ := e.Session(0); return info.PagesHeld == 0 })
	if info, _ := e.Session(0); info.SQCorrupt+info.CQCorrupt != 0 {
		t.Errorf("session %+v", info)
	}
}

// Quiet Sends and Replies get no Accepted: only their outcome, and their
// Released in every Release mode (where "flag" would have flagged the
// Accepted, a Released stands alone). Pages given back on a Send or Reply
// return to the pool as a ReturnPages would.
func TestQuiet_modesAndPagesOnSubmit(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		client string // the client's completions of its Send, after the Reply
		server string // the server's, after its Reply
	}{
		{"end", `released c2 3@0; response c2 "PONG" from 9`, `released c3 4@0`},
		{"separate", `released c2 3@0; response c2 "PONG" from 9`, `released c3 4@0`},
		{"flag", `released c2 3@0; response c2 "PONG" from 9`, `released c3 4@0`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			mode, err := ParseRelease(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			e := start(t, Config{Release: mode})
			srv, cl := attach(t, e), attach(t, e)
			srv.submit(shm.Submission{Op: shm.OpBind, Cookie: 9, Port: 9})
			if got, _ := srv.read(1); got != "accepted c9" {
				t.Fatalf("bind: %s", got)
			}
			copy(cl.a.Layout.Arena(cl.a.Region), "req")
			cl.submit(shm.Submission{Op: shm.OpSend, Flags: shm.SubFlagQuiet, Cookie: 2, PeerIP: here, PeerPort: 9, Length: 3})
			got, req := srv.read(1)
			if got != `request c0 "req" from 32770` {
				t.Fatalf("request: %s", got)
			}
			copy(srv.a.Layout.Arena(srv.a.Region), "PONG")
			srv.submit(shm.Submission{Op: shm.OpReply, Flags: shm.SubFlagQuiet, Cookie: 3, RPCID: req.RPCID,
				PeerIP: req.PeerIP, PeerPort: req.PeerPort, Length: 4, Page: req.Page, Pages: req.Pages})
			got, resp := cl.read(lines(tc.client))
			if got != tc.client {
				t.Errorf("client:\n got %s\nwant %s", got, tc.client)
			}
			if got, _ := srv.read(lines(tc.server)); got != tc.server {
				t.Errorf("server:\n got %s\nwant %s", got, tc.server)
			}
			// The response's pages ride on the next Send, to a port nobody bound.
			cl.submit(shm.Submission{Op: shm.OpSend, Flags: shm.SubFlagQuiet, Cookie: 4, PeerIP: here, PeerPort: 5,
				Length: 3, Page: resp.Page, Pages: resp.Pages})
			if got, _ := cl.read(2); got != "released c4 3@0; error c4 port unreachable" {
				t.Errorf("send to an unbound port: %s", got)
			}
			cl.idle()
			srv.idle()
			for _, w := range []int{0, 1} {
				info, _ := e.Session(w)
				if info.PagesHeld != 0 || info.Quiet == 0 || info.PagesOnSubmit != 1 {
					t.Errorf("session %d: %d pages held, %d quiet, %d page runs on submit; want 0, >0, 1",
						w, info.PagesHeld, info.Quiet, info.PagesOnSubmit)
				}
			}
		})
	}
}

// Config.HostInfo is in every worker's header, its IPv4 address the
// engine's one host: a Send to it reaches a scripted port. Start refuses
// a HostInfo whose IPv4 address is not Host.
func TestHostInfo_inHeaders(t *testing.T) {
	host := shm.HostInfo{IPv4: [4]byte{10, 0, 0, 7}, IPv6: [16]byte{0xfd, 15: 7}, LinkMbps: 100000, MTU: 9000}
	e := start(t, Config{HostInfo: host})
	e.Script(7, shm.ErrCodeNone)
	w := attach(t, e)
	if w.a.Layout.Host != host || w.a.Layout.Features&shm.FeatureHostInfo == 0 || e.Host() != host.IPv4 {
		t.Fatalf("layout %+v, engine's host %v; want %+v", w.a.Layout, e.Host(), host)
	}
	w.send(1, host.IPv4, 7, "ping")
	if got, _ := w.read(3); got != `accepted c1; released c1 4@0; response c1 "ping" from 7` {
		t.Errorf("send to the host's address: %s", got)
	}
	if w := attach(t, start(t, Config{})); w.a.Layout.Host != (shm.HostInfo{}) || w.a.Layout.Features&shm.FeatureHostInfo != 0 {
		t.Errorf("without HostInfo: layout %+v", w.a.Layout)
	}
	_, err := Start(Config{Path: t.TempDir() + "/x", Params: testParams(), Host: [4]byte{10, 0, 0, 8}, HostInfo: host})
	if err == nil || !strings.Contains(err.Error(), "is not Host") {
		t.Errorf("Start with two IPv4 addresses: %v", err)
	}
}
