package engine

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// shardNet joins sharded test hosts: each shard sends through its own
// transmitter; a host receives every frame on one queue and steers it
// (FrameShard) to its owner, as a host on a virtual device without flow
// rules must, or, when misroute says so, to another shard first.
type shardNet struct {
	t            *testing.T
	now          int64
	hosts        []*shardHost
	misroute     func(frame []byte) bool
	noGrantShare bool // the shards of a host grant alone
	homes        bool // hosts added home their server ports (Shard.Homes)
	// mod, if set, changes each endpoint's Config (after the net's own);
	// drop, if set, discards the frames it returns true for.
	mod  func(*Config)
	drop func(frame []byte) bool
}

type shardHost struct {
	n      *shardNet
	ip     [4]byte
	shards []*Endpoint
	homes  *PortHomes
	tx     []*shardTx
	acks   []shardAck // handed over between shards, applied by flush
}

type shardAck struct {
	owner  int
	peer   netip.Addr
	client uint64
	port   uint16
}

type shardTx struct {
	buf []byte
	out [][]byte
}

func (t *shardTx) Buffer() []byte              { return t.buf }
func (t *shardTx) Send(frame []byte, prio int) { t.out = append(t.out, slices.Clone(frame)) }

func (n *shardNet) addHost(last byte, count int) *shardHost {
	h := &shardHost{n: n, ip: [4]byte{10, 0, 0, last}}
	grants, link := sched.NewGrantShare(count), &sched.LinkClock{}
	if n.noGrantShare {
		grants = nil
	}
	if n.homes {
		h.homes = new(PortHomes)
	}
	for i := range max(count, 1) {
		cfg := DefaultConfig()
		cfg.IP, cfg.MAC = h.ip, testMAC(h.ip)
		cfg.Clock = func() int64 { return n.now }
		cfg.Resolve = allReachable()
		cfg.IDSeed = 100
		if n.mod != nil {
			n.mod(&cfg)
		}
		if count > 1 {
			cfg.Shard = Shard{Index: i, Count: count, ForwardAck: func(owner int, peer netip.Addr, client uint64, port uint16) {
				h.acks = append(h.acks, shardAck{owner, peer, client, port})
			}, Grants: grants, Link: link, Homes: h.homes}
		}
		tx := &shardTx{buf: make([]byte, 2048)}
		e, err := New(cfg, tx)
		if err != nil {
			n.t.Fatal(err)
		}
		h.shards, h.tx = append(h.shards, e), append(h.tx, tx)
	}
	n.hosts = append(n.hosts, h)
	return h
}

// receive is the host's receive side: steer frame to its owner.
func (h *shardHost) receive(frame []byte) {
	var l wire.Link
	wire.ParseLink(frame, &l)
	owner, all, ok := FrameShard(&l, len(h.shards), h.homes)
	switch {
	case !ok:
		h.shards[0].Receive(frame)
	case all:
		for _, e := range h.shards {
			e.Receive(frame)
		}
	default:
		if h.n.misroute != nil && len(h.shards) > 1 && h.n.misroute(frame) {
			h.shards[(owner+1)%len(h.shards)].Receive(frame) // dropped there: wrong_shard
		}
		h.shards[owner].Receive(frame)
	}
}

// flush delivers frames and hands over acks until none are left.
func (n *shardNet) flush() {
	for progress := true; progress; {
		progress = false
		for _, h := range n.hosts {
			for _, tx := range h.tx {
				out := tx.out
				tx.out = nil
				for _, f := range out {
					progress = true
					if n.drop != nil && n.drop(f) {
						continue
					}
					dst := wire.IPv4(f[wire.EthernetHeaderLen:]).Dst()
					for _, o := range n.hosts {
						if o.ip == dst {
							o.receive(f)
						}
					}
				}
			}
			acks := h.acks
			h.acks = nil
			for _, a := range acks {
				progress = true
				h.shards[a.owner].ReceiveAck(a.peer, a.client, a.port)
			}
		}
	}
}

