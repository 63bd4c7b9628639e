package engine

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// A trickler: a peer that opens requests needing grants and then sends,
// every few ticks, one byte of what it was granted. Each of its requests
// is never silent (so never asked to resend, never stale) and has sent
// granted bytes (so never evicted as a claim that never sends); it kept
// its granted-but-unreceived bytes, and its place among the messages
// granted to, for as long as it liked, until they lapse (lapse.go).

// trickleHost is the server, one of its shards, or the real client.
type trickleHost struct {
	run      *trickleRun
	mh       *memnet.Host
	e        *Endpoint
	srv, cli *Port
	buf      []byte
	shards   []*trickleHost // on the host's first: its shards (itself first)
	host     *trickleHost   // the host's first shard
	turns    shardTurns
}

func (h *trickleHost) Buffer() []byte           { return h.buf }
func (h *trickleHost) Send(frame []byte, _ int) { h.mh.Send(frame) }
func (h *trickleHost) endpoint() *Endpoint      { return h.e }
func (h *trickleHost) kick()                    { kickShards(h.run.net, &h.host.turns, h.host.shards) }

// serve answers requests with one byte, takes the client's results and
// keeps its requests going.
func (h *trickleHost) serve() {
	r := h.run
	for {
		m, ok := h.srv.Receive()
		if !ok {
			break
		}
		if err := h.srv.Reply(m, m.Data[:1]); err != nil {
			r.t.Fatalf("Reply: %v", err)
		}
	}
	for {
		m, ok := h.cli.Receive()
		if !ok {
			break
		}
		delete(r.inFlight, m.ID)
		if m.Err != nil {
			r.failed++
			continue
		}
		r.done++
		if r.done == r.total {
			r.doneAt = r.net.Now()
		}
	}
	if h == r.client {
		r.issue()
	}
	h.kick()
}

// trickleReq is one of the trickler's requests: the offset of its next
// byte and the offset it was granted up to.
type trickleReq struct {
	id            uint64
	next, granted int
	started       int64 // ns
	host          int   // the trickler's host (trickleRun.hs) it is from
}

// trickleRun is a real client sending requests to a server (of
// testShards shards) while a trickler holds k requests there.
type trickleRun struct {
	t                    testing.TB
	net                  *memnet.Network
	neigh                StaticNeighbours
	server               []*trickleHost
	client               *trickleHost
	h                    *memnet.Host   // the trickler
	hs                   []*memnet.Host // its hosts: h, and any others (addTrickler)
	sizes                []int          // the client's requests
	issued, done, failed int
	total                int
	doneAt               int64
	inFlight             map[uint64]bool
	reqs                 []trickleReq
	length               int    // bytes each trickling request claims
	nextID               uint64 // the trickler's last request id
	bytesSent            int    // by the trickler, first packets included
}

const trickleInFlight = 4

func newTrickleRun(t testing.TB, total int, mod func(*Config)) *trickleRun {
	r := &trickleRun{t: t, net: memnet.New(memnet.Config{Seed: 3, LinkBps: 10e9}), total: total,
		inFlight: make(map[uint64]bool)}
	rng := rand.New(rand.NewPCG(11, 12))
	for range total {
		r.sizes = append(r.sizes, 100_000+rng.IntN(900_001))
	}
	mk := func(last byte, shards int) []*trickleHost {
		ip := [4]byte{10, 0, 9, last}
		mh := r.net.AddHost(ip)
		r.neigh.Add(netip.AddrFrom4(ip), mh.MAC())
		grants, link := sched.NewGrantShare(shards), &sched.LinkClock{}
		var group []*trickleHost
		var acks []shardAck
		for k := range shards {
			h := &trickleHost{run: r, mh: mh, buf: make([]byte, 2048)}
			cfg := DefaultConfig()
			cfg.IP, cfg.MAC, cfg.Clock, cfg.Resolve = ip, mh.MAC(), r.net.Now, r.neigh.Resolve
			cfg.IDSeed = uint64(last) << 40
			cfg.LinkBps = int64(r.net.Config().LinkBps)
			if shards > 1 {
				cfg.Shard = Shard{Index: k, Count: shards, Grants: grants, Link: link,
					ForwardAck: func(owner int, peer netip.Addr, client uint64, port uint16) {
						acks = append(acks, shardAck{owner, peer, client, port})
					}}
			}
			if mod != nil {
				mod(&cfg)
			}
			e, err := New(cfg, h)
			if err != nil {
				t.Fatal(err)
			}
			h.e = e
			h.srv, _ = e.Bind(99)
			h.cli, _ = e.OpenClient()
			group = append(group, h)
		}
		es := make([]*Endpoint, len(group))
		for k, h := range group {
			h.host, es[k] = group[0], h.e
		}
		group[0].shards = group
		mh.SetReceive(shardSteer(es, &acks, func(k int) { group[k].serve() }))
		return group
	}
	r.server = mk(2, testShards(t))
	r.client = mk(1, 1)[0]
	r.h = r.addTrickler(3)
	return r
}

