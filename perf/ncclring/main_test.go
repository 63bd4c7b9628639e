package ncclring

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// TestMain brings EAL up, as dpdktest wants, so that dpdktest.Need tells
// whether the demo's hosts can run here.
func TestMain(m *testing.M) { dpdktest.Main(m) }
