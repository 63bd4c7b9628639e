package host

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Four hosts on a ring switch, one loop: every host sends an RPC to every
// other, the first through ARP (broadcasts flooded as copies), and each
// response comes back byte-exact; the switch learned every MAC, switched
// the rest without copies, and no mbuf is left when the hosts are gone.
func TestRingSwitch_fourHostsAllPairs(t *testing.T) {
	dpdktest.Need(t)
	const n = 4
	pool := dpdktest.Pool(t, "rsw", 8192, wire.BufferRoom(1500))
	sw, err := NewRingSwitch("rsw", n, 2, pool)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := nicq.NewMap(2)
	if err != nil {
		t.Fatal(err)
	}
	_, clock, wallOff := NewClock()
	hosts := make([]*Host, n)
	for i, p := range sw.Ports() {
		if _, err := SetupPort(p, PortSetup{TxQueues: 2, RxQueues: 1, Pool: pool}); err != nil {
			t.Fatal(err)
		}
		hosts[i], err = New(Config{Port: p, Pool: pool, IP: [4]byte{10, 0, 0, byte(i + 1)}, MAC: wire.MAC{2, 0, 10, 0, 0, byte(i + 1)},
			PrioMap: pm, LinkBps: 10e9, Engine: engine.DefaultConfig(), Clock: clock, WallOff: wallOff, Burst: 32,
			ARP: ARPConfig{Timeout: 10 * time.Millisecond, Aging: time.Hour, Retries: 5}})
		if err != nil {
			t.Fatal(err)
		}
	}
	hosts[0].AddApp(sw)
	pipe := NewPipeline(hosts...)
	t.Cleanup(func() {
		for _, h := range hosts {
			h.Drain()
		}
		for _, p := range sw.Ports() {
			p.Stop()
			p.Close()
		}
		sw.Close()
	})
	servers := make([]*engine.Port, n)
	clients := make([]*engine.Port, n)
	for i, h := range hosts {
		if servers[i], err = h.Endpoint().Bind(99); err != nil {
			t.Fatal(err)
		}
		if clients[i], err = h.Endpoint().OpenClient(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]byte{}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			body := []byte(fmt.Sprintf("from %d to %d %s", i, j, bytes.Repeat([]byte{byte(i*n + j)}, 3000)))
			if _, err := clients[i].Send(engine.Addr{IP: netip.AddrFrom4(hosts[j].IP()), Port: 99}, body); err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprintf("%d>%d", i, j)] = body
		}
	}
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got < n*(n-1) && time.Now().Before(deadline); {
		pipe.Pass()
		for _, srv := range servers {
			for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
				srv.Reply(m, m.Data)
			}
		}
		for i, cl := range clients {
			for m, ok := cl.Receive(); ok; m, ok = cl.Receive() {
				if m.Err != nil {
					t.Fatalf("host %d: %v", i, m.Err)
				}
				var from, to int
				fmt.Sscanf(string(m.Data), "from %d to %d", &from, &to)
				if from != i || !bytes.Equal(m.Data, want[fmt.Sprintf("%d>%d", from, to)]) {
					t.Fatalf("host %d got a response that is not its own: %.20q", i, m.Data)
				}
				got++
			}
		}
	}
	st := sw.Stats()
	t.Logf("switch: %+v", st)
	if got != n*(n-1) {
		t.Fatalf("%d of %d RPCs completed; switch %+v", got, n*(n-1), st)
	}
	if st.Flooded == 0 || st.Copies == 0 || st.Switched < uint64(4*n*(n-1)) || st.Dropped != 0 {
		t.Errorf("switch counters %+v", st)
	}
}

// The switch's MAC table is bounded (issue 30, finding 7): 65,536 frames
// from as many made-up source MACs leave switchMACs learned, the oldest
// forgotten first and counted; a host that sends again is learned again
// and its frames are switched, not flooded.
func TestRingSwitch_macTableBounded(t *testing.T) {
	dpdktest.Need(t)
	pool := dpdktest.Pool(t, "rswb", 8192, wire.BufferRoom(1500))
	sw, err := NewRingSwitch("rswb", 2, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sw.Stop()
		for _, p := range sw.Ports() {
			p.Close()
		}
		sw.Close()
	})
	known := wire.MAC{2, 0, 10, 0, 0, 2}
	bufs := make([]*dpdk.Mbuf, 64)
	// send puts n frames from port `from` to dst on its TX ring, the i-th
	// from src(i), switches them, and frees what reached either RX ring.
	send := func(from, n int, dst wire.MAC, src func(i int) wire.MAC) {
		t.Helper()
		for i := 0; i < n; i += len(bufs) {
			b := bufs[:min(len(bufs), n-i)]
			if err := pool.AllocBulk(b); err != nil {
				t.Fatal(err)
			}
			for k, m := range b {
				eth := wire.EthernetFields{Dst: dst, Src: src(i + k), Type: wire.EtherTypeIPv4}
				eth.Encode(m.Append(60))
			}
			if k := sw.tx[from].EnqueueMbufs(b); k != len(b) {
				t.Fatalf("switch TX ring took %d of %d", k, len(b))
			}
			sw.Poll(0)
			for _, r := range sw.rx {
				for k := r.DequeueMbufs(bufs); k > 0; k = r.DequeueMbufs(bufs) {
					dpdk.FreeBulk(bufs[:k])
				}
			}
		}
	}
	fromKnown := func(int) wire.MAC { return known }
	send(1, 1, wire.BroadcastMAC, fromKnown)
	const flood = 65_536
	send(0, flood, known, func(i int) wire.MAC { return wire.MAC{2, 0xee, 0, byte(i >> 16), byte(i >> 8), byte(i)} })
	st := sw.Stats()
	t.Logf("after %d made-up sources: %d MACs learned, %+v", flood, len(sw.learn), st)
	if len(sw.learn) != switchMACs || st.Evicted != flood+1-switchMACs {
		t.Errorf("%d MACs learned, %d forgotten; want %d, %d", len(sw.learn), st.Evicted, switchMACs, flood+1-switchMACs)
	}
	send(1, 1, wire.BroadcastMAC, fromKnown) // the known host sends again
	before := sw.Stats()
	send(0, 10, known, func(int) wire.MAC { return wire.MAC{2, 0, 10, 0, 0, 1} })
	if st := sw.Stats(); st.Switched-before.Switched != 10 || st.Flooded != before.Flooded {
		t.Errorf("frames to a host learned again: %d switched, %d flooded; want 10, 0", st.Switched-before.Switched, st.Flooded-before.Flooded)
	}
}
