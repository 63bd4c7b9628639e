package hub

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Messages above kernel Homa's 1,000,000 bytes through the worker
// interface: regions sized for 64 MiB (arena and a pool of 1024 pages and
// more), runs of 1024 pool pages, and the kernel limit kept towards the
// peers the engine's KernelPeer names.

const mib64 = 64 << 20

// longParams are regions for 64 MiB messages: an arena of one message,
// a pool of one and a half.
var longParams = shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: mib64, PoolPages: 1536, MaxMessage: mib64}

// patterned fills b with a pattern of seed.
func patterned(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*31+i>>16) ^ seed
	}
}

// TestHub_64MiBThroughWorkers: a 64 MiB request and its 64 MiB response
// between workers on two hosts arrive byte-exact, each in a run of 1024
// pool pages; with that run still held, the next 64 MiB response finds
// no run of 1024 free pages in the 512 left and waits (counted), arriving
// once the pages are back; and then a third.
func TestHub_64MiBThroughWorkers(t *testing.T) {
	n := newTestNetWith(t, func(c *engine.Config) {
		c.MaxMessageLength = mib64
		c.MaxRecvHeapBytes = 4 * mib64
	})
	a, _, sockA, sockB, calls := serveWorkers(t, n, Config{Params: longParams})
	srv := attachRaw(t, sockB)
	cli := attachRaw(t, sockA)
	if cli.At.Layout.MaxMessage != mib64 || cli.Lim.MaxMessage != mib64 {
		t.Fatalf("region MaxMessage %d, limits %d; want 64 MiB", cli.At.Layout.MaxMessage, cli.Lim.MaxMessage)
	}
	bindRaw(t, srv, 99)
	req := cli.At.Layout.Arena(cli.At.Region)[:mib64]
	patterned(req, 1)
	resp := srv.At.Layout.Arena(srv.At.Region)[:mib64]
	patterned(resp, 2)
	// next skips Released completions.
	next := func(w *rawWorker) shm.Completion {
		t.Helper()
		for {
			c := w.Next(t, 60*time.Second)
			if c.Op != shm.CompReleased {
				return c
			}
		}
	}

	server := func(want int) shm.Completion {
		t.Helper()
		rq := next(srv)
		if rq.Op != shm.CompRequest {
			t.Fatalf("completion %+v, want request %d", rq, want)
		}
		if rq.Length != mib64 || rq.Pages != 1024 || !bytes.Equal(srv.Message(rq), req) {
			t.Fatalf("request %d: %d bytes in %d pages, equal %v", want, rq.Length, rq.Pages, bytes.Equal(srv.Message(rq), req))
		}
		srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages})
		srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: uint64(200 + want), RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: mib64})
		srv.Expect(t, shm.CompAccepted)
		return rq
	}
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: mib64})
	cli.Expect(t, shm.CompAccepted)
	server(1)
	r1 := next(cli)
	if r1.Op != shm.CompResponse || r1.Length != mib64 || r1.Pages != 1024 || !bytes.Equal(cli.Message(r1), resp) {
		t.Fatalf("response 1: %+v, equal %v", r1, r1.Op == shm.CompResponse && bytes.Equal(cli.Message(r1), resp))
	}

	// The first response's 1024 pages still held: 512 free, no run. The
	// second response waits (refused a run, its RPC asking again) until
	// they are back, then arrives whole.
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 2, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: mib64})
	cli.Expect(t, shm.CompAccepted)
	server(2)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var wc Counters
		var waiting uint64
		calls.do(func() { wc, waiting = a.hub.counts(), a.ep.Metrics().ResponsesWaitingForBuffer })
		if wc.NoRecvSpace > 0 && waiting > 0 {
			if wc.HeldPages != 1024 {
				t.Fatalf("held pages %d while response 2 waits; want 1024", wc.HeldPages)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("response 2 was not refused a run: no_recv_space %d, waiting %d", wc.NoRecvSpace, waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: r1.Page, Pages: r1.Pages})
	r2 := next(cli)
	if r2.Op != shm.CompResponse || r2.Cookie != 2 || r2.Pages != 1024 || !bytes.Equal(cli.Message(r2), resp) {
		t.Fatalf("response 2 after the pages came back: %+v", r2)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: r2.Page, Pages: r2.Pages})
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 3, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 99, Length: mib64})
	cli.Expect(t, shm.CompAccepted)
	server(3)
	if r3 := next(cli); r3.Op != shm.CompResponse || r3.Pages != 1024 || !bytes.Equal(cli.Message(r3), resp) {
		t.Fatalf("response 3: %+v", r3)
	}
}