func (n *shardNet) advance(ns int64) {
	for end := n.now + ns; n.now < end; {
		n.now = min(n.now+1_000_000, end)
		for _, h := range n.hosts {
			for _, e := range h.shards {
				e.Run()
			}
		}
		n.flush()
	}
}

// rpcsAndServe sends count RPCs from every client shard to the server's
// port 99, answers every request on every server shard, and returns
// the responses each client shard received, by shard.
func rpcsAndServe(t *testing.T, n *shardNet, c, s *shardHost, count int) [][]uint64 {
	var srvs []*Port
	for _, e := range s.shards {
		p, err := e.Bind(99)
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, p)
	}
	var clis []*Port
	for i, e := range c.shards {
		p, err := e.OpenClient()
		if err != nil {
			t.Fatal(err)
		}
		clis = append(clis, p)
		for j := range count {
			id, err := p.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(3000, byte(i*count+j)))
			if err != nil {
				t.Fatal(err)
			}
			if got := ShardOfID(id, len(c.shards)); got != i {
				t.Fatalf("client shard %d of %d allocated id %d, shard %d's", i, len(c.shards), id, got)
			}
		}
	}
	got := make([][]uint64, len(clis))
	for range 50 {
		n.flush()
		for i, p := range srvs {
			for {
				m, ok := p.Receive()
				if !ok {
					break
				}
				if owner := ShardOfID(m.ID, len(s.shards)); owner != i {
					t.Fatalf("server shard %d got RPC %d, shard %d's", i, m.ID, owner)
				}
				if err := p.Reply(m, m.Data[:100]); err != nil {
					t.Fatal(err)
				}
			}
		}
		n.flush()
		for i, p := range clis {
			for {
				m, ok := p.Receive()
				if !ok {
					break
				}
				if m.Err != nil || len(m.Data) != 100 {
					t.Fatalf("client shard %d: response %+v", i, m)
				}
				got[i] = append(got[i], m.ID)
			}
		}
		n.advance(1_000_000)
	}
	return got
}

// Both hosts sharded alike: each client shard's RPCs are served by the
// server shard of the same index, every one completes, and the acks that
// free the server RPCs never leave their shard.
func TestShards_alikeHostsShareNothing(t *testing.T) {
	n := &shardNet{t: t, now: 1_000_000_000}
	c, s := n.addHost(1, 2), n.addHost(2, 2)
	got := rpcsAndServe(t, n, c, s, 20)
	for i := range got {
		if len(got[i]) != 20 {
			t.Errorf("client shard %d: %d of 20 responses", i, len(got[i]))
		}
	}
	n.advance(10_000_000) // NEED_ACK, ACK
	for i, e := range s.shards {
		m := e.Metrics()
		if e.NumRPCs() != 0 || m.AcksForwarded != 0 || m.Drops[DropWrongShard] != 0 || m.AcksReceived == 0 {
			t.Errorf("server shard %d: %d RPCs left, %d acks forwarded, %d received, %d wrong-shard drops",
				i, e.NumRPCs(), m.AcksForwarded, m.AcksReceived, m.Drops[DropWrongShard])
		}
	}
}

// An unsharded client's acks ride on packets of RPCs that other server
// shards own: the shard that reads one hands it to the owner, which
// frees its RPC.
func TestShards_acksForAnotherShardAreHandedOver(t *testing.T) {
	n := &shardNet{t: t, now: 1_000_000_000}
	c, s := n.addHost(1, 1), n.addHost(2, 2)
	got := rpcsAndServe(t, n, c, s, 30)
	if len(got[0]) != 30 {
		t.Fatalf("%d of 30 responses", len(got[0]))
	}
	n.advance(10_000_000)
	var forwarded, needAcks uint64
	for i, e := range s.shards {
		m := e.Metrics()
		forwarded += m.AcksForwarded
		needAcks += m.PacketsSent[wire.TypeNeedAck-wire.TypeData]
		if e.NumRPCs() != 0 {
			t.Errorf("server shard %d keeps %d RPCs", i, e.NumRPCs())
		}
	}
	if forwarded == 0 {
		t.Error("no ack was handed over: the test shows nothing")
	}
	// An ack lost between shards leaves its RPC to NEED_ACK's round trip
	// (3 here, when ForwardAck drops them); handed over, none is needed.
	if needAcks != 0 {
		t.Errorf("the server shards sent %d NEED_ACKs for 30 RPCs: acks were lost between shards", needAcks)
	}
}

