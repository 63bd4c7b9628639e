package host

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

func TestNeighbourTable_resolveRetryFailAndRetryLater(t *testing.T) {
	nt := newNeighbourTable(100, 10_000, 3)
	var asked []int64
	if _, ok, req := nt.Resolve(peer.ip, 0); ok || !req {
		t.Fatalf("first resolve: ok %v request %v", ok, req)
	}
	if _, ok, req := nt.Resolve(peer.ip, 50); ok || req {
		t.Fatalf("resolve while pending: ok %v request %v (a second request before the timeout)", ok, req)
	}
	for now := int64(0); now <= 400; now += 10 {
		nt.Retries(now, func(ip [4]byte) { asked = append(asked, now) })
	}
	if len(asked) != 2 || asked[0] != 100 || asked[1] != 200 {
		t.Errorf("retries at %v, want [100 200] (3 tries in all)", asked)
	}
	if !nt.Failed(peer.ip) || nt.Failures != 1 || nt.Requests != 3 {
		t.Errorf("failed %v failures %d requests %d", nt.Failed(peer.ip), nt.Failures, nt.Requests)
	}
	if _, ok, req := nt.Resolve(peer.ip, 350); ok || req {
		t.Error("a failed address was asked again before its hold-down")
	}
	if _, ok, req := nt.Resolve(peer.ip, 400); ok || !req {
		t.Error("a failed address was not asked again after its hold-down")
	}
	nt.Learn(peer.ip, peer.mac, 410)
	if mac, ok, _ := nt.Resolve(peer.ip, 420); !ok || mac != peer.mac || nt.Failed(peer.ip) {
		t.Errorf("after learning: %v %v", mac, ok)
	}
}

func TestNeighbourTable_agingAndStatic(t *testing.T) {
	nt := newNeighbourTable(100, 1000, 3)
	nt.AddStatic(other, wire.MAC{2, 9, 9, 9, 9, 9})
	nt.Learn(peer.ip, peer.mac, 0)
	nt.Learn(other, wire.MAC{1}, 0) // does not replace a static entry
	if _, ok, _ := nt.Resolve(peer.ip, 999); !ok {
		t.Error("learned entry gone before it aged")
	}
	if _, ok, req := nt.Resolve(peer.ip, 1000); ok || !req || nt.Expired != 1 {
		t.Errorf("aged entry: ok %v request %v expired %d", ok, req, nt.Expired)
	}
	if mac, ok, _ := nt.Resolve(other, 1e12); !ok || mac != (wire.MAC{2, 9, 9, 9, 9, 9}) {
		t.Errorf("static entry %v %v", mac, ok)
	}
}
