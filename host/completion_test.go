package host

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// resendFrom sends, from b's port straight onto the link (not through
// b's loop, which is not polled), b's RESEND for bytes [0, n) of a's
// client RPC id to a's client port cport.
func resendFrom(t *testing.T, b, a *Host, id uint64, cport uint16, n int) {
	t.Helper()
	homa := make([]byte, wire.ResendHeaderLen)
	r := wire.ResendFields{Common: wire.CommonFields{SrcPort: 99, DstPort: cport, SenderID: id | 1}, Offset: 0, Length: uint32(n), Priority: 7}
	r.Encode(homa)
	m := b.tx.pool.Alloc()
	if m == nil {
		t.Fatal("no mbuf")
	}
	eth := wire.EthernetFields{Dst: a.me.mac, Src: b.me.mac, Type: wire.EtherTypeIPv4}
	f := m.Append(eth.Len() + wire.IPv4MinHeaderLen + len(homa))
	o := eth.Encode(f)
	ip := wire.HomaIPv4Fields(b.me.ip, a.me.ip, 7, len(homa))
	o += ip.Encode(f[o:])
	copy(f[o:], homa)
	if b.port.TxBurst(0, []*dpdk.Mbuf{m}) != 1 {
		m.Free()
		t.Fatal("the RESEND was not sent")
	}
}

// A RESEND for DATA that the device still holds (here: in the ring to a
// peer that has not polled it yet) is answered BUSY, not with a copy
// that would only queue behind it; once the peer has taken and freed the
// frames, the host's TX completion lets the next RESEND retransmit.
// Before TX completions, a frame counted as gone once its NIC queue took
// it, and the first RESEND was retransmitted too.
func TestHost_resendForDataTheDeviceHoldsIsBusy(t *testing.T) {
	a, b := ringHosts(t, 8, 0)
	srv, err := b.ep.Bind(99) // takes requests, never answers
	if err != nil {
		t.Fatal(err)
	}
	cl, err := a.ep.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	dst := engine.Addr{IP: netip.AddrFrom4(b.me.ip), Port: 99}
	received := func() bool {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			a.Pass()
			b.Pass()
			if _, ok := srv.Receive(); ok {
				return true
			}
		}
		return false
	}
	if _, err := cl.Send(dst, make([]byte, 100)); err != nil { // resolves the addresses first
		t.Fatal(err)
	}
	if !received() {
		t.Fatal("the first request did not arrive")
	}
	for range 3 {
		a.Pass()
		b.Pass()
	}
	id, err := cl.Send(dst, make([]byte, 5000))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a.Pass() // the request's DATA go into the ring; b does not poll
	}
	if a.sched.InDevice() == 0 {
		t.Fatal("no frame held by the device after the send")
	}
	// Held past txCleanupAfter, the frames make the host ask the driver
	// to free what it sent: net_ring cannot, and is not asked again.
	time.Sleep(time.Duration(2 * txCleanupAfter))
	a.Pass()
	if a.txCleanups != 1 || !a.txCleanupOff {
		t.Fatalf("after the frames waited in the ring: %d cleanups asked, off %v; want 1, true (net_ring has none)", a.txCleanups, a.txCleanupOff)
	}
	resendFrom(t, b, a, id, cl.Num(), 1000)
	a.Pass()
	m := a.ep.Metrics()
	if m.ResendsQueued != 1 || m.ResentPackets != 0 {
		t.Fatalf("RESEND while the ring holds the DATA: %d answered BUSY as queued, %d packets resent; want 1, 0", m.ResendsQueued, m.ResentPackets)
	}
	if !received() {
		t.Fatal("the request did not arrive")
	}
	for range 100 { // b frees what it received at its next pass; a sends a little more meanwhile
		if a.sched.InDevice() == 0 {
			break
		}
		b.Pass()
		a.Pass()
	}
	if n := a.sched.InDevice(); n != 0 {
		t.Fatalf("%d frames still held after the peer took them", n)
	}
	resendFrom(t, b, a, id, cl.Num(), 1000)
	a.Pass()
	if m := a.ep.Metrics(); m.ResendsQueued != 1 || m.ResentPackets == 0 {
		t.Fatalf("RESEND after the peer took the DATA: %d queued, %d packets resent; want 1 and some", m.ResendsQueued, m.ResentPackets)
	}
	var done, late uint64
	for q := range a.txBufs {
		done += a.sched.Stats(q).Completed
		late += a.sched.Stats(q).Late
	}
	if done == 0 || late != 0 {
		t.Errorf("completions %d (want some), late %d (want none)", done, late)
	}
	// The ARP request each host sent came back as the other's reply,
	// rewritten in place: copied, as its sender still held it.
	if a.tx.SharedReplies+b.tx.SharedReplies == 0 {
		t.Error("no ARP reply was copied out of a shared mbuf")
	}
}
