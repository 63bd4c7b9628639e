package cost

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf/enginebench"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
)

// The goal rows read the engine's 1 MB stream and the demo pair's runs.
func TestGoals_fromCost(t *testing.T) {
	r := &Result{Engine: []enginebench.Result{{Case: "stream1MB", NsPerPkt: 120}},
		Demo: []homapeer.DemoRun{{Name: "small", NsPerPkt: 190, RPCsPerSec: 1_400_000}, {Name: "1MB", NsPerPkt: 290}}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "ns per packet event, demo pair (1 MB echoes)", 290, false)
	perftest.CheckGoal(t, g, "ns per packet event, demo pair (100 B RPCs)", 190, false)
	if r := g["small RPCs per core over the 435k RPCs/s before"]; !r.Met || r.Figure < 3.2 || r.Figure > 3.3 {
		t.Errorf("rate: %+v", r)
	}
}

// The shard rows are 2 shards over 1: RPCs/s for small RPCs, Gbps for
// 1 MB streams; a case measured on one shard count only has no figure.
func TestGoals_engineOnShards(t *testing.T) {
	r := &Result{Shards: []ShardRun{
		{Case: "smallRPC", Shards: 1, RPCsPerSec: 1_000_000}, {Case: "smallRPC", Shards: 2, RPCsPerSec: 1_900_000},
		{Case: "stream1MB", Shards: 1, RPCsPerSec: 8_000, Gbps: 60}, {Case: "stream1MB", Shards: 2, RPCsPerSec: 9_000, Gbps: 90},
	}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "engine on 2 shards over 1, small RPCs/s", 1.9, true)
	perftest.CheckGoal(t, g, "engine on 2 shards over 1, 1 MB Gbps", 1.5, false)
	r.Shards = r.Shards[:1]
	if x := perftest.GoalsByName(Goals(r))["engine on 2 shards over 1, small RPCs/s"]; x.Absent == "" {
		t.Errorf("one shard count alone gave a figure: %+v", x)
	}
	if sec := (&Result{Shards: r.Shards}).Report(); len(sec.Tables) != 3 || len(sec.Tables[1].Rows) != 1 {
		t.Errorf("section tables %+v", sec.Tables)
	}
}

// The demo pair's lcores row is 2 lcores' small RPCs/s over 1's.
func TestGoals_demoPairOnLcores(t *testing.T) {
	r := &Result{DemoLcores: []homapeer.DemoRun{{Name: "small/1lcore", RPCsPerSec: 1_000_000}, {Name: "small/2lcores", RPCsPerSec: 1_700_000}}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "demo pair on 2 lcores a host over 1, small RPCs/s", 1.7, true)
	if x := perftest.GoalsByName(Goals(&Result{}))["demo pair on 2 lcores a host over 1, small RPCs/s"]; x.Absent == "" {
		t.Errorf("no runs gave a figure: %+v", x)
	}
}

// The testpmd row is the demo pair's small RPCs' ns per packet event over
// dpdk-testpmd's.
func TestGoals_overTestpmd(t *testing.T) {
	r := &Result{Testpmd: &TestpmdRef{Mpps: 10, NsPerPacketEvent: 50},
		Demo: []homapeer.DemoRun{{Name: "small", NsPerPkt: 150}}}
	g := perftest.GoalsByName(Goals(r))
	perftest.CheckGoal(t, g, "ns per packet event, demo pair (100 B RPCs) over dpdk-testpmd's io forwarding", 3, false)
	if len(r.Report().Tables) != 4 {
		t.Error("no reference table")
	}
}
