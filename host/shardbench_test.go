package host

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// shardRingPair is two hosts of n shards each on ring ports with a ring
// per shard and direction: shard s's TX queues of one port feed RX queue
// s of the other, as a NIC steering each shard's packets to its queue
// would, so hosts sharded alike never hand a frame over.
func shardRingPair(tb testing.TB, n int) (client, server []*Host) {
	tb.Helper()
	dpdktest.Need(tb)
	ringSeq++
	name := fmt.Sprintf("sb%d", ringSeq)
	// A pool per shard: the shards' threads are not EAL lcores, which
	// have mempool caches; one pool would make them contend on its ring.
	var pools []*dpdk.Mempool
	for s := range n {
		pools = append(pools, dpdktest.Pool(tb, fmt.Sprintf("%sp%d", name, s), 8192, wire.BufferRoom(1500)))
	}
	const perShard = 8
	ports, rings, err := NewShardRingPorts(name, perShard, n)
	tb.Cleanup(func() { CloseShardRingPorts(ports, rings) })
	if err != nil {
		tb.Fatal(err)
	}
	pm, err := nicq.NewMap(perShard)
	if err != nil {
		tb.Fatal(err)
	}
	_, clock, _ := NewClock()
	var hosts [2][]*Host
	macs := [2]wire.MAC{{2, 0, 10, 0, 0, 1}, {2, 0, 10, 0, 0, 2}}
	for i := range 2 {
		p := ports[i]
		st, err := SetupPort(p, PortSetup{TxQueues: n * perShard, RxQueues: n, Pool: pools[0]})
		if err != nil {
			tb.Fatal(err)
		}
		set := NewShardSet(n)
		for s := range n {
			h, err := New(Config{Port: p, Pool: pools[s], IP: [4]byte{10, 0, 0, byte(i + 1)}, MAC: macs[i],
				PrioMap: pm, LinkBps: LinkRate(p, 100e9), Engine: engine.DefaultConfig(), Clock: clock, Burst: 32,
				Offloads: st.Offloads, ARP: ARPConfig{Timeout: 10 * time.Millisecond, Aging: time.Hour, Retries: 5},
				Shards: set, ShardIndex: s, RxQueues: []uint16{uint16(s)}, TxQueueBase: uint16(s * perShard)})
			if err != nil {
				tb.Fatal(err)
			}
			hosts[i] = append(hosts[i], h)
		}
	}
	tb.Cleanup(func() {
		for _, hs := range hosts {
			for _, h := range hs {
				h.Drain()
			}
		}
	})
	return hosts[0], hosts[1]
}

// BenchmarkShardedHosts runs 100-byte RPCs, 32 outstanding per shard,
// between two hosts of 1 and of 2 shards, each pair of shards (client and
// server shard s) polled in turn by its own locked thread: RPCs per
// second over the port, and ns of a shard's core per RPC.
func BenchmarkShardedHosts(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("%dshards", n), func(b *testing.B) {
			client, server := shardRingPair(b, n)
			dst := engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}
			req := make([]byte, 100)
			var done atomic.Int64
			ready := make([]func(want int64) error, n)
			for s := range n {
				srv, err := server[s].Endpoint().Bind(99)
				if err != nil {
					b.Fatal(err)
				}
				server[s].setApp(func(int64) {
					for {
						m, ok := srv.Receive()
						if !ok {
							return
						}
						srv.Reply(m, m.Data)
					}
				})
				cli, err := client[s].Endpoint().OpenClient()
				if err != nil {
					b.Fatal(err)
				}
				out := 0
				ready[s] = func(want int64) error { // one shard's loop until done reaches want
					for done.Load() < want {
						for out < 32 {
							if _, err := cli.Send(dst, req); err != nil {
								return err
							}
							out++
						}
						client[s].Pass()
						server[s].Pass()
						for {
							m, ok := cli.Receive()
							if !ok {
								break
							}
							if m.Err != nil {
								return m.Err
							}
							out--
							done.Add(1)
						}
					}
					return nil
				}
			}
			run := func(want int64) {
				var wg sync.WaitGroup
				errs := make([]error, n)
				for s := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						errs[s] = ready[s](want)
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			run(int64(1000 * n)) // warm: peers, cutoffs, buffers
			done.Store(0)
			b.ResetTimer()
			t0 := time.Now()
			run(int64(b.N))
			el := time.Since(t0)
			b.ReportMetric(float64(b.N)/el.Seconds(), "rpcs/s")
			for _, h := range append(client, server...) {
				if h.HandOff().Frames != 0 {
					b.Errorf("%v: %d frames handed over between shards sharded alike", h.Addr(), h.HandOff().Frames)
				}
			}
		})
	}
}
