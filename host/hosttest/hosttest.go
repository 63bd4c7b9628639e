// Package hosttest makes host pairs for the tests of the packages built on
// host (daemon, demo): a pool per pair, names that do not collide, and a
// check at the end of the test that no mbuf leaked.
package hosttest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/wire"
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
		c.Pool = dpdktest.Pool(t, c.Name, 8192, wire.BufferRoom(max(c.MTU, 1500)))
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