// issue keeps trickleInFlight of the client's requests in flight.
func (r *trickleRun) issue() {
	for len(r.inFlight) < trickleInFlight && r.issued < len(r.sizes) {
		id, err := r.client.cli.Send(Addr{IP: netip.AddrFrom4(r.server[0].e.cfg.IP), Port: 99}, make([]byte, r.sizes[r.issued]))
		if err != nil {
			r.t.Fatal(err)
		}
		r.inFlight[id] = true
		r.issued++
	}
}

// addTrickler adds a host of the trickler's at 10.0.9.last.
func (r *trickleRun) addTrickler(last byte) *memnet.Host {
	h := r.net.AddHost([4]byte{10, 0, 9, last})
	r.neigh.Add(netip.AddrFrom4(h.IP()), h.MAC())
	h.SetReceive(r.tricklerReceive)
	r.hs = append(r.hs, h)
	return h
}

// tricklerData sends the trickler's DATA for req: n bytes at off, the
// first packet saying the sender sends one packet unscheduled.
func (r *trickleRun) tricklerData(req *trickleReq, off, n int) {
	incoming := r.server[0].e.payload
	h := make([]byte, wire.DataHeaderLen+n)
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: req.id},
		MessageLength: uint32(r.length), Incoming: uint32(max(incoming, req.granted)), CutoffVersion: 1, Offset: uint32(off)}
	f.Encode(h)
	r.tricklerSend(req, h)
}

// tricklerSend sends Homa header and payload homa of req from its host
// to the server.
func (r *trickleRun) tricklerSend(req *trickleReq, homa []byte) {
	h := r.hs[req.host]
	b := make([]byte, frameHomaOffset+len(homa))
	eth := wire.EthernetFields{Dst: r.server[0].mh.MAC(), Src: h.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(h.IP(), r.server[0].e.cfg.IP, 2, len(homa))
	ip.Encode(b[frameIPOffset:])
	copy(b[frameHomaOffset:], homa)
	h.Send(b)
	r.bytesSent += len(b)
}

// tricklerReceive takes the server's GRANTs to the trickler's requests.
func (r *trickleRun) tricklerReceive(frame []byte) {
	c := wire.Common(frame[frameHomaOffset:])
	if !c.IsValid() || c.Type() != wire.TypeGrant {
		return
	}
	id := c.SenderID() ^ 1
	for i := range r.reqs {
		if q := &r.reqs[i]; q.id == id {
			q.granted = max(q.granted, int(wire.Grant(frame[frameHomaOffset:]).Offset()))
		}
	}
}

// How the trickler spends what it is granted.
type trickleMode int

const (
	// trickleByte: one granted byte of each request every 2 ticks.
	trickleByte trickleMode = iota
	// trickleBurst: every GrantLapseTicks-1 ticks, every byte granted so
	// far, in full packets: it sends what it is granted, just late
	// (docs/security.md: still open).
	trickleBurst
	// trickleCycle: as trickleByte, and each request GrantLapseTicks-1
	// ticks after it started is ended (RPC_UNKNOWN) and a fresh one
	// started in its place.
	trickleCycle
)

// trickle starts k requests of length bytes, each sending its first
// packet now, and then spends its grants as mode says.
func (r *trickleRun) trickle(k, length int, mode trickleMode) {
	r.length = length
	pl := r.server[0].e.payload
	lapse := int64(max(r.server[0].e.cfg.GrantLapseTicks, 2)-1) * 1_000_000
	start := func(i int) {
		r.nextID += 2
		r.reqs[i] = trickleReq{id: r.nextID, next: pl, granted: pl, started: r.net.Now(), host: i % len(r.hs)}
		r.tricklerData(&r.reqs[i], 0, pl)
	}
	r.reqs = make([]trickleReq, k)
	for i := range k {
		start(i)
	}
	var tick func()
	tick = func() {
		now := r.net.Now()
		for i := range r.reqs {
			q := &r.reqs[i]
			switch {
			case mode == trickleBurst && (now-q.started)%lapse == 0:
				for q.next < q.granted && q.next < r.length {
					n := min(pl, q.granted-q.next, r.length-q.next)
					r.tricklerData(q, q.next, n)
					q.next += n
				}
			case mode == trickleCycle && now-q.started >= lapse:
				r.tricklerUnknown(q)
				start(i)
			case mode != trickleBurst && (now-q.started)%2_000_000 == 0 && q.next < q.granted && q.next < r.length-1:
				r.tricklerData(q, q.next, 1)
				q.next++
			}
		}
		r.net.After(1_000_000, tick)
	}
	r.net.After(1_000_000, tick)
}

// tricklerUnknown ends the trickler's request q at the server: the
// client has forgotten it.
func (r *trickleRun) tricklerUnknown(q *trickleReq) {
	h := make([]byte, wire.ControlHeaderLen)
	f := wire.ControlFields{Type: wire.TypeRPCUnknown, Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: q.id}}
	f.Encode(h)
	r.tricklerSend(q, h)
}

