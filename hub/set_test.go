package hub

import (
	"bytes"
	"math"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// shardHost is one shard of a sharded memnet host, as the hub sees it.
type shardHost struct {
	ep  *engine.Endpoint
	h   *testHost // the memnet host all shards send on
	buf []byte
}

func (s *shardHost) Buffer() []byte                         { return s.buf }
func (s *shardHost) Send(frame []byte, _ int)               { s.h.mh.Send(frame) }
func (s *shardHost) Endpoint() *engine.Endpoint             { return s.ep }
func (s *shardHost) HoldPayload() (engine.PayloadRef, bool) { return 0, false }
func (s *shardHost) LetGoPayload(engine.PayloadRef)         {}
func (s *shardHost) PayloadSent(engine.PayloadRef) bool     { return true }
func (s *shardHost) CopyMark() uint64                       { return 0 }
func (s *shardHost) CopiesPast(uint64) bool                 { return true }

type forwardedAck struct {
	owner  int
	peer   netip.Addr
	client uint64
	port   uint16
}

// shardHostB makes n's second host a port of two shards with homed
// server ports, each shard with its endpoint: frames are steered to their
// owner (engine.FrameShard), acks handed over after each frame.
func shardHostB(t *testing.T, n *testNet) ([]*shardHost, *engine.PortHomes, *[]forwardedAck) {
	b := n.hosts[1]
	homes := new(engine.PortHomes)
	grants, link := sched.NewGrantShare(2), &sched.LinkClock{}
	acks := new([]forwardedAck)
	var shards []*shardHost
	for i := range 2 {
		s := &shardHost{h: b, buf: make([]byte, 2048)}
		ec := engine.DefaultConfig()
		ec.IP, ec.MAC = b.ip, b.mh.MAC()
		ec.Clock = n.net.Now
		ec.Resolve = n.neigh.Resolve
		ec.IDSeed = 2 << 40
		ec.Shard = engine.Shard{Index: i, Count: 2, Grants: grants, Link: link, Homes: homes,
			ForwardAck: func(owner int, peer netip.Addr, client uint64, port uint16) {
				*acks = append(*acks, forwardedAck{owner, peer, client, port})
			}}
		ep, err := engine.New(ec, s)
		if err != nil {
			t.Fatal(err)
		}
		s.ep = ep
		shards = append(shards, s)
	}
	b.mh.SetReceive(func(f []byte) {
		var l wire.Link
		wire.ParseLink(f, &l)
		owner, all, ok := engine.FrameShard(&l, 2, homes)
		for k, s := range shards {
			if !ok && k == 0 || ok && (all || k == owner) {
				s.ep.Receive(f)
			}
		}
		for len(*acks) > 0 {
			a := (*acks)[0]
			*acks = (*acks)[1:]
			shards[a.owner].ep.ReceiveAck(a.peer, a.client, a.port)
		}
	})
	return shards, homes, acks
}

// Workers on a port of two shards: each attaches to the one socket and
// lives on a shard of its own (the least loaded), whose loop serves its
// rings, whose endpoint starts its RPCs (ids of that shard) and on which
// its server port is bound alone; requests from a client whose ids name
// either shard all reach it; each session is given its own hub's
// doorbell.
func TestSet_workersOnTwoShards(t *testing.T) {
	n := newTestNet(t)
	a := n.hosts[0]
	shards, homes, _ := shardHostB(t, n)
	dir := t.TempDir()
	sockA := a.openHub(t, dir, Config{})
	sockB := filepath.Join(dir, "sharded.sock")
	set, err := NewSet([]Host{shards[0], shards[1]}, Config{Path: sockB, Params: testWorkerParams, MaxOutstanding: 1024, Doorbell: true})
	if err != nil {
		t.Fatal(err)
	}
	hubs := set.Hubs()
	var stop atomic.Bool
	var wg sync.WaitGroup
	calls := make(loopCalls)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			n.net.RunUntil(n.now())
			a.pass()
			now := n.net.Now()
			for k, s := range shards {
				hubs[k].Poll(now)
				if now >= s.ep.NextDeadline() {
					s.ep.Run()
				}
				hubs[k].Flush()
			}
			select {
			case fn := <-calls:
				fn()
			default:
			}
		}
		a.hub.Stop()
		for _, hb := range hubs {
			hb.Stop()
		}
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	t.Cleanup(func() { a.hub.Close(); set.Close() })

	w0, w1 := attachRaw(t, sockB), attachRaw(t, sockB)
	bindRaw(t, w0, 101)
	bindRaw(t, w1, 102)
	h101, ok101 := homes.Of(101)
	h102, ok102 := homes.Of(102)
	if !ok101 || !ok102 || h101 == h102 {
		t.Fatalf("ports' homes %d (%v) and %d (%v): want one on each shard", h101, ok101, h102, ok102)
	}
	// The doorbell a worker rings wakes its own hub's loop alone (the
	// attaches rang both: drain them first, on the loop's goroutine).
	for w, home := range map[*rawWorker]int{w0: h101, w1: h102} {
		if err := w.At.AskDoorbell(); err != nil {
			t.Fatal(err)
		}
		calls.do(func() {
			for _, hb := range hubs {
				loopWakes(hb)
			}
			shm.RingFD(w.At.Doorbell)
			for k, hb := range hubs {
				if rang := loopWakes(hb); rang != (k == home) {
					t.Errorf("worker of shard %d rang shard %d's doorbell: %v", home, k, rang)
				}
			}
		})
	}
	stopEcho := make(chan struct{})
	var echoes []*sync.WaitGroup
	defer func() {
		close(stopEcho)
		for _, e := range echoes {
			e.Wait()
		}
	}()
	echoes = append(echoes, echoRaw(t, w0, stopEcho), echoRaw(t, w1, stopEcho))

	// A client on the unsharded host: its ids alternate between the
	// shards' by id; every request reaches the port's home.
	cli := attachRaw(t, sockA)
	arena := cli.At.Layout.Arena(cli.At.Region)
	const each = 20
	for i := range 2 * each {
		msg := bytes.Repeat([]byte{byte(i)}, 3000)
		copy(arena, msg)
		cli.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: uint64(i), PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: uint16(101 + i%2), Length: uint32(len(msg))})
		cli.Expect(t, shm.CompAccepted)
		cli.Expect(t, shm.CompReleased)
		resp := cli.Expect(t, shm.CompResponse)
		if resp.Cookie != uint64(i) || !bytes.Equal(cli.Message(resp), msg) {
			t.Fatalf("RPC %d to port %d: response %+v", i, 101+i%2, resp)
		}
		cli.Submit(t, shm.Submission{Op: shm.OpReturnPages, Page: resp.Page, Pages: resp.Pages})
	}

	// A worker of the sharded host as a client: its RPCs are its shard's.
	srvA := attachRaw(t, sockA)
	bindRaw(t, srvA, 7)
	echoes = append(echoes, echoRaw(t, srvA, stopEcho))
	c1 := attachRaw(t, sockB) // the third session: either shard, both hold one
	copy(c1.At.Layout.Arena(c1.At.Region), "from the sharded host")
	c1.Submit(t, shm.Submission{Op: shm.OpSend, Cookie: 9, PeerIP: [4]byte{10, 0, 0, 1}, PeerPort: 7, Length: 21})
	acc := c1.Expect(t, shm.CompAccepted)
	c1.Expect(t, shm.CompReleased)
	if resp := c1.Expect(t, shm.CompResponse); string(c1.Message(resp)) != "from the sharded host" {
		t.Fatalf("the sharded host's client: %q", c1.Message(resp))
	}
	var home2 = -1
	time.Sleep(10 * time.Millisecond)
	calls.do(func() {
		for k, hb := range hubs {
			if len(hb.sessions) == 2 {
				home2 = k
			}
		}
	})
	if home2 < 0 || engine.ShardOfID(acc.RPCID, 2) != home2 {
		t.Errorf("the third session's RPC %d is shard %d's; its hub is shard %d's", acc.RPCID, engine.ShardOfID(acc.RPCID, 2), home2)
	}

	calls.do(func() {
		for k, s := range shards {
			if d := s.ep.Metrics().Drops[engine.DropWrongShard]; d != 0 {
				t.Errorf("shard %d: %d wrong-shard drops", k, d)
			}
		}
	})
	time.Sleep(150 * time.Millisecond) // a publish period
	if c := set.Snapshot(); c.Attached != 3 {
		t.Errorf("the set's counters: %d attached, want 3", c.Attached)
	}
}

