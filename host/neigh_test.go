package host

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// tableLog records what a table announced, as "ready IP" and "failed IP".
type tableLog []string

func (l *tableLog) attach(nt *neighbourTable[[4]byte]) {
	nt.onReady = func(ip [4]byte) { *l = append(*l, "ready "+netip.AddrFrom4(ip).String()) }
	nt.onFailed = func(ip [4]byte) { *l = append(*l, "failed "+netip.AddrFrom4(ip).String()) }
}

func TestNeighbourTable_resolveRetryFailAndRetryLater(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 10_000, 3)
	var log tableLog
	log.attach(nt)
	var asked []int64
	n, req := nt.Resolve(peer.ip, 0)
	if n.State != engine.LinkResolving || !req {
		t.Fatalf("first resolve: %v request %v", n.State, req)
	}
	if again, req := nt.Resolve(peer.ip, 50); again != n || req {
		t.Fatalf("resolve while pending: same entry %v, request %v (a second request before the timeout)", again == n, req)
	}
	for now := int64(0); now <= 400; now += 10 {
		nt.Retries(now, func(ip [4]byte) { asked = append(asked, now) })
	}
	if len(asked) != 2 || asked[0] != 100 || asked[1] != 200 {
		t.Errorf("retries at %v, want [100 200] (3 tries in all)", asked)
	}
	if n.State != engine.LinkUnreachable || nt.Failures != 1 || nt.Requests != 3 {
		t.Errorf("state %v failures %d requests %d", n.State, nt.Failures, nt.Requests)
	}
	if _, req := nt.Resolve(peer.ip, 350); req {
		t.Error("a failed address was asked again before its hold-down")
	}
	if again, req := nt.Resolve(peer.ip, 400); again != n || !req || n.State != engine.LinkResolving {
		t.Error("a failed address was not asked again after its hold-down, in the same entry")
	}
	nt.Learn(peer.ip, peer.mac, 410)
	if n.State != engine.LinkReachable || n.MAC != peer.mac {
		t.Errorf("after learning: %+v", *n)
	}
	want := tableLog{"failed 10.0.0.2", "ready 10.0.0.2"}
	if len(log) != len(want) || log[0] != want[0] || log[1] != want[1] {
		t.Errorf("announced %v, want %v", log, want)
	}
}

// A held learned entry that ages is probed while it stays reachable (frames
// keep going to its MAC); unanswered, it fails; answered, it stays.
func TestNeighbourTable_agingProbesThenFails(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 2)
	var log tableLog
	log.attach(nt)
	nt.Heard(peer.ip, peer.mac, 0) // its ARP request for us
	n, _ := nt.Resolve(peer.ip, 0)
	var asked []int64
	for now := int64(0); now <= 1500; now += 10 {
		nt.Retries(now, func([4]byte) { asked = append(asked, now) })
		if now == 1000 && n.State != engine.LinkReachable {
			t.Fatalf("an aged entry left reachable while probed: %v", n.State)
		}
	}
	if len(asked) != 2 || asked[0] != 1000 || asked[1] != 1100 || nt.Expired != 1 {
		t.Errorf("probes at %v (expired %d), want [1000 1100]", asked, nt.Expired)
	}
	if n.State != engine.LinkUnreachable || len(log) != 1 || log[0] != "failed 10.0.0.2" { // heard: nobody waited, nothing announced
		t.Errorf("unanswered probes: %v, announced %v", n.State, log)
	}
	// A peer whose MAC changed answers the next resolution: the same
	// entry holds the new MAC.
	moved := wire.MAC{2, 0, 0, 0, 0, 0x42}
	nt.Resolve(peer.ip, 1700)
	nt.Learn(peer.ip, moved, 1710)
	if n.State != engine.LinkReachable || n.MAC != moved {
		t.Errorf("after the answer: %+v", *n)
	}
}

func TestNeighbourTable_staticEntriesStay(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 3)
	mac := wire.MAC{2, 9, 9, 9, 9, 9}
	nt.AddStatic(other, mac)
	nt.Learn(other, wire.MAC{1}, 0) // does not replace a static entry
	asked := 0
	nt.Retries(1e12, func([4]byte) { asked++ })
	if n, req := nt.Resolve(other, 1e12); n.MAC != mac || n.State != engine.LinkReachable || req || asked != 0 {
		t.Errorf("static entry %+v request %v asked %d", *n, req, asked)
	}
}

// The table is bounded: past maxEntries a new address gets no entry
// (counted), and an entry the engine let go of (Forget) makes room.
func TestNeighbourTable_boundedAndForget(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 3)
	nt.maxEntries = 100
	nt.AddStatic(other, wire.MAC{2, 9, 9, 9, 9, 9}) // static entries do not count
	for i := range 10_000 {
		nt.Resolve([4]byte{10, 1, byte(i >> 8), byte(i)}, 0)
	}
	if len(nt.entries) != 101 || nt.Full != 9_900 {
		t.Fatalf("%d entries, %d refused; want 100 + the static one, 9,900", len(nt.entries), nt.Full)
	}
	nt.Forget([4]byte{10, 1, 0, 0})
	nt.Forget(other) // static: kept
	if n, _ := nt.Resolve([4]byte{10, 2, 0, 0}, 0); n == nil || len(nt.entries) != 101 || nt.Forgotten != 1 {
		t.Errorf("after a Forget: entry %v, %d entries, %d forgotten", n, len(nt.entries), nt.Forgotten)
	}
}