// go runs until the client's requests are all done or limit ns have
// passed, and returns how long they took (0: not done).
func (r *trickleRun) go_(limit int64) int64 {
	start := r.net.Now()
	r.client.serve()
	for _, s := range r.server {
		s.serve()
	}
	for r.done+r.failed < len(r.sizes) && r.net.Now() < start+limit {
		r.net.RunUntil(r.net.Now() + 1_000_000)
	}
	if r.done < len(r.sizes) {
		return 0
	}
	return r.doneAt - start
}

// TestTrickle_peerKeepsNoMoreThanItsShare: a real client sends 200
// requests of 100 KB to 1 MB, four at a time, to a server (of
// HOMA_TEST_SHARDS shards); alone, they take about 92 ms. A trickler
// then holds k requests of 50 KB there, each claiming one packet
// unscheduled, so that by SRPT it ranks before every request of the
// client: k = 1, Grant.MaxOvercommit, 64 and MaxServerRPCsPerPeer. Each
// sends one granted byte every 2 ticks (never silent, and it has sent
// granted bytes), or does that and ends each request (RPC_UNKNOWN) just
// before it would lapse and opens a new one. The client's requests must
// take at most 1.5 times as long as alone, the trickler's requests must
// lapse (grants_lapsed), and its peer must keep no more than one of its
// messages in the grants of each shard. Before the bound, from k = 8 the
// client's requests starved: 1 to 4 of the 200 done in 2 s.
func TestTrickle_peerKeepsNoMoreThanItsShare(t *testing.T) {
	const total = 200
	alone := newTrickleRun(t, total, nil).go_(2e9)
	if alone == 0 {
		t.Fatal("the client's requests alone did not complete")
	}
	perPeer := DefaultConfig().MaxServerRPCsPerPeer
	for _, c := range []struct {
		k    int
		mode trickleMode
	}{
		{1, trickleByte}, {DefaultConfig().Grant.MaxOvercommit, trickleByte}, {64, trickleByte}, {perPeer, trickleByte},
		{DefaultConfig().Grant.MaxOvercommit, trickleCycle}, {perPeer, trickleCycle},
	} {
		r := newTrickleRun(t, total, nil)
		r.trickle(c.k, 50_000, c.mode)
		took := r.go_(3 * alone / 2)
		var lapsed, waits uint64
		for _, s := range r.server {
			lapsed += s.e.Metrics().GrantsLapsed
			waits += s.e.Metrics().GrantTurnWaits
		}
		name := map[trickleMode]string{trickleByte: "a byte every 2 ticks", trickleCycle: "ended before they lapse"}[c.mode]
		t.Logf("%d trickling requests, %s: the client's %d requests in %.1f ms, %.2f times alone (%.1f ms); "+
			"the trickler sent %d bytes; grants_lapsed %d, grant_turn_waits %d",
			c.k, name, r.done, float64(took)/1e6, float64(took)/float64(alone), float64(alone)/1e6, r.bytesSent, lapsed, waits)
		if took == 0 {
			t.Errorf("%d trickling requests, %s: %d of the client's %d requests done after 1.5 times their time alone (%.1f ms)",
				c.k, name, r.done, total, 1.5*float64(alone)/1e6)
		}
		if c.k >= DefaultConfig().Grant.MaxOvercommit && lapsed == 0 {
			t.Errorf("%d trickling requests, %s: none lapsed", c.k, name)
		}
		for i, s := range r.server {
			if err := endpointConsistent(s.e); err != nil {
				t.Fatalf("server shard %d: %v", i, err)
			}
			if p := s.e.peerAt(netip.AddrFrom4(r.h.IP()).As16()); p != nil && c.k > 1 && p.granting > 1 {
				t.Errorf("%d trickling requests, %s: shard %d has %d of the trickler's messages in the grants, want 1 at most",
					c.k, name, i, p.granting)
			}
		}
	}
	// Still open (docs/security.md), logged and not held to the bound:
	// a peer that sends all it was granted, each time just before its
	// requests would lapse, and requests from eight addresses, eight
	// each, ended before they lapse.
	for _, c := range []struct {
		name     string
		k, addrs int
		length   int
		mode     trickleMode
	}{
		{"64 requests of 300,000 bytes, sending what they were granted late", 64, 1, 300_000, trickleBurst},
		{"8 addresses, 8 requests each, ended before they lapse", 64, 8, 50_000, trickleCycle},
	} {
		r := newTrickleRun(t, total, nil)
		for i := 1; i < c.addrs; i++ {
			r.addTrickler(byte(10 + i))
		}
		r.trickle(c.k, c.length, c.mode)
		took := r.go_(3 * alone)
		t.Logf("still open: %s: the client's %d requests in %.1f ms, %.2f times alone (0: not all done by 3 times); the trickler sent %d bytes",
			c.name, r.done, float64(took)/1e6, float64(took)/float64(alone), r.bytesSent)
	}
}