// TestHub_longMessageToKernelPeerRefused: towards a peer the engine's
// KernelPeer names, a Send above 1,000,000 bytes is refused with
// PeerMessageLength (its range Released), 1,000,000 bytes go; a Reply
// above it is refused the same way and the request stays the worker's,
// so a shorter reply then reaches the client.
func TestHub_longMessageToKernelPeerRefused(t *testing.T) {
	n := newTestNetWith(t, func(c *engine.Config) {
		c.MaxMessageLength = 4 << 20
		c.KernelPeer = func(netip.Addr) bool { return true } // each host takes the other for kernel Homa
	})
	params := testWorkerParams
	params.ArenaSize, params.PoolPages, params.MaxMessage = 4<<20, 64, 4<<20
	_, _, sockA, sockB, _ := serveWorkers(t, n, Config{Params: params})
	srv := attachRaw(t, sockB)
	cli := attachRaw(t, sockA)
	bindRaw(t, srv, 99)
	patterned(cli.At.Layout.Arena(cli.At.Region), 3)
	peer := [4]byte{10, 0, 0, 2}

	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 5, PeerIP: peer, PeerPort: 99, Length: wire.MaxMessageLength + 1})
	if c := cli.Expect(t, shm.CompError); c.Err != shm.ErrCodePeerMessageLength || c.Cookie != 5 || c.Flags&shm.CompFlagReleased == 0 {
		t.Fatalf("send of 1,000,001 bytes to a kernel peer: %+v, want PeerMessageLength with Released", c)
	}
	if !strings.Contains(shm.ErrCodePeerMessageLength.String(), "1,000,000") {
		t.Errorf("error name %q does not say the limit", shm.ErrCodePeerMessageLength)
	}
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 6, PeerIP: peer, PeerPort: 99, Length: wire.MaxMessageLength})
	acc := cli.Expect(t, shm.CompAccepted)
	rq := srv.Expect(t, shm.CompRequest)
	if rq.Length != wire.MaxMessageLength || !bytes.Equal(srv.Message(rq), cli.At.Layout.Arena(cli.At.Region)[:wire.MaxMessageLength]) {
		t.Fatalf("1,000,000-byte request: %+v", rq)
	}
	srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: rq.Page, Pages: rq.Pages})
	srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 7, RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: 2_000_000})
	if c := srv.Expect(t, shm.CompError); c.Err != shm.ErrCodePeerMessageLength || c.Cookie != 7 || c.Flags&shm.CompFlagReleased == 0 {
		t.Fatalf("reply of 2 MB to a kernel client: %+v, want PeerMessageLength with Released", c)
	}
	srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 8, RPCID: rq.RPCID, PeerIP: rq.PeerIP, PeerPort: rq.PeerPort, Length: 1000})
	srv.Expect(t, shm.CompAccepted)
	if c := cli.ExpectPastReleased(t, shm.CompResponse, 10*time.Second); c.RPCID != acc.RPCID || c.Length != 1000 {
		t.Fatalf("response %+v", c)
	}
}

// TestNew_regionMaxMessageAboveEngineRefused: regions may not promise
// workers longer messages than the engine takes; 0 takes the engine's.
func TestNew_regionMaxMessageAboveEngineRefused(t *testing.T) {
	n := newTestNet(t)
	params := testWorkerParams
	params.MaxMessage = wire.MaxMessageLength + 1
	_, err := New(n.hosts[0], Config{Path: t.TempDir() + "/w.sock", MaxOutstanding: 1, Params: params})
	if err == nil || !strings.Contains(err.Error(), "above the engine's largest") {
		t.Fatalf("New: %v, want a refusal of MaxMessage above the engine's", err)
	}
}
