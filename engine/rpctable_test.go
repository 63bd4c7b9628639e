package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Server RPCs of two clients that chose the same id are two RPCs; a client
// RPC is found by its id alone; each deletion removes only its own.
func TestRPCTable_keysApart(t *testing.T) {
	tb := newRPCTable()
	a, b, c := &rpc{}, &rpc{}, &rpc{}
	ka := rpcKey{ip: wire.MapIPv4([4]byte{10, 0, 0, 1}), id: 7}
	kb := rpcKey{ip: wire.MapIPv4([4]byte{10, 0, 0, 2}), id: 7}
	kc := rpcKey{id: 8}
	tb.put(ka, a)
	tb.put(kb, b)
	tb.put(kc, c)
	if tb.get(ka) != a || tb.get(kb) != b || tb.get(kc) != c || tb.len() != 3 {
		t.Fatalf("get: %p %p %p len %d, want %p %p %p 3", tb.get(ka), tb.get(kb), tb.get(kc), tb.len(), a, b, c)
	}
	if tb.get(rpcKey{ip: wire.MapIPv4([4]byte{10, 0, 0, 3}), id: 7}) != nil || tb.get(rpcKey{id: 6}) != nil {
		t.Fatal("found an RPC never put")
	}
	tb.del(ka)
	if tb.get(ka) != nil || tb.get(kb) != b || tb.len() != 2 {
		t.Fatal("deleting one server RPC removed the other")
	}
	tb.del(kc)
	if tb.get(kc) != nil || tb.len() != 1 {
		t.Fatal("client RPC not deleted")
	}
}

// The table agrees with a map through many puts and deletions that make
// it grow and shift runs of slots back, for every kind of key.
func TestRPCTable_agreesWithAMap(t *testing.T) {
	tb := newRPCTable()
	want := map[rpcKey]*rpc{}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() rpcKey {
		id := uint64(rng.IntN(300))
		switch rng.IntN(3) {
		case 0:
			return rpcKey{id: id &^ 1}
		case 1:
			return rpcKey{ip: wire.MapIPv4([4]byte{10, 0, 0, byte(rng.IntN(4))}), id: id | 1}
		}
		return rpcKey{ip: [16]byte{0: 0xfd, 15: byte(rng.IntN(4))}, id: id | 1}
	}
	for i := 0; i < 200_000; i++ {
		k := key()
		switch rng.IntN(3) {
		case 0:
			r := &rpc{}
			tb.put(k, r)
			want[k] = r
		case 1:
			tb.del(k)
			delete(want, k)
		}
		if got := tb.get(k); got != want[k] {
			t.Fatalf("step %d: get(%v) = %p, want %p", i, k, got, want[k])
		}
		if [12]byte(k.ip[:12]) == [12]byte{10: 0xff, 11: 0xff} && !wire.IsClientID(k.id) {
			if got := tb.getServer4(k.id, [4]byte(k.ip[12:])); got != want[k] {
				t.Fatalf("step %d: getServer4(%v) = %p, want %p", i, k, got, want[k])
			}
		}
		if tb.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", i, tb.len(), len(want))
		}
	}
	for k, r := range want {
		if tb.get(k) != r {
			t.Fatalf("get(%v) = %p, want %p", k, tb.get(k), r)
		}
	}
}
