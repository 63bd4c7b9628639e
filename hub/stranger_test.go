package hub

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// stranger is a host on the test network that speaks raw Homa: it sends
// DATA for requests it makes up and ignores whatever comes back.
type stranger struct {
	n    *testNet
	mh   *memnet.Host
	ip   [4]byte
	next uint64 // next client RPC id
}

func addStranger(n *testNet) *stranger {
	ip := [4]byte{10, 0, 0, 66}
	mh := n.net.AddHost(ip)
	mh.SetReceive(func([]byte) {})
	n.neigh.Add(netip.AddrFrom4(ip), mh.MAC())
	return &stranger{n: n, mh: mh, ip: ip, next: 0x5000}
}

// data sends one DATA packet of a request to dst:port claiming length
// bytes: payload at offset off.
func (s *stranger) data(dst [4]byte, port uint16, id uint64, length, off int, payload []byte) {
	hl := wire.EthernetHeaderLen + wire.IPv4MinHeaderLen
	b := make([]byte, hl+wire.DataHeaderLen+len(payload))
	eth := wire.EthernetFields{Dst: s.n.neigh.Resolve(netip.AddrFrom4(dst)).MAC, Src: s.mh.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(s.ip, dst, 0, wire.DataHeaderLen+len(payload))
	ip.Encode(b[wire.EthernetHeaderLen:])
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: port, SenderID: id},
		MessageLength: uint32(length), Incoming: uint32(length), CutoffVersion: 1, Offset: uint32(off)}
	f.Encode(b[hl:])
	copy(b[hl+wire.DataHeaderLen:], payload)
	s.mh.Send(b)
}

// Finding 3 of the hostile-input review: a stranger's packets claiming
// long requests reserved a worker's receive pages for the whole claimed
// length on their first byte, and requests still filling did not count
// toward MaxOutstanding: two 1-byte packets claiming 1 MB each took all
// 32 pages, and real requests were dropped.
//
// Now a packet reserves nothing until its request is committed (its
// unscheduled bytes have arrived), and a committed request counts toward
// MaxOutstanding from then: 200 one-byte packets with fresh ids leave
// all 32 pages free and a real request completes; 8 requests whose
// unscheduled bytes all arrive, with MaxOutstanding 4, commit 4 and are
// refused 4 (limit_refusals), holding at most 4 × 2 pages.
func TestHub_strangersPacketsReserveNoPoolPages(t *testing.T) {
	n := newTestNet(t)
	st := addStranger(n)
	_, b, sockA, sockB, calls := serveWorkers(t, n, Config{MaxOutstanding: 4})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	cli := attachRaw(t, sockA)
	dst := b.ip

	counts := func() (c Counters) {
		calls.do(func() { c = b.hub.counts() })
		return c
	}
	var sent uint64    // DATA packets the stranger sent
	settle := func() { // until b's engine has had them all
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got uint64
			calls.do(func() { got = b.ep.Metrics().PacketsRcvd[0] })
			if got >= sent {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of the stranger's %d DATA packets arrived", got, sent)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// 200 fresh ids, one byte each, claiming 1 MB (16 pages) apiece: the
	// engine keeps each (a server RPC, its byte staged).
	calls.do(func() {
		for range 200 {
			st.data(dst, 99, st.next, 1_000_000, 0, []byte{0xa5})
			sent++
			st.next += 2
		}
	})
	settle()
	var rpcs int
	calls.do(func() { rpcs = b.ep.NumRPCs() })
	if rpcs != 200 {
		t.Fatalf("%d server RPCs from the stranger's 200 requests", rpcs)
	}
	if c := counts(); c.FreePages != uint64(testWorkerParams.PoolPages) || c.OutstandingRPCs != 0 {
		t.Fatalf("after 200 one-byte claims: %d of %d pages free, %d requests outstanding",
			c.FreePages, testWorkerParams.PoolPages, c.OutstandingRPCs)
	}

	// A real request still gets its page and is answered.
	arena := cli.At.Layout.Arena(cli.At.Region)
	copy(arena, "real request")
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: dst, PeerPort: 99, Length: 12})
	cli.Expect(t, shm.CompAccepted)
	req := srv.Expect(t, shm.CompRequest)
	if got := string(srv.Message(req)); got != "real request" {
		t.Fatalf("request %q", got)
	}
	reply := srv.At.Layout.Arena(srv.At.Region)
	copy(reply, "answer")
	srv.Submit(t, shm.Submission{Op: shm.OpReply, Cookie: 2, PeerIP: req.PeerIP, PeerPort: req.PeerPort, RPCID: req.RPCID, Length: 6})
	srv.Expect(t, shm.CompAccepted)
	srv.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: req.Page, Pages: req.Pages})
	for c := cli.Next(t, 5*time.Second); c.Op != shm.CompResponse; c = cli.Next(t, 5*time.Second) {
	}

	// Eight requests of 100 KB (2 pages) whose bytes all arrive up to
	// 44 KB (past the 40,000 unscheduled): each is committed unless the
	// worker is at MaxOutstanding (4).
	before := counts()
	payload := make([]byte, 1400)
	calls.do(func() {
		for range 8 {
			for off := 0; off < 44_000; off += len(payload) {
				st.data(dst, 99, st.next, 100_000, off, payload)
				sent++
			}
			st.next += 2
		}
	})
	settle()
	c := counts()
	held := uint64(testWorkerParams.PoolPages) - c.FreePages
	if c.OutstandingRPCs != 4 || held != 4*2 || c.LimitRefusals-before.LimitRefusals < 4 {
		t.Fatalf("8 committed requests at max_outstanding 4: %d outstanding, %d pages held, %d refused",
			c.OutstandingRPCs, held, c.LimitRefusals-before.LimitRefusals)
	}
}
