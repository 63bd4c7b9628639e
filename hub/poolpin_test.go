package hub

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Finding 3 of issue 30 (hostile input, round 3): a DATA packet of a full
// payload claiming 16 times its bytes committed its message at once, and a
// worker's pool gives whole 64 KB pages: one 1,444-byte packet claiming
// 22,784 bytes took a page, and 32 such packets left 0 of 32 pages free
// until they timed out; nothing evicted them, and a real request was
// refused until its RPC failed.

// spoof sends one DATA packet of a request from src (any address: the
// frame leaves the stranger's host) to dst:port, claiming length bytes:
// payload at offset off.
func (s *stranger) spoof(src, dst [4]byte, port uint16, id uint64, length, off int, payload []byte) {
	hl := wire.EthernetHeaderLen + wire.IPv4MinHeaderLen
	b := make([]byte, hl+wire.DataHeaderLen+len(payload))
	eth := wire.EthernetFields{Dst: s.n.neigh.Resolve(netip.AddrFrom4(dst)).MAC, Src: s.mh.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 0, wire.DataHeaderLen+len(payload))
	ip.Encode(b[wire.EthernetHeaderLen:])
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: port, SenderID: id},
		MessageLength: uint32(length), Incoming: uint32(length), CutoffVersion: 1, Offset: uint32(off)}
	f.Encode(b[hl:])
	copy(b[hl+wire.DataHeaderLen:], payload)
	s.mh.Send(b)
}

// spoofed returns k addresses 10.0.1.1... whose frames come from the
// stranger, which also gets what is sent to them (and drops it).
func (s *stranger) spoofed(k int) [][4]byte {
	ips := make([][4]byte, k)
	for i := range ips {
		ips[i] = [4]byte{10, 0, 1, byte(i + 1)}
		s.n.neigh.Add(netip.AddrFrom4(ips[i]), s.mh.MAC())
	}
	return ips
}

// poolFlood is a stranger's flood of requests to a worker's port, and a
// way to wait until the worker's engine has had all of it.
type poolFlood struct {
	t     *testing.T
	st    *stranger
	b     *testHost
	calls loopCalls
	sent  uint64 // DATA packets sent
}

// requests sends, from each of srcs in turn, k requests claiming claim
// bytes of which the first pkts full packets come. Run it on the loop.
func (f *poolFlood) requests(srcs [][4]byte, k, claim, pkts int) {
	pl := wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)
	payload := make([]byte, pl)
	for i := range k {
		for p := range pkts {
			f.st.spoof(srcs[i%len(srcs)], f.b.ip, 99, f.st.next, claim, p*pl, payload)
			f.sent++
		}
		f.st.next += 2
	}
}

// settle waits until the worker's engine has received every DATA packet
// sent.
func (f *poolFlood) settle() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got uint64
		f.calls.do(func() { got = f.b.ep.Metrics().PacketsRcvd[0] })
		if got >= f.sent {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d of the flood's %d DATA packets arrived", got, f.sent)
		}
		time.Sleep(time.Millisecond)
	}
}

// poolRig is a worker on b serving port 99 (echoRaw), a raw client
// worker on a, and a stranger.
type poolRig struct {
	poolFlood
	a   *testHost
	cli *rawWorker
}

func newPoolRig(t *testing.T, mod func(*engine.Config)) *poolRig {
	n := newTestNetWith(t, mod)
	st := addStranger(n)
	a, b, sockA, sockB, calls := serveWorkers(t, n, Config{})
	srv := attachRaw(t, sockB)
	bindRaw(t, srv, 99)
	stop := make(chan struct{})
	wg := echoRaw(t, srv, stop)
	t.Cleanup(func() { close(stop); wg.Wait() })
	return &poolRig{poolFlood: poolFlood{t: t, st: st, b: b, calls: calls}, a: a, cli: attachRaw(t, sockA)}
}

// call sends a request of size bytes to the worker and waits up to
// timeout for its result: whether a response came, and after how long.
func (g *poolRig) call(size int, timeout time.Duration) (bool, time.Duration) {
	t := g.t
	t.Helper()
	start := time.Now()
	g.cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 1, PeerIP: g.b.ip, PeerPort: 99, Length: uint32(size)})
	for {
		c := g.cli.Next(t, timeout)
		switch c.Op {
		case shm.CompResponse:
			g.cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: c.Page, Pages: c.Pages})
			return true, time.Since(start)
		case shm.CompError:
			return false, time.Since(start)
		}
	}
}

// engineMetrics reads the worker's engine's counters.
func (f *poolFlood) engineMetrics() (m engine.Metrics) {
	f.calls.do(func() { m = f.b.ep.Metrics() })
	return m
}

// freePages reads the worker's free pool pages.
func (f *poolFlood) freePages() (free uint64) {
	f.calls.do(func() { free = f.b.hub.counts().FreePages })
	return free
}

