package hub

import (
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// The hub's tests run the real engine on the in-memory network (memnet):
// two hosts, 10.0.0.1 and 10.0.0.2, each with a hub and a control socket,
// polled by one goroutine that advances the network's clock with the
// wall clock, as a polling loop would. Workers attach over real sockets
// and shared memory.

// testWorkerParams are small regions: 1 MB arena, 32 pool pages.
var testWorkerParams = shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 32}

// testNet is the network and its two hosts.
type testNet struct {
	net   *memnet.Network
	neigh engine.StaticNeighbours // every host's MAC
	hosts [2]*testHost
	start time.Time
}

// testHost is one engine on memnet, and the Host its hub sees. With
// zeroCopy it lends payload references as a DPDK host does; their
// packets count as sent when the test says so (or at once, with
// autoSend).
type testHost struct {
	n   *testNet
	mh  *memnet.Host
	ep  *engine.Endpoint
	hub *Hub
	ip  [4]byte
	buf []byte

	zeroCopy bool
	autoSend bool
	copier   *threadCopier // the engine's receive copies, when set (copier_test.go)
	refs     map[engine.PayloadRef]*fakePayload
	nextRef  engine.PayloadRef
}

type fakePayload struct{ lettingGo, sent bool }

func (h *testHost) Buffer() []byte           { return h.buf }
func (h *testHost) Send(frame []byte, _ int) { h.mh.Send(frame) }

func (h *testHost) Endpoint() *engine.Endpoint { return h.ep }

func (h *testHost) CopyMark() uint64 {
	if h.copier == nil {
		return 0
	}
	return h.copier.issued
}

func (h *testHost) CopiesPast(mark uint64) bool {
	if h.copier == nil {
		return true
	}
	if h.copier.Done() < mark {
		return false
	}
	h.ep.PollCopies()
	return true
}

func (h *testHost) HoldPayload() (engine.PayloadRef, bool) {
	if !h.zeroCopy {
		return 0, false
	}
	h.nextRef++
	h.refs[h.nextRef] = &fakePayload{}
	return h.nextRef, true
}

func (h *testHost) LetGoPayload(r engine.PayloadRef) {
	if p := h.refs[r]; p != nil {
		p.lettingGo = true
		p.sent = p.sent || h.autoSend
	}
}

func (h *testHost) PayloadSent(r engine.PayloadRef) bool {
	p := h.refs[r]
	if p == nil {
		return true
	}
	if p.lettingGo && p.sent {
		delete(h.refs, r)
		return true
	}
	return false
}

// sendPayloads marks every payload's packets as sent.
func (h *testHost) sendPayloads() {
	for _, p := range h.refs {
		p.sent = true
	}
}

// newTestNet makes the two hosts, without hubs.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	return newTestNetWith(t, nil)
}

// newTestNetWith is newTestNet with mod applied to each engine's Config.
func newTestNetWith(t *testing.T, mod func(*engine.Config)) *testNet {
	t.Helper()
	n := &testNet{net: memnet.New(memnet.Config{}), start: time.Now()}
	n.net.RunUntil(int64(time.Second)) // the engine treats time 0 as "never"
	for i := range n.hosts {
		ip := [4]byte{10, 0, 0, byte(i + 1)}
		h := &testHost{n: n, mh: n.net.AddHost(ip), ip: ip, buf: make([]byte, 2048), autoSend: true,
			refs: map[engine.PayloadRef]*fakePayload{}}
		n.neigh.Add(netip.AddrFrom4(ip), h.mh.MAC())
		ec := engine.DefaultConfig()
		ec.IP, ec.MAC = ip, h.mh.MAC()
		ec.Clock = n.net.Now
		ec.Resolve = n.neigh.Resolve
		ec.IDSeed = uint64(i+1) << 40
		if mod != nil {
			mod(&ec)
		}
		ep, err := engine.New(ec, h)
		if err != nil {
			t.Fatal(err)
		}
		h.ep = ep
		h.mh.SetReceive(func(f []byte) { ep.Receive(f) })
		n.hosts[i] = h
	}
	return n
}

// now is the wall clock since the start, as network time.
func (n *testNet) now() int64 { return int64(time.Second) + int64(time.Since(n.start)) }

// pass is one loop pass of both hosts: the network up to now, then each
// host's hub and timers.
func (n *testNet) pass() {
	n.net.RunUntil(n.now())
	for _, h := range n.hosts {
		h.pass()
	}
}

// pass is the host's part of a pass.
func (h *testHost) pass() {
	now := h.n.net.Now()
	if h.hub != nil {
		h.hub.Poll(now)
	}
	if now >= h.ep.NextDeadline() {
		h.ep.Run()
	}
	h.ep.PollCopies()
	if h.hub != nil {
		h.hub.Flush()
	}
}

// openHub gives h a hub on a socket in dir.
func (h *testHost) openHub(t *testing.T, dir string, lim Config) string {
	t.Helper()
	lim.Path = filepath.Join(dir, netip.AddrFrom4(h.ip).String()+".sock")
	if lim.Params.SQEntries == 0 {
		lim.Params = testWorkerParams
	}
	if lim.MaxOutstanding == 0 {
		lim.MaxOutstanding = 1024
	}
	hub, err := New(h, lim)
	if err != nil {
		t.Fatal(err)
	}
	h.hub = hub
	return lim.Path
}

// loopCalls runs functions on the test's polling goroutine, between
// passes, so that tests can read loop-owned state without a race.
type loopCalls chan func()

// do runs fn between two passes and waits for it.
func (lc loopCalls) do(fn func()) {
	done := make(chan struct{})
	lc <- func() { fn(); close(done) }
	<-done
}

// workerHosts makes the two hosts with a worker socket each, and polls
// them on a goroutine until the test ends.
func workerHosts(t *testing.T, lim Config) (a, b *testHost, sockA, sockB string) {
	a, b, sockA, sockB, _ = workerHostsCalls(t, lim)
	return a, b, sockA, sockB
}

func workerHostsCalls(t *testing.T, lim Config) (a, b *testHost, sockA, sockB string, calls loopCalls) {
	t.Helper()
	return serveWorkers(t, newTestNet(t), lim)
}

// workerHostsCallsZeroCopy is workerHostsCalls on hosts that lend payload
// references.
func workerHostsCallsZeroCopy(t *testing.T, lim Config) (a, b *testHost, sockA, sockB string, calls loopCalls) {
	t.Helper()
	n := newTestNet(t)
	n.hosts[0].zeroCopy, n.hosts[1].zeroCopy = true, true
	return serveWorkers(t, n, lim)
}

// serveWorkers opens both hosts' hubs and polls them on a goroutine until
// the test ends.
func serveWorkers(t *testing.T, n *testNet, lim Config) (a, b *testHost, sockA, sockB string, calls loopCalls) {
	a, b = n.hosts[0], n.hosts[1]
	dir := t.TempDir()
	sockA, sockB = a.openHub(t, dir, lim), b.openHub(t, dir, lim)
	var stop atomic.Bool
	var wg sync.WaitGroup
	calls = make(loopCalls)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			n.pass()
			select {
			case fn := <-calls:
				fn()
			default:
			}
		}
		a.hub.Stop()
		b.hub.Stop()
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	t.Cleanup(func() { // first: workers detach while the loop runs
		a.hub.Close()
		b.hub.Close()
	})
	return a, b, sockA, sockB, calls
}

func TestMain(m *testing.M) {
	if sock := os.Getenv(workerChildEnv); sock != "" {
		os.Exit(workerChild(sock))
	}
	os.Exit(m.Run())
}