// turnsConsistent checks the incoming messages and the grants
// (lapse.go): each peer's granting counts its messages in the grants
// (added, not suspended); a lapsed or waiting message is suspended, not
// both, and a waiting one is on its own peer's turn list, once; the
// peer's turn, if any, is one of its messages in the grants.
func turnsConsistent(e *Endpoint) error {
	granting := map[*peer]int{}
	waiting := map[*peer]int{}
	for r := e.first; r != nil; r = r.next {
		in := &r.in
		g := &in.g
		out := in.lapsed || in.waitsTurn
		switch {
		case in.lapsed && in.waitsTurn:
			return fmt.Errorf("rpc %d lapsed and waiting its turn", r.id)
		case out != g.Suspended():
			return fmt.Errorf("rpc %d: lapsed %v, waits %v, suspended %v", r.id, in.lapsed, in.waitsTurn, g.Suspended())
		case g.Added() && !out:
			granting[r.peer]++
		case in.waitsTurn:
			waiting[r.peer]++
		}
	}
	for _, p := range allPeers(e) {
		if p.granting != granting[p] {
			return fmt.Errorf("peer %v: granting %d, %d of its messages in the grants", p.ip, p.granting, granting[p])
		}
		n := 0
		var prev *rpc
		for r := p.turnHead; r != nil; r = r.turnNext {
			if r.peer != p || !r.in.waitsTurn || r.turnPrev != prev || r.state == stateDead {
				return fmt.Errorf("peer %v: rpc %d on its turn list (peer %v, waits %v)", p.ip, r.id, r.peer.ip, r.in.waitsTurn)
			}
			prev = r
			n++
		}
		if p.turnTail != prev || n != waiting[p] {
			return fmt.Errorf("peer %v: %d on its turn list, %d waiting", p.ip, n, waiting[p])
		}
		if q := p.turn; q != nil && (q.peer != p || q.state == stateDead || !q.in.g.Added() || q.in.g.Suspended()) {
			return fmt.Errorf("peer %v: its turn, rpc %d, is not in the grants", p.ip, q.id)
		}
	}
	return nil
}
