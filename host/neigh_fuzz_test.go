package host

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// FuzzNeighbourTable runs a sequence of what the loop, the engine and
// strangers' packets do to a small table (8 entries, 16 addresses, one of
// them static) and checks after each step what the engine relies on and
// what bounds the table: an entry Resolve returned stays the table's
// entry for its address until Forget; the dynamic entries stay within the
// bound and are counted right; the unheld list holds exactly the unheld
// entries, in the order of their expiry; nothing unheld is ever asked.
// Each step is 3 bytes: operation, address, MAC or flags; time moves on
// by the third byte's value in ms at each Retries.
func FuzzNeighbourTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 2, 3, 2, 3, 0x60, 5, 200, 0})
	f.Add([]byte{1, 1, 1, 1, 2, 1, 1, 3, 1, 1, 4, 1, 1, 5, 1, 1, 6, 1, 1, 7, 1, 1, 8, 1, 1, 9, 1, 0, 10, 0, 5, 0, 255})
	f.Add([]byte{0, 4, 0, 5, 0, 255, 5, 0, 255, 3, 4, 0x20, 4, 4, 0, 1, 4, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const ms = int64(1e6)
		nt := newNeighbourTable[[4]byte](100*ms, 1000*ms, 3)
		nt.maxEntries = 8
		static := [4]byte{10, 0, 0, 15}
		nt.AddStatic(static, wire.MAC{2, 0, 0, 0, 0, 15})
		holds := map[[4]byte]*engine.Neighbour{}
		now := int64(1e9)
		for i := 0; i+2 < len(ops); i += 3 {
			ip := [4]byte{10, 0, 0, ops[i+1] & 15}
			mac := wire.MAC{2, 0, 0, 0, 1, ops[i+2]}
			switch ops[i] % 7 {
			case 0: // the engine resolves a peer
				if n, _ := nt.Resolve(ip, now); n != nil && ip != static {
					if h := holds[ip]; h != nil && h != n {
						t.Fatalf("step %d: Resolve(%v) returned a new entry while the engine held the old one", i/3, ip)
					}
					holds[ip] = n
				}
			case 1: // an ARP request or solicitation for us
				nt.Heard(ip, mac, now)
			case 2: // an ARP reply
				nt.Learn(ip, mac, now)
			case 3: // an advertisement
				nt.Advert(ip, wire.MAC{2, 0, 0, 0, 1, ops[i+2] & 3}, ops[i+2]&wire.NDPFlagSolicited != 0, ops[i+2]&wire.NDPFlagOverride != 0, now)
			case 4: // the engine drops its peer (one it may have made with no entry)
				nt.Forget(ip)
				delete(holds, ip)
			default: // the loop's pass, some time later
				now += int64(ops[i+2]) * ms
				nt.Retries(now, func(a [4]byte) {
					if e := nt.entries[a]; e == nil || !e.held {
						t.Fatalf("step %d: asked about %v, which is not held", i/3, a)
					}
				})
			}
			checkNeighbourTable(t, nt, holds, i/3)
		}
	})
}

// checkNeighbourTable checks the table's invariants after step.
func checkNeighbourTable(t *testing.T, nt *neighbourTable[[4]byte], holds map[[4]byte]*engine.Neighbour, step int) {
	t.Helper()
	for ip, n := range holds {
		if e := nt.entries[ip]; e == nil || &e.Neighbour != n || !e.held {
			t.Fatalf("step %d: the entry the engine holds for %v is not the table's (held %v)", step, ip, e != nil && e.held)
		}
	}
	dynamic, unheld := 0, 0
	for ip, e := range nt.entries {
		if e.ip != ip {
			t.Fatalf("step %d: entry at %v says %v", step, ip, e.ip)
		}
		if !e.static {
			dynamic++
			if !e.held {
				unheld++
			}
		}
	}
	if dynamic != nt.dynamic || dynamic > nt.maxEntries {
		t.Fatalf("step %d: %d dynamic entries, counted %d, bound %d", step, dynamic, nt.dynamic, nt.maxEntries)
	}
	listed := 0
	var prev *neighbour[[4]byte]
	for e := nt.unheld.first; e != nil; prev, e = e, e.next {
		if e.held || e.static || nt.entries[e.ip] != e || e.prev != prev || (prev != nil && prev.expires > e.expires) {
			t.Fatalf("step %d: unheld list broken at %v (held %v, static %v)", step, e.ip, e.held, e.static)
		}
		listed++
	}
	if listed != unheld || nt.unheld.last != prev {
		t.Fatalf("step %d: %d unheld entries listed, %d in the table", step, listed, unheld)
	}
}
