package daemon

import (
	"bytes"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/host/hosttest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(memifRoleEnv); role != "" {
		os.Exit(memifChild(role))
	}
	dpdktest.Main(m)
}

// ringHosts makes the two hosts of a ring pair (10.0.0.1 and 10.0.0.2)
// publishing their counters, and checks at the end that no mbuf leaked.
func ringHosts(t *testing.T, txQueues int) (a, b *host.Host) {
	t.Helper()
	p := hosttest.Pair(t, host.PairConfig{TxQueues: txQueues})
	t.Cleanup(p.Drain) // before the pair closes
	for _, h := range p.Hosts {
		h.PublishSnapshots()
	}
	return p.Hosts[0], p.Hosts[1]
}

// runRPCs echoes one RPC of each size from a to b, one at a time, on this
// goroutine's passes, then lets a publication interval pass so that both
// hosts' snapshots hold the result.
func runRPCs(t *testing.T, a, b *host.Host, sizes []int) {
	t.Helper()
	srv, err := b.Endpoint().Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	b.AddApp(host.AppFunc(func(int64) {
		for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
			srv.Reply(m, m.Data)
		}
	}))
	cl, err := a.Endpoint().OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	dst := engine.Addr{IP: netip.AddrFrom4(b.IP()), Port: 99}
	for _, size := range sizes {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		deadline := time.Now().Add(10 * time.Second)
		id, err := cl.Send(dst, msg) // waits in the engine for ARP, the first time
		if err != nil {
			t.Fatal(err)
		}
		for time.Now().Before(deadline) {
			a.Pass()
			b.Pass()
			if m, ok := cl.Receive(); ok {
				if m.Err != nil || m.ID != id || !bytes.Equal(m.Data, msg) {
					t.Fatalf("RPC %d of %d bytes: %+v", id, size, m.Err)
				}
				break
			}
		}
	}
	time.Sleep(time.Duration(host.PublishEvery))
	a.Pass()
	b.Pass()
}
