package host

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// shardedPair is two hosts of two shards each on a ring pair whose
// ports have one RX queue: every frame arrives at shard 0, which hands
// shard 1 its own.
func shardedPair(t *testing.T) (client, server [2]*Host) {
	t.Helper()
	dpdktest.Need(t)
	ringSeq++
	name := fmt.Sprintf("shard%d", ringSeq)
	pool := dpdktest.Pool(t, name, 8192, wire.BufferRoom(1500))
	ports, rings, err := NewRingPorts(name, 16)
	t.Cleanup(func() { CloseRingPorts(ports, rings) })
	if err != nil {
		t.Fatal(err)
	}
	_, clock, _ := NewClock()
	pm, err := nicq.NewMap(8)
	if err != nil {
		t.Fatal(err)
	}
	var hosts [2][2]*Host
	macs := [2]wire.MAC{{2, 0, 10, 0, 0, 1}, {2, 0, 10, 0, 0, 2}}
	for i, p := range ports {
		st, err := SetupPort(p, PortSetup{TxQueues: 16, RxQueues: 1, Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		set := NewShardSet(2)
		for s := range 2 {
			rxq := []uint16{} // shard 1 polls no queue: shard 0 hands it its frames
			if s == 0 {
				rxq = nil
			}
			h, err := New(Config{Port: p, Pool: pool, IP: [4]byte{10, 0, 0, byte(i + 1)}, MAC: macs[i],
				PrioMap: pm, LinkBps: LinkRate(p, 10e9), Engine: engine.DefaultConfig(), Clock: clock, Burst: 32,
				Offloads: st.Offloads, ARP: ARPConfig{Timeout: 10 * time.Millisecond, Aging: time.Hour, Retries: 5},
				Shards: set, ShardIndex: s, RxQueues: rxq, TxQueueBase: uint16(8 * s)})
			if err != nil {
				t.Fatal(err)
			}
			hosts[i][s] = h
		}
	}
	t.Cleanup(func() {
		for _, hs := range hosts {
			for _, h := range hs {
				h.Drain()
			}
		}
	})
	return hosts[0], hosts[1]
}

// A port of two shards whose frames all arrive on shard 0's queue: shard
// 0 hands shard 1 the frames of its RPCs (and the acks it reads for
// them, and copies of the ARP frames, so that shard 1 resolves its peer
// too), and every RPC of both client shards completes, short and long,
// with no frame taken by a shard that does not own it.
func TestShards_handOffCompletesEveryRPC(t *testing.T) {
	client, server := shardedPair(t)
	for _, s := range server {
		p, err := s.Endpoint().Bind(99)
		if err != nil {
			t.Fatal(err)
		}
		s.setApp(func(int64) {
			for {
				m, ok := p.Receive()
				if !ok {
					return
				}
				if err := p.Reply(m, m.Data); err != nil {
					t.Error(err)
				}
			}
		})
	}
	dst := engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}
	sizes := []int{100, 3000, 200_000}
	var cls [2]*engine.Port
	for i, c := range client {
		p, err := c.Endpoint().OpenClient()
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = p
		for j := range 10 {
			msg := bytes.Repeat([]byte{byte(10*i + j)}, sizes[j%len(sizes)])
			if _, err := p.Send(dst, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := [2]int{}
	deadline := time.Now().Add(10 * time.Second)
	for (got[0] < 10 || got[1] < 10) && time.Now().Before(deadline) {
		for _, h := range []*Host{client[0], client[1], server[0], server[1]} {
			h.Pass()
		}
		for i, p := range cls {
			for {
				m, ok := p.Receive()
				if !ok {
					break
				}
				if m.Err != nil {
					t.Fatalf("client shard %d: %v", i, m.Err)
				}
				if len(m.Data) == 0 || m.Data[0] != m.Data[len(m.Data)-1] {
					t.Fatalf("client shard %d: a response of %d bytes not its request's", i, len(m.Data))
				}
				got[i]++
			}
		}
	}
	if got != [2]int{10, 10} {
		t.Fatalf("responses by client shard: %v of 10 each", got)
	}
	for _, hs := range [][2]*Host{client, server} {
		if hs[0].HandOff().Frames == 0 {
			t.Errorf("%v shard 0 handed shard 1 no frame", hs[0].Addr())
		}
		for s, h := range hs {
			m := h.Endpoint().Metrics()
			if m.Drops[engine.DropWrongShard] != 0 || h.HandOff().Dropped != 0 {
				t.Errorf("%v shard %d: %d frames at the wrong shard, %d hand-offs dropped", h.Addr(), s,
					m.Drops[engine.DropWrongShard], h.HandOff().Dropped)
			}
		}
	}
	if n := server[1].Endpoint().Metrics().PacketsRcvd[0]; n == 0 {
		t.Error("server shard 1, which polls no queue, received no DATA")
	}
}

// The rings between shards hold what one shard's loop hands the other's
// while it is busy, refuse past their room, and give back in order.
func TestHandRing_fifoAndFull(t *testing.T) {
	r := newHandRing[int](4)
	for i := range 4 {
		if !r.push(i) {
			t.Fatalf("push %d refused", i)
		}
	}
	if r.push(9) {
		t.Fatal("a full ring took a fifth")
	}
	for i := range 4 {
		if v, ok := r.pop(); !ok || v != i {
			t.Fatalf("pop %d: %d %v", i, v, ok)
		}
	}
	if _, ok := r.pop(); ok {
		t.Fatal("an empty ring gave")
	}
}

// A port unreachable for an RPC of shard 1 reaches shard 0's queue and is
// handed to shard 1, whose RPC fails at once with it, not by a timeout.
func TestShards_portUnreachableReachesItsShard(t *testing.T) {
	client, server := shardedPair(t)
	p, err := client[1].Endpoint().OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 100}, []byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, h := range []*Host{client[0], client[1], server[0], server[1]} {
			h.Pass()
		}
		if m, ok := p.Receive(); ok {
			if !errors.Is(m.Err, engine.ErrPortUnreachable) {
				t.Fatalf("the RPC ended with %v, want the port unreachable", m.Err)
			}
			if client[0].HandOff().Copies == 0 {
				t.Error("client shard 0 handed nothing over")
			}
			return
		}
	}
	t.Fatal("the RPC to an unbound port did not end within 2 s")
}

// shortUnreachable is an ICMP port unreachable from src to dst quoting
// the first 8 Homa bytes (the ports) of a packet from qsrc to qdst.
func shortUnreachable(src, dst, qsrc, qdst [4]byte, sport, dport uint16) []byte {
	quoted := make([]byte, wire.IPv4MinHeaderLen+8)
	q := wire.HomaIPv4Fields(qsrc, qdst, 6, 100)
	q.Encode(quoted)
	quoted[wire.IPv4MinHeaderLen], quoted[wire.IPv4MinHeaderLen+1] = byte(sport>>8), byte(sport)
	quoted[wire.IPv4MinHeaderLen+2], quoted[wire.IPv4MinHeaderLen+3] = byte(dport>>8), byte(dport)
	m := wire.ICMP(append(make([]byte, wire.ICMPHeaderLen), quoted...))
	m[0], m[1] = wire.ICMPDestUnreachable, wire.ICMPPortUnreachable
	m.UpdateChecksum()
	ipf := wire.HomaIPv4Fields(src, dst, 0, len(m))
	ipf.Protocol = wire.IPProtoICMP
	b := make([]byte, wire.EthernetHeaderLen+wire.IPv4MinHeaderLen+len(m))
	eth := wire.EthernetFields{Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ipf.Encode(b[wire.EthernetHeaderLen:])
	copy(b[wire.EthernetHeaderLen+wire.IPv4MinHeaderLen:], m)
	return b
}

// A port unreachable that quotes only the ports goes to every shard (each
// has its own client port of that number), but only when it passes the
// address rules that need no RPC (engine/icmp.go): one from another
// address than the one it quotes a packet to, or quoting a packet from
// another source, is taken by the shard that received it alone, which
// counts it spoofed; the others never see it.
func TestShards_spoofedShortQuoteNotCopied(t *testing.T) {
	client, _ := shardedPair(t)
	h := client[0]
	me, server, stranger := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 9}
	for _, c := range []struct {
		name   string
		frame  []byte
		copies uint64 // handed to the other shard, in all
	}{
		{"from a stranger", shortUnreachable(stranger, me, me, server, 0x8000, 99), 0},
		{"quoting another source", shortUnreachable(server, me, stranger, server, 0x8000, 99), 0},
		{"from the server, quoting us", shortUnreachable(server, me, me, server, 0x8000, 99), 1},
	} {
		var l wire.Link
		if wire.ParseLink(c.frame, &l) != wire.DropNone {
			t.Fatal("bad frame")
		}
		h.stackFrame(c.frame, &l)
		if got := h.HandOff().Copies; got != c.copies {
			t.Fatalf("%s: %d copies handed to the other shard in all, want %d", c.name, got, c.copies)
		}
	}
	if got := h.Endpoint().Metrics().Drops[engine.DropICMPSpoofed]; got != 2 {
		t.Fatalf("the shard that received them counted %d spoofed, want 2", got)
	}
}

// The shards of a port share one limiter of the port unreachables they
// send (engine.Shard.ICMP), made once.
func TestShardSet_shardsShareTheICMPLimits(t *testing.T) {
	set := NewShardSet(3)
	var h Host
	a, b := set.engineShard(0, &h, engine.ICMPRate{}), set.engineShard(2, &h, engine.ICMPRate{PerSec: 5})
	if a.ICMP == nil || a.ICMP != b.ICMP {
		t.Fatalf("shard 0's limiter %p, shard 2's %p: want one, shared", a.ICMP, b.ICMP)
	}
}
