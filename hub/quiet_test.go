package hub

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// With FeatureQuietAccept and FeatureReturnOnSubmit an exchange costs each
// side two entries on the rings (Send, Response; Request, Reply) plus the
// Released of each message's range: no Accepted, no ReturnPages.
func TestHub_quietExchangeWithPagesOnSubmit(t *testing.T) {
	a, b, sockA, sockB, calls := workerHostsCalls(t, Config{})
	cli, srv := attachRaw(t, sockA), attachRaw(t, sockB)
	if f := cli.At.Layout.Features; f&shm.FeatureQuietAccept == 0 || f&shm.FeatureReturnOnSubmit == 0 {
		t.Fatalf("header features %#x, want quiet accepts and pages on submit", f)
	}
	bindRaw(t, srv, 99)
	peer := [4]byte{10, 0, 0, 2}
	cliArena, srvArena := cli.At.Layout.Arena(cli.At.Region), srv.At.Layout.Arena(srv.At.Region)
	var cliEntries, srvEntries []string
	var held shm.Completion // the response's pages of the previous round, given back on the next Send
	const rounds = 20
	for i := range rounds {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
		copy(cliArena, msg)
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Flags: shm.SubFlagQuiet, Cookie: uint64(i + 1), PeerIP: peer,
			PeerPort: 99, Length: uint32(len(msg)), Page: held.Page, Pages: held.Pages})
		var req shm.Completion
		for req.Op != shm.CompRequest { // Released of earlier replies may come first
			req = srv.Next(t, 5*time.Second)
			srvEntries = append(srvEntries, req.Op.String())
		}
		if !bytes.Equal(srv.Message(req), msg) {
			t.Fatalf("round %d: request differs", i)
		}
		copy(srvArena, srv.Message(req))
		srv.Submit(t, shm.Submission{Op: shm.OpReply, Flags: shm.SubFlagQuiet, Cookie: uint64(i + 1), RPCID: req.RPCID,
			PeerIP: req.PeerIP, PeerPort: req.PeerPort, Length: req.Length, Page: req.Page, Pages: req.Pages})
		for { // the client's completions up to the response
			c := cli.Next(t, 5*time.Second)
			cliEntries = append(cliEntries, c.Op.String())
			if c.Op == shm.CompResponse {
				if c.Cookie != uint64(i+1) || c.RPCID == 0 || !bytes.Equal(cli.Message(c), msg) {
					t.Fatalf("round %d: response %+v", i, c)
				}
				held = c
				break
			}
			if c.Op != shm.CompReleased {
				t.Fatalf("round %d: client got %v: %+v", i, c.Op, c)
			}
		}
	}
	cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: held.Page, Pages: held.Pages})
	count := func(ops []string, op string) (n int) {
		for _, o := range ops {
			if o == op {
				n++
			}
		}
		return n
	}
	// The server's Released come when its replies end; collect them.
	deadline := time.Now().Add(5 * time.Second)
	for released := count(srvEntries, "released"); released < rounds && time.Now().Before(deadline); {
		var s shm.Slot
		if !srv.CQ.Pop(&s) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		c, code := shm.ParseCompletion(&s, &srv.Lim)
		if code != shm.ErrCodeNone || c.Op != shm.CompReleased {
			t.Fatalf("server got %v (%v): %+v", c.Op, code, c)
		}
		released++
		srvEntries = append(srvEntries, c.Op.String())
	}
	if n := count(cliEntries, "accepted"); n != 0 || count(cliEntries, "response") != rounds || count(cliEntries, "released") != rounds {
		t.Errorf("client completions %v: want %d responses and releases, no acceptance", cliEntries, rounds)
	}
	if count(srvEntries, "request") != rounds || count(srvEntries, "released") != rounds || len(srvEntries) != 2*rounds {
		t.Errorf("server completions %v: want %d requests and releases, nothing else", srvEntries, rounds)
	}
	var ca, cb Counters
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		calls.do(func() { ca, cb = a.hub.counts(), b.hub.counts() })
		if ca.HeldPages == 0 && cb.HeldPages == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if ca.HeldPages != 0 || cb.HeldPages != 0 {
		t.Errorf("pages held at the end: client side %d, server side %d", ca.HeldPages, cb.HeldPages)
	}
	if ca.QuietAccepts != rounds || cb.QuietAccepts != rounds || ca.PagesOnSubmit != rounds-1 || cb.PagesOnSubmit != rounds {
		t.Errorf("quiet accepts %d/%d, pages on submit %d/%d; want %d/%d, %d/%d",
			ca.QuietAccepts, cb.QuietAccepts, ca.PagesOnSubmit, cb.PagesOnSubmit, rounds, rounds, rounds-1, rounds)
	}
	if ca.Submissions != rounds+1 || cb.Submissions != rounds+1 { // the sends and one return; the bind and the replies
		t.Errorf("submissions %d/%d, want %d each", ca.Submissions, cb.Submissions, rounds+1)
	}
}

