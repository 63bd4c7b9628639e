package cluster

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/ns3"
)

// ns3Program is the repository's built ns-3 program; without it the test
// skips, or fails where HOMA_REQUIRE_NS3=1 (CI, whose set-up builds it).
func ns3Program(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ns3.Program)
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		if os.Getenv("HOMA_REQUIRE_NS3") == "1" {
			t.Fatalf("%s is not built (HOMA_REQUIRE_NS3=1): make -C ns3", p)
		}
		t.Skipf("%s is not built: make -C ns3 (needs libns3-dev)", p)
	}
	return p
}

// The AI mix's smoke size on both sides: the engine's homa, and DCTCP and
// TCP on ns-3, the same messages, every one delivered, the collectives
// measured on each, and the goal rows beside DCTCP filled in.
func TestRun_AIMixSmokeOnBothSides(t *testing.T) {
	bin := ns3Program(t)
	var rs Results
	for _, v := range []Variant{Homa, DCTCP, TCP} {
		cfg := SmokeConfig().SmokeAI()
		cfg.Workload, cfg.Variant, cfg.NS3, cfg.NS3Dir = workload.AI, v, bin, t.TempDir()
		r, err := Run(cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		t.Logf("%s: %d of %d delivered, short P99 %v, all-reduce %+v, all-to-all %+v, drops %d, marks %d", variantName(r), r.Delivered, r.Offered, r.Short, r.AllReduce, r.AllToAll, r.Drops, r.Marks)
		if r.Errors != 0 || r.Delivered == 0 || r.Delivered != r.Offered {
			t.Fatalf("%s: delivered %d of %d, errors %v", v, r.Delivered, r.Offered, r.ErrorLines)
		}
		if r.Short == nil || r.AllReduce == nil || r.AllReduce.Done == 0 || r.AllToAll == nil || r.AllToAll.Done == 0 {
			t.Fatalf("%s: short %v, all-reduce %+v, all-to-all %+v: want each measured", v, r.Short, r.AllReduce, r.AllToAll)
		}
		if r.AllReduce.P50 < 1 || r.AllToAll.P50 < 1 {
			t.Errorf("%s: a collective faster than its ideal: all-reduce %+v, all-to-all %+v", v, r.AllReduce, r.AllToAll)
		}
		if onNS3(v) && (r.Simulator != "ns-3" || len(r.NS3) == 0) {
			t.Errorf("%s: simulator %q, settings %v", v, r.Simulator, r.NS3)
		}
		rs = append(rs, r)
	}
	if rs[0].Offered != rs[1].Offered || rs[1].Offered != rs[2].Offered {
		t.Errorf("the sides offered %d, %d, %d messages: want the same", rs[0].Offered, rs[1].Offered, rs[2].Offered)
	}
	found := false
	for _, g := range Goals(rs) {
		if strings.HasPrefix(g.What, "AI at 80%: DCTCP's (ns-3) P99") {
			found = true
		}
	}
	if !found {
		t.Errorf("no goal row beside DCTCP in %+v", Goals(rs))
	}
}
