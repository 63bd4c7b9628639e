package dpdk_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// childEnv names the role of a re-executed test binary (see child_test.go).
const childEnv = "HOMA_DPDK_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	dpdktest.Main(m)
}

// newPool makes a uniquely named pool freed at the end of the test.
func newPool(t testing.TB, n, cache uint32) *dpdk.Mempool {
	t.Helper()
	p, err := dpdk.NewPktMbufPool(fmt.Sprintf("tpool%d", poolSeq()), n, cache, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Free)
	return p
}

var poolCount int

func poolSeq() int { poolCount++; return poolCount }

// startPort configures a port with nrx/ntx queues, sets them up and starts it.
func startPort(t testing.TB, p *dpdk.Port, pool *dpdk.Mempool, nrx, ntx uint16) {
	t.Helper()
	if err := p.Configure(nrx, ntx, dpdk.PortConf{}); err != nil {
		t.Fatal(err)
	}
	for q := uint16(0); q < nrx; q++ {
		if err := p.RxQueueSetup(q, 1024, pool); err != nil {
			t.Fatal(err)
		}
	}
	for q := uint16(0); q < ntx; q++ {
		if err := p.TxQueueSetup(q, 1024); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
}

// newVdev creates a vdev removed at the end of the test.
func newVdev(t testing.TB, name, args string) *dpdk.Port {
	t.Helper()
	p, err := dpdk.NewVdev(name, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dpdk.RemoveVdev(name); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	})
	return p
}