// A Send carrying pages its worker does not hold is refused as a bad entry:
// nothing of it is carried out, not even the pages' return.
func TestHub_sendWithPagesNotHeldRefused(t *testing.T) {
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{})
	cli, srv := attachRaw(t, sockA), attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	copy(cli.At.Layout.Arena(cli.At.Region), "hello")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Flags: shm.SubFlagQuiet, Cookie: 7, PeerIP: [4]byte{10, 0, 0, 2},
		PeerPort: 99, Length: 5, Page: 2, Pages: 1})
	c := cli.Expect(t, shm.CompError)
	if c.Err != shm.ErrCodeBadPage || c.Cookie != 7 || c.Flags&shm.CompFlagReleased == 0 {
		t.Fatalf("completion %+v: want BadPage for cookie 7 with the range released", c)
	}
	var ca Counters
	calls.do(func() { ca = a.hub.counts() })
	if ca.OutstandingRPCs != 0 || ca.PagesOnSubmit != 0 || ca.Refused != 1 {
		t.Errorf("counters %+v: want no RPC, no pages back, one refusal", ca)
	}
	time.Sleep(20 * time.Millisecond) // time for a request to arrive, were one sent
	var s shm.Slot
	if srv.CQ.Pop(&s) {
		t.Errorf("the server got a completion: % x", s[:8])
	}
}

// A hub made without Config.Doorbell (its loop never sleeps) offers no
// doorbell: its workers never look at their submission rings' wait flags.
func TestHub_noDoorbellUnlessTheLoopSleeps(t *testing.T) {
	a, _, sockA, _, _ := workerHostsCalls(t, Config{})
	w := attachRaw(t, sockA)
	if w.At.Layout.Features&shm.FeatureDoorbell != 0 || a.hub.DoorbellFD() != -1 {
		t.Errorf("features %#x, doorbell %d: want none", w.At.Layout.Features, a.hub.DoorbellFD())
	}
	n := newTestNet(t)
	h, err := New(n.hosts[0], Config{Path: filepath.Join(t.TempDir(), "w.sock"), MaxOutstanding: 8,
		Params: testWorkerParams, Doorbell: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	defer h.Close()
	if h.DoorbellFD() < 0 {
		t.Error("a hub made with Config.Doorbell has no doorbell")
	}
}

// A Send that names a priority (FeaturePriority, SubFlagPriority) leaves
// at that priority, and is counted; one that does not leaves at the
// level its length gives.
func TestHub_sendAtANamedPriority(t *testing.T) {
	a, _, sockA, sockB, calls := workerHostsCalls(t, Config{})
	cli, srv := attachRaw(t, sockA), attachRaw(t, sockB)
	if cli.At.Layout.Features&shm.FeaturePriority == 0 {
		t.Fatalf("header features %#x, want priority", cli.At.Layout.Features)
	}
	bindRaw(t, srv, 99)
	peer := [4]byte{10, 0, 0, 2}
	txByPrio := func() (n [8]uint64) {
		calls.do(func() {
			for q := range n {
				n[q] = a.mh.TxDone(q)
			}
		})
		return n
	}
	exchange := func(flags uint8) (sent [8]uint64) {
		before := txByPrio()
		copy(cli.At.Layout.Arena(cli.At.Region), "ping")
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Flags: flags, Cookie: 1, PeerIP: peer, PeerPort: 99, Length: 4})
		cli.ExpectPastReleased(t, shm.CompAccepted, 5*time.Second)
		req := srv.ExpectPastReleased(t, shm.CompRequest, 5*time.Second)
		copy(srv.At.Layout.Arena(srv.At.Region), "pong")
		srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 2, RPCID: req.RPCID, PeerIP: req.PeerIP,
			PeerPort: req.PeerPort, Length: 4})
		srv.ExpectPastReleased(t, shm.CompAccepted, 5*time.Second)
		resp := cli.ExpectPastReleased(t, shm.CompResponse, 5*time.Second)
		cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages})
		srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: req.Page, Pages: req.Pages})
		after := txByPrio()
		for q := range sent {
			sent[q] = after[q] - before[q]
		}
		return sent
	}
	plain := exchange(0)
	named := exchange(shm.PriorityFlags(2))
	if named[2] != 1 || plain[2] != 0 {
		t.Errorf("frames the client sent by priority: %v with priority 2 named, %v without", named, plain)
	}
	var wc Counters
	calls.do(func() { wc = a.hub.counts() })
	if wc.PrioritySends != 1 {
		t.Errorf("PrioritySends %d, want 1", wc.PrioritySends)
	}
}
