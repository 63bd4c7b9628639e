package host

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/nicq"
)

// newTestTx makes a transmit side on a pool of 256 mbufs (freed when the
// test ends) and a scheduler of queues TX queues.
func newTestTx(t *testing.T, name string, queues int) (*dpdk.Mempool, nicq.Map, *nicq.Scheduler[*dpdk.Mbuf], *mbufTx) {
	t.Helper()
	dpdktest.Need(t)
	pool, err := dpdk.NewPktMbufPool(name, 256, 0, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Free)
	pm, _ := nicq.NewMap(queues)
	sched, err := nicq.NewScheduler[*dpdk.Mbuf](nicq.Config{Map: pm, Capacity: 16, Burst: 4, LinkBps: 1e9, MaxNICQueue: 1e6},
		func(m *dpdk.Mbuf) int { return m.PktLen() })
	if err != nil {
		t.Fatal(err)
	}
	return pool, pm, sched, newMbufTx(pool, sched, 4, 8)
}

func TestMbufTx_checksumOffloadMarksEngineFramesOnly(t *testing.T) {
	pool, _, sched, tx := newTestTx(t, "txside", 1)
	tx.ipCksum, tx.l2Len = true, 14
	b := tx.Buffer()
	if len(b) < 1518 {
		t.Fatalf("lent %d bytes, want a whole frame's room", len(b))
	}
	b[14] = 0x45 // IPv4
	tx.Send(b[:100], 3)
	b6 := tx.Buffer()
	b6[14] = 0x60 // IPv6: no header checksum to offload
	tx.Send(b6[:100], 3)
	host := pool.Alloc()
	host.Append(60)
	host.SetOlFlags(1) // left over from RX
	tx.enqueue(host)
	sched.Fill(0)
	burst := sched.Burst(0)
	if len(burst) != 3 {
		t.Fatalf("burst of %d", len(burst))
	}
	var eng, eng6 *dpdk.Mbuf
	for _, m := range burst {
		switch {
		case m == host:
		case m.Data()[14] == 0x45:
			eng = m
		default:
			eng6 = m
		}
	}
	if eng == nil || eng6 == nil {
		t.Fatal("frames missing from the burst")
	}
	if eng6.OlFlags() != 0 {
		t.Errorf("IPv6 engine frame flags %#x, want none", eng6.OlFlags())
	}
	if eng.OlFlags()&(dpdk.TxIPv4|dpdk.TxIPCksum) != dpdk.TxIPv4|dpdk.TxIPCksum {
		t.Errorf("engine frame flags %#x lack IPv4 checksum offload", eng.OlFlags())
	}
	if l2, l3 := eng.TxOffloadLens(); l2 != 14 || l3 != 20 || eng.DataLen() != 100 {
		t.Errorf("l2 %d l3 %d len %d", l2, l3, eng.DataLen())
	}
	if host.OlFlags() != 0 {
		t.Errorf("host-stack frame keeps flags %#x", host.OlFlags())
	}
	sched.Taken(0, 0, 0, func(*dpdk.Mbuf) {})
	sched.Drain(func(m *dpdk.Mbuf) { m.Free() })
	tx.close()
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

func TestHostLoop_nextHopUsesGatewayOffSubnet(t *testing.T) {
	l := &Host{subnet: netip.MustParsePrefix("10.0.0.0/24"), gateway: [4]byte{10, 0, 0, 254}}
	if hop, ok := l.nextHop([4]byte{10, 0, 0, 7}); !ok || hop != [4]byte{10, 0, 0, 7} {
		t.Errorf("on-link: %v %v", hop, ok)
	}
	if hop, ok := l.nextHop([4]byte{192, 0, 2, 1}); !ok || hop != l.gateway {
		t.Errorf("off-link: %v %v, want the gateway", hop, ok)
	}
	l.gateway = [4]byte{}
	if _, ok := l.nextHop([4]byte{192, 0, 2, 1}); ok {
		t.Error("off-link without a gateway has a route")
	}
	if n := l.resolve(netip.AddrFrom4([4]byte{192, 0, 2, 1})); n != nil || l.noRoute != 1 {
		t.Errorf("resolve off-link without gateway: %v (no_route %d), want no route", n, l.noRoute)
	}
}

// TxDone tells the engine which of its frames still wait in the software
// TX queues: a frame counts once its NIC queue took it (or it was
// dropped), not while it waits behind higher priorities; one sent without
// a lent mbuf counts at once.
func TestMbufTx_txDoneCountsFramesThatLeft(t *testing.T) {
	pool, pm, sched, tx := newTestTx(t, "txdone", 2)
	for range 3 {
		b := tx.Buffer()
		tx.Send(b[:100], 0)
	}
	tx.Send(make([]byte, 100), 6) // nothing lent: counts as gone
	if tx.TxDone(0) != 0 || tx.TxDone(6) != 1 {
		t.Fatalf("queued: TxDone(0) %d, TxDone(6) %d; want 0, 1", tx.TxDone(0), tx.TxDone(6))
	}
	sched.Fill(0)
	q := pm.Queue(0)
	burst := append([]*dpdk.Mbuf(nil), sched.Burst(q)...)
	sched.Taken(q, 2, 0, func(m *dpdk.Mbuf) { m.Free() })
	dpdk.FreeBulk(burst[:2]) // "sent"
	if tx.TxDone(0) != 2 {
		t.Fatalf("2 of 3 taken: TxDone(0) %d", tx.TxDone(0))
	}
	sched.Drain(func(m *dpdk.Mbuf) { m.Free() })
	if tx.TxDone(0) != 3 {
		t.Fatalf("after Drain: TxDone(0) %d, want 3", tx.TxDone(0))
	}
	tx.close()
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}
