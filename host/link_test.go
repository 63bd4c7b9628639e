package host

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
)

// passFor runs both hosts' passes for d.
func passFor(a, b *Host, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		a.Pass()
		b.Pass()
	}
}

// A port whose link goes down is not polled: what waits to be sent is
// dropped and counted, nothing is received (the frames wait in the ring);
// when the link comes back, polling resumes and an RPC begun while it was
// down completes.
func TestHost_linkDownStopsPollingUntilUp(t *testing.T) {
	a, b := ringHosts(t, 2, 0)
	echoServer(t, b)
	cl, err := a.ep.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	dst := engine.Addr{IP: netip.AddrFrom4(b.me.ip), Port: 99}
	rpc := func(msg []byte) (uint64, func() bool) {
		id, err := cl.Send(dst, msg)
		if err != nil {
			t.Fatal(err)
		}
		return id, func() bool {
			m, ok := cl.Receive()
			if ok && (m.ID != id || m.Err != nil || !bytes.Equal(m.Data, msg)) {
				t.Fatalf("RPC %d: %+v", id, m)
			}
			return ok
		}
	}
	_, done := rpc(bytes.Repeat([]byte{1}, 5000))
	for end := time.Now().Add(5 * time.Second); !done(); a.Pass() {
		b.Pass()
		if time.Now().After(end) {
			t.Fatal("the first RPC did not complete")
		}
	}

	if err := a.port.SetLink(false); err != nil {
		t.Skip("the ring port cannot set its link down:", err)
	}
	passFor(a, b, 3*time.Duration(linkCheckEvery))
	if l := a.Link(); l.Up || l.Downs != 1 {
		t.Fatalf("link counters %+v after the link went down", l)
	}
	rxBefore := a.ep.Metrics().PacketsRcvd
	_, done = rpc(bytes.Repeat([]byte{2}, 50_000))
	passFor(a, b, 50*time.Millisecond)
	if done() {
		t.Fatal("an RPC completed while the link was down")
	}
	if l := a.Link(); l.TxDropped == 0 {
		t.Fatalf("nothing dropped while the link was down: %+v", l)
	}
	if got := a.ep.Metrics().PacketsRcvd; got != rxBefore {
		t.Errorf("packets received while the link was down: %v, before %v", got, rxBefore)
	}

	if err := a.port.SetLink(true); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); !done(); a.Pass() {
		b.Pass()
		if time.Now().After(end) {
			t.Fatalf("the RPC begun while the link was down did not complete once it was up: %s", a.Summary())
		}
	}
	if l := a.Link(); !l.Up || l.Downs != 1 || l.Ups != 1 || l.Redials != 0 {
		t.Errorf("link counters %+v, want up after one down and one up, no redial", l)
	}
}

// The link check is one cgo call every linkCheckEvery: a pass allocates
// nothing whether the link is up or down.
func TestHost_linkCheckAllocatesNothing(t *testing.T) {
	a, b := ringHosts(t, 1, 0)
	for _, up := range []bool{false, true} {
		if err := a.port.SetLink(up); err != nil {
			t.Skip("the ring port cannot set its link:", err)
		}
		a.portLink.nextCheck = 0
		a.Pass()
		allocs := testing.AllocsPerRun(200, func() {
			a.portLink.nextCheck = 0 // a check every pass
			a.Pass()
		})
		if allocs != 0 {
			t.Errorf("link up=%v: a pass allocates %.1f times, want 0", up, allocs)
		}
	}
	_ = b
}

// After StopSending, what waits for the TX queues is dropped and counted.
func TestHost_stopSendingDropsQueued(t *testing.T) {
	a, b := ringHosts(t, 1, 0)
	echoServer(t, b)
	cl, err := a.ep.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	a.StopSending()
	if _, err := cl.Send(engine.Addr{IP: netip.AddrFrom4(b.me.ip), Port: 99}, make([]byte, 10_000)); err != nil {
		t.Fatal(err)
	}
	passFor(a, b, 50*time.Millisecond)
	if a.stopDrops == 0 || b.Stack().ARPRequests != 0 {
		t.Fatalf("after StopSending: %d dropped, %d ARP requests reached the peer", a.stopDrops, b.Stack().ARPRequests)
	}
}
