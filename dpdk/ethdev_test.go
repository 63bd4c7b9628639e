package dpdk_test

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestNullPort_rxTxAndStats(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	p := newVdev(t, "net_null_rxtx", "size=64")
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != "net_null" || info.MaxTxQueues < 8 {
		t.Fatalf("info = %+v", info)
	}
	startPort(t, p, pool, 1, 1)
	pkts := make([]*dpdk.Mbuf, 32)
	n := p.RxBurst(0, pkts)
	if n != 32 {
		t.Fatalf("RxBurst from net_null = %d, want 32", n)
	}
	for _, m := range pkts[:n] {
		if m.DataLen() != 64 || m.PktLen() != 64 || len(m.Data()) != 64 {
			t.Fatalf("mbuf lengths %d/%d, want 64", m.DataLen(), m.PktLen())
		}
	}
	if sent := p.TxBurst(0, pkts[:n]); sent != n {
		t.Fatalf("TxBurst took %d of %d", sent, n)
	}
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.IPackets != 32 || st.OPackets != 32 {
		t.Errorf("stats %+v, want 32 in and out", st)
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs still in use after TX", pool.InUse())
	}
	link, err := p.Link()
	if err != nil || !link.Up {
		t.Errorf("link %v, %v: want up", link, err)
	}
	if mac, err := p.MAC(); err != nil || len(mac) != 6 {
		t.Errorf("MAC %v, %v", mac, err)
	}
	if _, err := p.XStats(); err != nil {
		t.Errorf("XStats: %v", err)
	}
}

func TestConfigure_tooManyQueuesNamed(t *testing.T) {
	dpdktest.Need(t)
	p := newVdev(t, "net_ring_toomany", "")
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Configure(1, info.MaxTxQueues+4, dpdk.PortConf{})
	if err == nil {
		t.Fatal("Configure accepted more TX queues than the device has")
	}
	for _, want := range []string{"TX queues", "at most", "net_ring_toomany"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestConfigure_unsupportedOffloadNamed(t *testing.T) {
	dpdktest.Need(t)
	p := newVdev(t, "net_null_offload", "")
	info, _ := p.Info()
	if info.TxOffloadCapa&dpdk.TxOffloadIPv4Cksum != 0 {
		t.Skip("net_null offers IPv4 checksum offload in this DPDK")
	}
	err := p.Configure(1, 1, dpdk.PortConf{TxOffloads: dpdk.TxOffloadIPv4Cksum})
	if err == nil || !strings.Contains(err.Error(), "TX offloads") {
		t.Fatalf("got %v, want an error naming the offload", err)
	}
}

// ringPair makes two ports joined back to back through two rings.
func ringPair(t *testing.T, name string) (a, b *dpdk.Port) {
	t.Helper()
	r1, err := dpdk.NewRing(name+"_ab", 1024, dpdk.SocketIDAny, dpdk.RingSP|dpdk.RingSC)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := dpdk.NewRing(name+"_ba", 1024, dpdk.SocketIDAny, dpdk.RingSP|dpdk.RingSC)
	if err != nil {
		t.Fatal(err)
	}
	a, err = dpdk.PortFromRings(name+"_a", []*dpdk.Ring{r2}, []*dpdk.Ring{r1}, dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	b, err = dpdk.PortFromRings(name+"_b", []*dpdk.Ring{r1}, []*dpdk.Ring{r2}, dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
		r1.Free()
		r2.Free()
	})
	return a, b
}

func TestRingPair_roundTripByteExact(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	a, b := ringPair(t, "rt")
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)
	rng := rand.New(rand.NewSource(1))
	const total = 10000
	var sent [][]byte
	out := make([]*dpdk.Mbuf, 16)
	in := make([]*dpdk.Mbuf, 32)
	received := 0
	for len(sent) < total || received < total {
		if len(sent) < total {
			if err := pool.AllocBulk(out); err != nil {
				t.Fatal(err)
			}
			for _, m := range out {
				n := 14 + rng.Intn(1500)
				buf := m.Append(n)
				rng.Read(buf)
				binary.BigEndian.PutUint32(buf, uint32(len(sent)))
				sent = append(sent, bytes.Clone(buf))
			}
			if k := a.TxBurst(0, out); k != len(out) {
				t.Fatalf("TxBurst took %d of %d", k, len(out))
			}
		}
		n := b.RxBurst(0, in)
		for _, m := range in[:n] {
			if !bytes.Equal(m.Data(), sent[received]) {
				t.Fatalf("packet %d differs after the ring round trip", received)
			}
			received++
		}
		dpdk.FreeBulk(in[:n])
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs leaked", pool.InUse())
	}
}

func TestTxBurst_stoppedPortCounted(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 256, 0)
	p := newVdev(t, "net_null_stopped", "")
	startPort(t, p, pool, 1, 1)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	pkts := make([]*dpdk.Mbuf, 8)
	if err := pool.AllocBulk(pkts); err != nil {
		t.Fatal(err)
	}
	if n := p.TxBurst(0, pkts); n != 0 {
		t.Fatalf("TxBurst on a stopped port took %d", n)
	}
	if n := p.RxBurst(0, pkts[:0:8]); n != 0 {
		t.Fatalf("RxBurst on a stopped port returned %d", n)
	}
	st, _ := p.Stats()
	if st.TxNotStarted != 8 || st.RxNotStarted != 1 {
		t.Errorf("not-started counts tx %d rx %d, want 8 and 1", st.TxNotStarted, st.RxNotStarted)
	}
	dpdk.FreeBulk(pkts)
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

func TestBurst_noAllocs(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	p := newVdev(t, "net_null_allocs", "")
	startPort(t, p, pool, 1, 1)
	pkts := make([]*dpdk.Mbuf, 32)
	var sink byte
	allocs := testing.AllocsPerRun(1000, func() {
		n := p.RxBurst(0, pkts)
		for _, m := range pkts[:n] {
			sink ^= m.Data()[0]
		}
		if k := p.TxBurst(0, pkts[:n]); k < n {
			dpdk.FreeBulk(pkts[k:n])
		}
	})
	if allocs != 0 {
		t.Errorf("RxBurst+TxBurst allocate %.1f times per burst, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(1000, func() {
		if err := pool.AllocBulk(pkts); err != nil {
			t.Fatal(err)
		}
		dpdk.FreeBulk(pkts)
	})
	if allocs != 0 {
		t.Errorf("AllocBulk+FreeBulk allocate %.1f times, want 0", allocs)
	}
	_ = sink
}

func BenchmarkRxTxBurst_null(b *testing.B) {
	dpdktest.Need(b)
	pool := newPool(b, 8192, 256)
	p := newVdev(b, "net_null_bench", "")
	startPort(b, p, pool, 1, 1)
	pkts := make([]*dpdk.Mbuf, 32)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := p.RxBurst(0, pkts)
		if k := p.TxBurst(0, pkts[:n]); k < n {
			dpdk.FreeBulk(pkts[k:n])
		}
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds()/1e6, "Mpps")
}

