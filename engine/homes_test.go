package engine

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// A server port homed on shard 1 of 2 (a worker's, bound where its
// session lives) takes every RPC of its clients, whatever shard their ids
// name; the client's two shards know nothing of it. The acks that free
// the server RPCs, read by shard 0 on packets it owns, are handed to the
// port's home. Without the table (Shard.Homes nil) the same exchange
// loses the RPCs whose ids are shard 0's: the test shows the rule works.
func TestShards_homedPortTakesEveryRPC(t *testing.T) {
	for _, homed := range []bool{true, false} {
		n := &shardNet{t: t, now: 1_000_000_000, homes: homed}
		c, s := n.addHost(1, 2), n.addHost(2, 2)
		srv, err := s.shards[1].Bind(99)
		if err != nil {
			t.Fatal(err)
		}
		const each = 20
		var clis []*Port
		for i, e := range c.shards {
			p, err := e.OpenClient()
			if err != nil {
				t.Fatal(err)
			}
			clis = append(clis, p)
			for j := range each {
				if _, err := p.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(3000, byte(i*each+j))); err != nil {
					t.Fatal(err)
				}
			}
		}
		served := 0
		got := make([]int, len(clis))
		for range 50 {
			n.flush()
			for {
				m, ok := srv.Receive()
				if !ok {
					break
				}
				served++
				if err := srv.Reply(m, m.Data[:100]); err != nil {
					t.Fatal(err)
				}
			}
			n.flush()
			for i, p := range clis {
				for {
					m, ok := p.Receive()
					if !ok {
						break
					}
					if m.Err == nil && len(m.Data) == 100 {
						got[i]++
					}
				}
			}
			n.advance(1_000_000)
		}
		if !homed {
			if served == 2*each {
				t.Fatal("without Homes the port still served every RPC: the test shows nothing")
			}
			continue
		}
		if served != 2*each || got[0] != each || got[1] != each {
			t.Fatalf("homed port: served %d of %d, client shards got %v of %d each", served, 2*each, got, each)
		}
		n.advance(10_000_000) // NEED_ACK, ACK
		m0, m1 := s.shards[0].Metrics(), s.shards[1].Metrics()
		if s.shards[1].NumRPCs() != 0 || s.shards[0].NumRPCs() != 0 {
			t.Errorf("server shards keep %d and %d RPCs", s.shards[0].NumRPCs(), s.shards[1].NumRPCs())
		}
		if m0.Drops[DropWrongShard]+m1.Drops[DropWrongShard] != 0 {
			t.Errorf("wrong-shard drops: %d, %d", m0.Drops[DropWrongShard], m1.Drops[DropWrongShard])
		}
		if m1.AcksReceived == 0 {
			t.Error("the home received no acks")
		}
	}
}

// The home table binds a port on one shard: another shard's Bind fails
// while it holds it, and succeeds once it closed; ports above the server
// range, and unsharded endpoints, are not in the table.
func TestShards_homedPortBoundOnOneShard(t *testing.T) {
	n := &shardNet{t: t, now: 1_000_000_000, homes: true}
	s := n.addHost(2, 2)
	p, err := s.shards[1].Bind(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.shards[0].Bind(7); err != ErrPortInUse {
		t.Fatalf("shard 0 bound port 7 held by shard 1: %v", err)
	}
	if home, ok := s.homes.Of(7); !ok || home != 1 {
		t.Fatalf("Of(7) = %d, %v; want 1, true", home, ok)
	}
	p.Shut()
	p.Close()
	if _, ok := s.homes.Of(7); ok {
		t.Fatal("the port's home outlived its close")
	}
	if _, err := s.shards[0].Bind(7); err != nil {
		t.Fatalf("shard 0 after shard 1 closed the port: %v", err)
	}
	if _, ok := s.homes.Of(0x8001); ok {
		t.Fatal("a client port has a home")
	}
	var none *PortHomes
	if _, ok := none.Of(7); ok {
		t.Fatal("a nil table claims a port")
	}
}

// FrameShard with a home table: a client's packet (even sender id) to a
// homed port goes to its home, one to any other port by its id, and a
// server's packet (odd id) by its id even when its destination port is
// homed (a client port's number may equal a homed server port's).
func TestFrameShard_homedPort(t *testing.T) {
	var homes PortHomes
	if !homes.claim(99, 1) {
		t.Fatal("claim")
	}
	frame := func(sport, dport uint16, id uint64) wire.Link {
		ip := [4]byte{10, 0, 0, 2}
		h := make([]byte, wire.DataHeaderLen+1)
		f := wire.DataFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id},
			MessageLength: 1, Incoming: 1, CutoffVersion: 1}
		f.Encode(h)
		b := make([]byte, frameHomaOffset+len(h))
		eth := wire.EthernetFields{Dst: testMAC(ip), Src: testMAC([4]byte{10, 0, 0, 1}), Type: wire.EtherTypeIPv4}
		eth.Encode(b)
		ipf := wire.HomaIPv4Fields([4]byte{10, 0, 0, 1}, ip, 6, len(h))
		ipf.Encode(b[frameIPOffset:])
		copy(b[frameHomaOffset:], h)
		var l wire.Link
		if r := wire.ParseLink(b, &l); r != wire.DropNone {
			t.Fatal(r)
		}
		return l
	}
	for _, tc := range []struct {
		sport, dport uint16
		id           uint64
		want         int
	}{
		{0x8000, 99, 4, 1},     // a request to the homed port; id 4 is shard 0's
		{0x8000, 98, 4, 0},     // to a port without a home: by id
		{0x8000, 98, 2, 1},     // by id
		{99, 0x8000, 5, 0},     // a response from a server: by id
		{0x9000, 99, 5, 0},     // a server's packet to our client port 99? by id, not the home
		{0x8000, 99, 6, 1},     // id 6 is shard 1's: the home anyway
		{0x8000, 0x8123, 4, 0}, // no client port has a home
	} {
		l := frame(tc.sport, tc.dport, tc.id)
		got, all, ok := FrameShard(&l, 2, &homes)
		if !ok || all || got != tc.want {
			t.Errorf("%d->%d id %d: shard %d (all %v, ok %v), want %d", tc.sport, tc.dport, tc.id, got, all, ok, tc.want)
		}
	}
}
