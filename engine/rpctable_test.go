package engine

import (
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