func TestPort_promiscuousXstatsAndIdentity(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 256, 0)
	p := newVdev(t, "net_ring_promisc", "")
	startPort(t, p, pool, 1, 1)
	if err := p.SetPromiscuous(true); err != nil {
		t.Fatal(err)
	}
	if !p.Promiscuous() {
		t.Error("promiscuous mode is off after enabling it")
	}
	if err := p.SetPromiscuous(false); err != nil || p.Promiscuous() {
		t.Errorf("disable: %v, still on: %v", err, p.Promiscuous())
	}
	xs, err := p.XStats()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, x := range xs {
		names[x.Name] = true
	}
	if !names["rx_good_packets"] || !names["tx_good_packets"] {
		t.Errorf("xstats lack the generic counters: %v", xs)
	}
	same, err := dpdk.PortByName("net_ring_promisc")
	if err != nil || same != p {
		t.Errorf("PortByName returned %p (%v), want the same *Port %p", same, err, p)
	}
	byID, err := dpdk.PortByID(p.ID)
	if err != nil || byID != p {
		t.Errorf("PortByID returned %p (%v)", byID, err)
	}
	if p.RxQueues() != 1 || p.TxQueues() != 1 {
		t.Errorf("queues %d/%d", p.RxQueues(), p.TxQueues())
	}
}

func TestPort_setMACAndMTU(t *testing.T) {
	dpdktest.Need(t)
	p := newVdev(t, "net_null_macmtu", "")
	mac := []byte{2, 0, 0, 0, 0, 0x42}
	if err := p.SetMAC(mac); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.MAC(); !bytes.Equal(got, mac) {
		t.Errorf("MAC %v after setting %v", got, mac)
	}
	if err := p.SetMAC([]byte{1, 2}); err == nil || !strings.Contains(err.Error(), "6-byte") {
		t.Errorf("short MAC: %v", err)
	}
	// Where the driver has no MTU operation, the error must name the port.
	if err := p.SetMTU(1500); err != nil && !strings.Contains(err.Error(), "net_null_macmtu") {
		t.Errorf("SetMTU error does not name the port: %v", err)
	}
}
