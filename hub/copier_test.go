package hub

import (
	"bytes"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// threadCopier is an engine.Copier on a goroutine of its own, as the
// host's copier thread is: it does the copies it was handed in order,
// unless held (a copier behind); refuse makes it take none (its lane
// full).
type threadCopier struct {
	mu     sync.Mutex
	jobs   [][2][]byte
	issued uint64 // the loop's
	done   atomic.Uint64
	hold   atomic.Bool
	refuse atomic.Bool
	stop   atomic.Bool
}

func newThreadCopier(t *testing.T) *threadCopier {
	c := &threadCopier{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !c.stop.Load() {
			if c.hold.Load() || !c.runOne() {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}()
	t.Cleanup(func() { c.hold.Store(false); c.stop.Store(true); wg.Wait() })
	return c
}

func (c *threadCopier) runOne() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.jobs) == 0 {
		return false
	}
	copy(c.jobs[0][0], c.jobs[0][1])
	c.jobs = c.jobs[1:]
	c.done.Add(1)
	return true
}

func (c *threadCopier) Copy(dst, src []byte) uint64 {
	if c.refuse.Load() {
		return 0
	}
	// The frame src is in is memnet's, reused once delivered: keep it, as
	// the host keeps a copy's mbuf until the copier is past it.
	kept := append([]byte(nil), src...)
	c.mu.Lock()
	c.jobs = append(c.jobs, [2][]byte{dst, kept})
	c.mu.Unlock()
	c.issued++
	return c.issued
}

func (c *threadCopier) Done() uint64 { return c.done.Load() }

// newCopierNet is newTestNet with a threadCopier on each host.
func newCopierNet(t *testing.T) *testNet {
	var copiers []*threadCopier
	n := newTestNetWith(t, func(ec *engine.Config) {
		c := newThreadCopier(t)
		copiers = append(copiers, c)
		ec.Copier = c
	})
	for i, h := range n.hosts {
		h.copier = copiers[i]
	}
	return n
}

// unknown sends an RPC_UNKNOWN for the stranger's request id to dst:port,
// which ends the server RPC the stranger's DATA made.
func (s *stranger) unknown(dst [4]byte, port uint16, id uint64) {
	hl := wire.EthernetHeaderLen + wire.IPv4MinHeaderLen
	b := make([]byte, hl+wire.ControlHeaderLen)
	eth := wire.EthernetFields{Dst: s.n.neigh.Resolve(netip.AddrFrom4(dst)).MAC, Src: s.mh.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(s.ip, dst, 0, wire.ControlHeaderLen)
	ip.Encode(b[wire.EthernetHeaderLen:])
	f := wire.ControlFields{Type: wire.TypeRPCUnknown, Common: wire.CommonFields{SrcPort: 0x8000, DstPort: port, SenderID: id}}
	f.Encode(b[hl:])
	s.mh.Send(b)
}

// onePage are regions whose receive pool is one page: every message to
// the worker gets the same page.
var onePage = shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 1, MaxMessage: shm.PageSize}

// A stranger's request takes the server worker's only pool page, hands
// copies of its bytes to a copier that is behind, and ends at once by an
// RPC_UNKNOWN. A real client's request, which the loop copies itself (the
// copier's lane full), does not get the page until the copier is past
// the stranger's copies: the worker reads its own bytes, not the
// stranger's.
func TestHub_copierStaleCopiesNeverReachAnotherMessage(t *testing.T) {
	n := newCopierNet(t)
	st := addStranger(n)
	_, b, sockA, sockB, calls := serveWorkers(t, n, Config{Params: onePage})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	cli := attachRaw(t, sockA)

	b.copier.hold.Store(true)
	junk := bytes.Repeat([]byte{0xEE}, 1400)
	calls.do(func() {
		for _, p := range []int{3, 4, 0, 1} { // the third commits the page: its bytes and the next go to the copier
			st.data(b.ip, 99, 0x7000, 10*1400, p*1400, junk)
		}
	})
	waitLoop(t, calls, "the stranger's request holds the page with copies pending", func() bool {
		return b.hub.counts().FreePages == 0 && b.copier.issued > 0
	})
	calls.do(func() { st.unknown(b.ip, 99, 0x7000) })
	waitLoop(t, calls, "the stranger's RPC_UNKNOWN ends its request", func() bool {
		return b.ep.Metrics().ServerRPCDiscards == 1
	})

	b.copier.refuse.Store(true)
	req := make([]byte, 2000)
	for i := range req {
		req[i] = byte(i*7 + 1)
	}
	copy(cli.At.Layout.Arena(cli.At.Region), req)
	cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: b.ip, PeerPort: 99, Length: uint32(len(req))})
	cli.Expect(t, shm.CompAccepted)
	waitLoop(t, calls, "the real request reaches the server", func() bool {
		return b.ep.Metrics().PacketsRcvd[0] >= 5
	})
	b.copier.hold.Store(false)
	waitLoop(t, calls, "the copier is done", func() bool { return b.copier.Done() == b.copier.issued })

	got := srv.Expect(t, shm.CompRequest)
	if diff := bytesDiffer(srv.Message(got), req); diff != 0 {
		t.Fatalf("the worker's %d-byte request: %d bytes are not its own", len(req), diff)
	}
	var held uint64
	calls.do(func() { held = b.ep.Metrics().RecvBufsHeldForCopier })
	if held != 1 {
		t.Fatalf("recv_bufs_held_for_copier %d, want 1", held)
	}
}

// bytesDiffer counts the bytes in which a and b differ, and the bytes of
// the longer past the shorter.
func bytesDiffer(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// A worker that detaches while the copier is behind on copies into its
// pool: the loop goes on serving (it does not wait for the copier), and
// the worker's region is held until the copier is past those copies, then
// let go. Attaching and detaching in a loop cannot make the polling loop
// wait out the copier's backlog.
func TestHub_detachWithCopiesPendingDoesNotStallTheLoop(t *testing.T) {
	n := newCopierNet(t)
	st := addStranger(n)
	_, b, _, sockB, calls := serveWorkers(t, n, Config{})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	b.copier.hold.Store(true)
	junk := bytes.Repeat([]byte{0xEE}, 1400)
	calls.do(func() {
		for p := range 4 {
			st.data(b.ip, 99, 0x7000, 10*1400, p*1400, junk)
		}
	})
	waitLoop(t, calls, "copies into the worker's pool pending", func() bool {
		return b.copier.issued > b.copier.Done()
	})

	srv.At.Close()
	passes := make(chan struct{})
	go func() {
		defer close(passes)
		for range 200 {
			calls.do(func() {})
		}
	}()
	select {
	case <-passes:
	case <-time.After(10 * time.Second):
		b.copier.hold.Store(false) // lets the test end
		t.Fatal("the polling loop stopped while the copier was behind on a detached worker's copies")
	}
	waitLoop(t, calls, "the worker's session let go by the loop", func() bool {
		return len(b.hub.sessions) == 0 && len(b.hub.draining) == 1
	})
	if held := b.hub.srv.Sessions(); held != 1 {
		t.Fatalf("with copies into it pending the server holds %d regions, want 1", held)
	}
	b.copier.hold.Store(false)
	waitHeld(t, b.hub, 0)
}
