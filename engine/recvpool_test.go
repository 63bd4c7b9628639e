package engine

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// strangerData is a DATA frame of a request from src to host h's port
// 99: id's bytes at off of a message claiming length bytes.
func strangerData(h *testHost, src [4]byte, id uint64, length, off, n int) []byte {
	payload := make([]byte, n)
	b := make([]byte, frameHomaOffset+wire.DataHeaderLen+n)
	eth := wire.EthernetFields{Dst: testMAC(h.ip), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, h.ip, 0, wire.DataHeaderLen+n)
	ip.Encode(b[frameIPOffset:])
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: id},
		MessageLength: uint32(length), Incoming: uint32(length), CutoffVersion: 1, Offset: uint32(off)}
	f.Encode(b[frameHomaOffset:])
	copy(b[frameHomaOffset+wire.DataHeaderLen:], payload)
	return b
}

// A port whose owner gives memory in 64 KB units: a full packet claiming
// 16 packets' bytes commits nothing (16 times the bytes would be 45 times
// by page); the request commits once 1/16 of its page has arrived, its
// third packet (4,272 bytes).
func TestRecvPool_earlyCommitCountsPages(t *testing.T) {
	n := newTestNet(t)
	srv := n.addHost("srv", 1, nil)
	port, err := srv.e.Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	var asked []int
	port.SetHooks(PortHooks{RecvBufUnit: 64 << 10,
		RecvBuf: func(k int) ([]byte, bool) { asked = append(asked, k); return make([]byte, k), true }})
	pl := srv.e.payload
	src := [4]byte{10, 0, 0, 66}
	for p := range 3 {
		srv.e.Receive(strangerData(srv, src, 2, 16*pl, p*pl, pl))
		if want := p / 2; len(asked) != want {
			t.Fatalf("after %d of 16 packets: RecvBuf asked %d times, want %d", p+1, len(asked), want)
		}
	}
	if asked[0] != 16*pl {
		t.Fatalf("RecvBuf asked for %d bytes, want %d", asked[0], 16*pl)
	}
}

// A stranger's requests, committed on the heap and left unfinished, take
// all of MaxRecvHeapBytes; a real client's request a tick later gets room
// at once: one of theirs is evicted, the stranger holding more than the
// client would (recv_evictions_share); then, once they have been silent
// for ResendTicks, a third address's second request evicts another
// (recv_evictions_stale).
func TestRecvPool_heapHeldByStrangerGivesWay(t *testing.T) {
	n := newTestNet(t)
	pl := wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)
	claim := 16 * pl
	srv := n.addHost("srv", 1, func(c *Config) { c.MaxRecvHeapBytes = 4 * claim })
	cli := n.addHost("cli", 2, nil)
	sp, cp := serverAndClient(t, srv, cli, 99)
	stranger := [4]byte{10, 0, 0, 66}
	for i := range 4 {
		srv.e.Receive(strangerData(srv, stranger, uint64(2+2*i), claim, 0, pl))
	}
	if got := srv.e.RecvHeapBytes(); got != 4*claim {
		t.Fatalf("4 one-packet requests claiming %d bytes hold %d heap bytes, want %d", claim, got, 4*claim)
	}
	n.advance(1_000_000)
	if _, err := cp.Send(Addr{IP: netip.AddrFrom4(srv.ip), Port: 99}, msg(20_000, 1)); err != nil {
		t.Fatal(err)
	}
	n.flush()
	m := srv.e.Metrics()
	if got, ok := sp.Receive(); !ok || len(got.Data) != 20_000 || m.RecvEvictionsShare != 1 || m.Drops[DropRecvHeapFull] != 0 {
		t.Fatalf("real request with the heap held by a stranger: delivered %v, %d evicted for their share, %d refused",
			ok, m.RecvEvictionsShare, m.Drops[DropRecvHeapFull])
	}

	n.advance(int64(srv.e.cfg.ResendTicks) * 1_000_000)
	for _, id := range []uint64{2, 4} { // the first fits in what the client's request gave back
		srv.e.Receive(strangerData(srv, [4]byte{10, 0, 0, 67}, id, claim, 0, pl))
	}
	m = srv.e.Metrics()
	if m.RecvEvictionsStale != 1 || m.Drops[DropRecvHeapFull] != 0 || srv.e.RecvHeapBytes() != 4*claim {
		t.Fatalf("a request from a new address after %d silent ticks: %d stale evicted, %d refused, %d heap bytes held",
			srv.e.cfg.ResendTicks, m.RecvEvictionsStale, m.Drops[DropRecvHeapFull], srv.e.RecvHeapBytes())
	}
}