// Frames steered to the wrong shard first (a NIC's hash on the wrong
// fields, a bug) start nothing there and are counted; the owner, which
// gets them too, completes every RPC.
func TestShards_wrongShardStartsNothingAndRPCsComplete(t *testing.T) {
	n := &shardNet{t: t, now: 1_000_000_000}
	n.misroute = func([]byte) bool { return true }
	c, s := n.addHost(1, 2), n.addHost(2, 2)
	got := rpcsAndServe(t, n, c, s, 10)
	for i := range got {
		if len(got[i]) != 10 {
			t.Errorf("client shard %d: %d of 10 responses", i, len(got[i]))
		}
	}
	var wrong uint64
	for _, h := range []*shardHost{c, s} {
		for _, e := range h.shards {
			wrong += e.Metrics().Drops[DropWrongShard]
		}
	}
	if wrong == 0 {
		t.Error("no frame was counted as another shard's")
	}
	n.advance(10_000_000)
	for i, e := range s.shards {
		if e.NumRPCs() != 0 || e.NumServerRPCs() != 0 {
			t.Errorf("server shard %d: %d RPCs left", i, e.NumRPCs())
		}
	}
}

// The ids a shard allocates are its own from the first and stay so past
// the wrap of the id space; 0 is never one.
func TestShards_idsOwnAcrossTheWrap(t *testing.T) {
	for _, count := range []int{2, 3, 4} {
		for idx := range count {
			s := Shard{Index: idx, Count: count}
			e := &Endpoint{cfg: Config{Shard: s}, idStep: 2 * uint64(count)}
			e.nextID = firstShardID(^uint64(0)-uint64(4*count), s)
			for range 8 {
				if e.nextID == 0 || ShardOfID(e.nextID, count) != idx || e.nextID&1 != 0 {
					t.Fatalf("shard %d of %d: id %d", idx, count, e.nextID)
				}
				e.nextID += e.idStep
				if e.nextID < e.idStep {
					e.nextID = firstShardID(e.idStep, s)
				}
			}
		}
	}
	if ShardOfID(7, 1) != 0 || ShardOfID(7, 0) != 0 {
		t.Error("an unsharded endpoint owns every id")
	}
}

