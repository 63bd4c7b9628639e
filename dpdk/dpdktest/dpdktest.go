// Package dpdktest brings up EAL once for a test binary and decides,
// loudly, whether DPDK tests run or skip.
//
// DPDK tests need root (hugepages, vdevs) and DPDK itself. Where either is
// missing they skip with the reason — unless HOMA_REQUIRE_DPDK=1 (CI sets
// it), which turns every such skip into a failure.
package dpdktest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

var state struct {
	once   sync.Once
	reason string // why DPDK tests cannot run, or ""
}

// Required reports whether HOMA_REQUIRE_DPDK asks that DPDK tests never skip.
func Required() bool { return os.Getenv("HOMA_REQUIRE_DPDK") == "1" }

// EALArgs are the arguments the test EAL runs with: all CPUs as lcores
// (lcore 0 the main one), hugepages when the machine has them, and nothing
// shared with other test binaries (in-memory, or a file prefix of its own).
func EALArgs() []string {
	n := runtime.NumCPU()
	lcores := "0"
	if n > 1 {
		lcores = "0-" + strconv.Itoa(n-1)
	}
	return dpdk.VirtualDeviceArgs(lcores, dpdk.ProbeMemory(), 1024, "homatest"+strconv.Itoa(os.Getpid()))
}

// Main initialises EAL (when the process may) and runs the tests. Use it
// as the body of TestMain.
func Main(m *testing.M) {
	if os.Geteuid() != 0 {
		state.reason = "DPDK tests need root (run as root, as CI does)"
	} else if _, err := dpdk.Init(EALArgs()); err != nil {
		state.reason = fmt.Sprintf("EAL does not initialise here: %v", err)
	}
	if state.reason != "" {
		fmt.Fprintf(os.Stderr, "dpdktest: DPDK tests will not run: %s\n", state.reason)
	}
	code := m.Run()
	if dpdk.Initialized() {
		_ = dpdk.Cleanup()
	}
	os.Exit(code)
}

// Need skips the test when EAL is not up, or fails it when
// HOMA_REQUIRE_DPDK=1.
func Need(t testing.TB) {
	t.Helper()
	if state.reason == "" && dpdk.Initialized() {
		return
	}
	if Required() {
		t.Fatalf("HOMA_REQUIRE_DPDK=1 but %s", state.reason)
	}
	t.Skipf("skipping DPDK test: %s", state.reason)
}

// Pool makes an mbuf pool of n mbufs with dataRoom bytes each (after
// DPDK's headroom) for the test, freed at its end, after a check that no
// mbuf is still out (registered first, so it runs after the cleanups the
// test registers later: its pairs' drain and close).
func Pool(t testing.TB, name string, n, dataRoom int) *dpdk.Mempool {
	t.Helper()
	pool, err := dpdk.NewPktMbufPool(name, uint32(n), 0, uint16(dataRoom+dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Free)
	t.Cleanup(func() {
		if pool.InUse() != 0 {
			t.Errorf("%d mbufs leaked", pool.InUse())
		}
	})
	return pool
}
