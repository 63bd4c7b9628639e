package engine

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// evictStarving on a port of two shards. Three requests to server shard 0
// claim half a megabyte each, send their unscheduled bytes and then
// nothing (their granted DATA is dropped here): their grants, made while
// each was among few, hold the port's MaxIncoming, and shard 1's request,
// granted from the same room, starves. The port is starved, so shard 0
// evicts the claims once they are silent for ResendTicks, one a tick, and
// shard 1's request completes long before the claims would time out. A
// claim that sent one granted packet is a sender at work (one whose
// packets are lost answers RESENDs, and may again): it is not evicted.
func TestShards_starvedPortEvictsAClaimThatNeverSends(t *testing.T) {
	for _, sendsOne := range []bool{false, true} {
		n := &shardNet{t: t, now: 1_000_000_000, mod: func(c *Config) { c.Grant.MaxIncoming = 100_000 }}
		c, s := n.addHost(1, 2), n.addHost(2, 2)
		var srvs []*Port
		for _, e := range s.shards {
			p, err := e.Bind(99)
			if err != nil {
				t.Fatal(err)
			}
			srvs = append(srvs, p)
		}
		dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
		claims := map[uint64]int{}   // id -> its unscheduled bytes (0: not seen yet)
		granted := map[uint64]bool{} // a claim let one granted packet through
		claimer, _ := c.shards[0].OpenClient()
		n.drop = func(f []byte) bool {
			var l wire.Link
			var fr wire.Frame
			wire.ParseLink(f, &l)
			if wire.ParseHomaIP(&l, &fr, false) != wire.DropNone || fr.Type != wire.TypeData {
				return false
			}
			id := fr.Homa.SenderID()
			unsched, isClaim := claims[id]
			if !isClaim {
				return false
			}
			d := wire.Data(fr.Homa)
			if d.Offset() == 0 && unsched == 0 {
				unsched = int(d.Incoming())
				claims[id] = unsched
			}
			switch {
			case int(d.Offset()) < unsched:
				return false
			case sendsOne && !granted[id]:
				granted[id] = true
				return false
			}
			return true
		}
		for i := range 3 {
			id, err := claimer.Send(dst, msg(500_000, byte(i)))
			if err != nil {
				t.Fatal(err)
			}
			claims[id] = 0
			n.flush()
		}
		legit, _ := c.shards[1].OpenClient()
		starving, err := legit.Send(dst, msg(500_000, 9))
		if err != nil || ShardOfID(starving, 2) != 1 {
			t.Fatalf("shard 1's request, id %d: %v", starving, err)
		}
		done := -1
		for ms := 0; ms < 200; ms++ {
			n.advance(1_000_000)
			for _, p := range srvs {
				for m, ok := p.Receive(); ok; m, ok = p.Receive() {
					if m.ID == starving|1 && done < 0 {
						done = ms
					}
				}
			}
		}
		evicted := s.shards[0].Metrics().RequestsEvicted
		timeout := DefaultConfig().TimeoutTicks
		switch {
		case !sendsOne && (evicted == 0 || done < 0 || done >= timeout):
			t.Errorf("claims that never send: %d evicted, shard 1's request done after %d ms (the claims' timeout %d)", evicted, done, timeout)
		case sendsOne && evicted != 0:
			t.Errorf("claims that sent a granted packet were evicted (%d); shard 1's request done after %d ms", evicted, done)
		}
		t.Logf("claims send one granted packet %v: %d evicted, shard 1's request done after %d ms", sendsOne, evicted, done)
	}
}