// peakIncoming sends 6 long requests from c's shards to s's and returns
// the most bytes s's shards had granted and not received at once,
// delivering a frame at a time.
func peakIncoming(t *testing.T, n *shardNet, c, s *shardHost) int {
	var srvs []*Port
	for _, e := range s.shards {
		p, _ := e.Bind(99)
		srvs = append(srvs, p)
	}
	for i := range 6 {
		e := c.shards[i%len(c.shards)]
		p, err := e.OpenClient()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(900_000, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	peak, got := 0, 0
	for step := 0; got < 6 && step < 200_000; step++ {
		moved := false
		for _, h := range n.hosts {
			for _, tx := range h.tx {
				if len(tx.out) > 0 {
					f := tx.out[0]
					tx.out = tx.out[1:]
					dst := wire.IPv4(f[wire.EthernetHeaderLen:]).Dst()
					for _, o := range n.hosts {
						if o.ip == dst {
							o.receive(f)
						}
					}
					moved = true
				}
			}
		}
		out := 0
		for _, e := range s.shards {
			out += e.grants.Outstanding()
		}
		peak = max(peak, out)
		for _, p := range srvs {
			for {
				m, ok := p.Receive()
				if !ok {
					break
				}
				got++
				p.Reply(m, m.Data[:10])
			}
		}
		if !moved {
			n.advance(1_000_000)
		}
	}
	if got != 6 {
		t.Fatalf("%d of 6 requests arrived", got)
	}
	return peak
}

// Long messages to two server shards: their grants keep the port's
// MaxIncoming as one unsharded server's do, and every message completes;
// without the shared view each shard would grant its own MaxIncoming.
func TestShards_maxIncomingOverThePort(t *testing.T) {
	run := func(shards int, share bool) int { // the same client, of two shards, each time
		n := &shardNet{t: t, now: 1_000_000_000, noGrantShare: !share}
		c, s := n.addHost(1, 2), n.addHost(2, shards)
		return peakIncoming(t, n, c, s)
	}
	one, shared, alone := run(1, true), run(2, true), run(2, false)
	// A shard's view of the other is one Schedule old: allow a grant's
	// worth past the unsharded peak, not a second MaxIncoming.
	if slack := 20_000; shared > one+slack {
		t.Errorf("two shards sharing a grant view had %d bytes granted and not received at once; one unsharded server %d", shared, one)
	}
	if alone <= one+20_000 {
		t.Errorf("two shards without the view peaked at %d, one server at %d: the test shows nothing", alone, one)
	}
	t.Logf("peak granted, unreceived bytes: one server %d, two shards sharing %d, two alone %d", one, shared, alone)
}

// An ICMP error's quote names its RPC's shard by the sender id; a quote
// of the ports alone is every shard's.
func TestICMPShard(t *testing.T) {
	h := make([]byte, wire.CommonHeaderLen)
	wire.Common(h).SetSenderID(2 * 5) // (id>>1) % 2 == 1
	if s, all := ICMPShard(h, 2); s != 1 || all {
		t.Errorf("full quote: shard %d, all %v", s, all)
	}
	if _, all := ICMPShard(h[:8], 2); !all {
		t.Error("a quote of the ports alone went to one shard")
	}
	if s, all := ICMPShard(h[:8], 1); s != 0 || all {
		t.Error("unsharded")
	}
}

// FrameShard's direct read of an IPv4 Homa header gives the owner the
// whole parse gives, CUTOFFS every shard, and a frame too short nothing.
func TestFrameShard_directReadAgrees(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	if _, err := s.e.Bind(99); err != nil {
		t.Fatal(err)
	}
	cli, _ := c.e.OpenClient()
	for range 5 {
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(3000, 1))
	}
	checked := 0
	n.inspect = func(frame []byte, _ string) {
		var l wire.Link
		wire.ParseLink(frame, &l)
		var f wire.Frame
		if wire.ParseHomaIP(&l, &f, false) != wire.DropNone {
			return
		}
		want, wantAll := ShardOfID(f.Homa.SenderID(), 3), f.Type == wire.TypeCutoffs
		got, all, ok := FrameShard(&l, 3, nil)
		if !ok || all != wantAll || !all && got != want {
			t.Errorf("FrameShard %d %v %v, the whole parse %d %v", got, all, ok, want, wantAll)
		}
		checked++
		short := l
		short.Payload = l.Payload[:wire.IPv4MinHeaderLen+4]
		if _, _, ok := FrameShard(&short, 3, nil); ok {
			t.Error("a frame cut inside its Homa header was steered")
		}
	}
	n.flush()
	if checked == 0 {
		t.Fatal("no frame checked")
	}
}

// shardSteer is the receive side of a host whose endpoints es are its
// shards: each frame to its owner (FrameShard; CUTOFFS to every shard,
// what is not Homa to the first), then the acks the shards handed each
// other meanwhile (acks, filled by their ForwardAck). after, if not nil,
// runs for each shard that took a frame or an ack.
func shardSteer(es []*Endpoint, acks *[]shardAck, after func(k int)) func([]byte) {
	took := func(k int) {
		if after != nil {
			after(k)
		}
	}
	return func(f []byte) {
		var l wire.Link
		wire.ParseLink(f, &l)
		owner, all, ok := FrameShard(&l, len(es), nil)
		for k, e := range es {
			if !ok && k == 0 || ok && (all || k == owner) {
				e.Receive(f)
				took(k)
			}
		}
		for len(*acks) > 0 {
			a := (*acks)[0]
			*acks = (*acks)[1:]
			es[a.owner].ReceiveAck(a.peer, a.client, a.port)
			took(a.owner)
		}
	}
}
