// Package hosttest makes host pairs for the tests of the packages built on
// host (daemon, demo): a pool per pair, names that do not collide, and a
// check at the end of the test that no mbuf leaked.
package hosttest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/host"
)

var seq atomic.Int64

// Pair makes a host pair from c, filling in what is zero: its name, a
// pool of 8192 mbufs that hold a frame of its MTU, the clock, an ARP
// timeout of 10 ms. It skips (or fails, where DPDK is required) without
// DPDK. The pair is closed when the test ends, and the pool checked for
// leaks after that; drain the hosts first (on the loop's thread, or in a
// cleanup registered after Pair).
func Pair(t testing.TB, c host.PairConfig) *host.Pair {
	t.Helper()
	dpdktest.Need(t)
	if c.Name == "" {
		c.Name = fmt.Sprintf("ht%d", seq.Add(1))
	}
	if c.Pool == nil {
		room := max(2048, (max(c.MTU, 1500)+18+1023)/1024*1024) // a frame of the MTU with a VLAN tag
		pool, err := dpdk.NewPktMbufPool(c.Name, 8192, 0, uint16(room+dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Free)
		// Cleanups run last-registered first: this one after the pair
		// has closed and its ports have been emptied.
		t.Cleanup(func() {
			if pool.InUse() != 0 {
				t.Errorf("%d mbufs leaked", pool.InUse())
			}
		})
		c.Pool = pool
	}
	if c.Clock == nil {
		_, c.Clock, c.WallOff = host.NewClock()
	}
	if c.ARP == 0 {
		c.ARP = 10 * time.Millisecond
	}
	p, err := host.NewPair(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