// One full packet per request claiming 16 packets' bytes commits nothing
// now: the rule counts the 64 KB pages a message takes, so a request is
// committed early only once 4 KB of it (1/16 of a page) has arrived. 32
// such packets leave 32 of 32 pages free; 32 requests of 3 packets, which
// do commit, hold at most 16 times the bytes sent in pages; and a real
// request of 20,000 bytes is then served at once: the stranger holds
// more of the pool than its client, so one of its requests is evicted
// (recv_evictions_share), none stale.
func TestHub_strangerFloodPinsPagesOnlyBySixteenthOfAPage(t *testing.T) {
	// Nothing goes stale in this test: only the share rule evicts.
	g := newPoolRig(t, func(c *engine.Config) { c.ResendTicks = 50 })
	pages := testWorkerParams.PoolPages
	pl := wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)
	claim := 16 * pl // 22,784 bytes: one page

	g.calls.do(func() { g.requests([][4]byte{g.st.ip}, 32, claim, 1) })
	g.settle()
	if free := g.freePages(); free != pages {
		t.Errorf("after 32 one-packet requests claiming %d bytes: %d of %d pages free", claim, free, pages)
	}

	before := g.sent
	g.calls.do(func() { g.requests([][4]byte{g.st.ip}, 32, claim, 3) })
	g.settle()
	sentBytes := int(g.sent-before) * pl
	held := int(pages - g.freePages())
	if held*shm.PageSize > 16*sentBytes || held == 0 {
		t.Errorf("32 requests of 3 packets (%d bytes) hold %d pages (%d bytes): want 1 to 16 times the bytes sent",
			sentBytes, held, held*shm.PageSize)
	}

	time.Sleep(2 * time.Millisecond) // a tick: the stranger's requests are idle
	m0 := g.engineMetrics()
	ok, took := g.call(20_000, 2*time.Second)
	m := g.engineMetrics()
	refused := m.Drops[engine.DropNoRecvSpace] - m0.Drops[engine.DropNoRecvSpace]
	if !ok || refused != 0 || m.RecvEvictionsShare == m0.RecvEvictionsShare || m.RecvEvictionsStale != 0 {
		t.Errorf("real request with %d of %d pages held by the stranger: response %v after %v, refused %d times, %d evicted for their share, %d stale",
			held, pages, ok, took, refused, m.RecvEvictionsShare-m0.RecvEvictionsShare, m.RecvEvictionsStale)
	}
}

// 32 addresses each holding one page: none holds more than a newcomer
// would, but their requests have been silent for resend_ticks, so a
// real request evicts one (recv_evictions_stale) and is served at once.
func TestHub_staleRequestsFromManyAddressesEvicted(t *testing.T) {
	g := newPoolRig(t, nil)
	pages := testWorkerParams.PoolPages
	pl := wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)
	srcs := g.st.spoofed(32)
	g.calls.do(func() { g.requests(srcs, 32, 16*pl, 3) })
	g.settle()
	if free := g.freePages(); free != 0 {
		t.Fatalf("32 requests of 3 packets from 32 addresses leave %d of %d pages free, want 0", free, pages)
	}
	time.Sleep(time.Duration(2*engine.DefaultConfig().ResendTicks) * time.Millisecond)
	m0 := g.engineMetrics()
	ok, took := g.call(20_000, 2*time.Second)
	m := g.engineMetrics()
	refused := m.Drops[engine.DropNoRecvSpace] - m0.Drops[engine.DropNoRecvSpace]
	if !ok || refused != 0 || m.RecvEvictionsStale == m0.RecvEvictionsStale {
		t.Errorf("real request with 0 of %d pages free, all silent %d ticks: response %v after %v, refused %d times, %d stale evicted",
			pages, 2*engine.DefaultConfig().ResendTicks, ok, took, refused, m.RecvEvictionsStale-m0.RecvEvictionsStale)
	}
}

// The flood and a real client side by side: a batch of 32 requests of 3
// packets from 8 spoofed addresses every millisecond, which alone keeps
// every page of the pool taken, while a real client makes 50 calls of
// 20,000 bytes to the same worker, one after another: all 50 are
// answered.
func TestHub_realClientServedThroughPoolFlood(t *testing.T) {
	g := newPoolRig(t, nil)
	pl := wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)
	srcs := g.st.spoofed(8)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				g.calls.do(func() { g.requests(srcs, 32, 16*pl, 3) })
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for g.freePages() != 0 { // the flood alone takes every page
		if time.Now().After(deadline) {
			t.Fatalf("the flood leaves %d pages free", g.freePages())
		}
		time.Sleep(time.Millisecond)
	}
	m0 := g.engineMetrics()
	const calls = 50
	var answered int
	var slowest time.Duration
	for range calls {
		ok, took := g.call(20_000, 2*time.Second)
		if ok {
			answered++
		}
		slowest = max(slowest, took)
	}
	close(stop)
	<-done
	m := g.engineMetrics()
	evicted := m.RecvEvictionsShare + m.RecvEvictionsStale - m0.RecvEvictionsShare - m0.RecvEvictionsStale
	refused := m.Drops[engine.DropNoRecvSpace] - m0.Drops[engine.DropNoRecvSpace]
	t.Logf("flood: %d DATA packets; during the calls %d requests evicted (%d for their share), %d refused; slowest call %v",
		g.sent, evicted, m.RecvEvictionsShare-m0.RecvEvictionsShare, refused, slowest)
	if answered != calls || evicted == 0 || refused == 0 {
		t.Errorf("%d of %d real calls answered during the flood (slowest %v); %d requests evicted, %d refused: the pool was short",
			answered, calls, slowest, evicted, refused)
	}
}