// Counters.add relies on every field being a uint64.
func TestCounters_allFieldsCount(t *testing.T) {
	var c Counters
	c.add(Counters{Attached: 2, FreePages: 3})
	c.add(Counters{Attached: 1})
	if c.Attached != 3 || c.FreePages != 3 {
		t.Fatalf("%+v", c)
	}
}

// Config.Host is in the header of every region the hub's socket makes
// (FeatureHostInfo); without it the header says nothing.
func TestConfig_hostInHeaders(t *testing.T) {
	host := HostInfoOf(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1"), 25e9, 9000)
	for _, want := range []shm.HostInfo{host, {}} {
		_, _, sock, _ := workerHosts(t, Config{Host: want})
		a, err := shm.Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		if said := a.Layout.Features&shm.FeatureHostInfo != 0; a.Layout.Host != want || said != (want != shm.HostInfo{}) {
			t.Errorf("Config.Host %+v: the worker's header says %+v (FeatureHostInfo %v)", want, a.Layout.Host, said)
		}
		a.Close()
	}
}

// HostInfoOf: an address of each family in its own field (an IPv4-mapped
// IPv6 address is not an IPv6 one), the speed in Mbit/s, rounded, 0 for
// unknown.
func TestHostInfoOf(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("2001:db8::2")
	for _, tc := range []struct {
		v4, v6 netip.Addr
		bps    float64
		mtu    int
		want   shm.HostInfo
	}{
		{v4, v6, 100e9, 1500, shm.HostInfo{IPv4: v4.As4(), IPv6: v6.As16(), LinkMbps: 100000, MTU: 1500}},
		{v4, netip.Addr{}, 0, 0, shm.HostInfo{IPv4: v4.As4()}},
		{netip.Addr{}, v6, 99.6e6, 9000, shm.HostInfo{IPv6: v6.As16(), LinkMbps: 100, MTU: 9000}},
		{v6, netip.MustParseAddr("::ffff:10.0.0.2"), 1e22, -1, shm.HostInfo{LinkMbps: math.MaxUint32}},
	} {
		if got := HostInfoOf(tc.v4, tc.v6, tc.bps, tc.mtu); got != tc.want {
			t.Errorf("HostInfoOf(%v, %v, %g, %d) = %+v, want %+v", tc.v4, tc.v6, tc.bps, tc.mtu, got, tc.want)
		}
	}
}
