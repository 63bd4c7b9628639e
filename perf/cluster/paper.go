package cluster

import (
	"fmt"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/sched"
)

// The Homa paper (Montazeri et al., SIGCOMM 2018) gives its simulations'
// per-size slowdowns only as plots (its Figure 12 and those beside it);
// its text and its simulator's README state two figures, and the
// simulator's public configuration (PlatformLab/HomaSimulation, branch
// omnet_simulations, homatransport/src/dcntopo/homaTransportConfig.ini)
// states how it ran. Those are set beside this run's here, with where each
// comes from; nothing is read off a plot.
const (
	paperSimSource    = "PlatformLab/HomaSimulation, omnet_simulations, RpcTransportDesign/OMNeT++Simulation/README.md"
	paperConfigSource = "PlatformLab/HomaSimulation, omnet_simulations, homatransport/src/dcntopo/homaTransportConfig.ini"
)

// paperSetup is the simulator's configuration per workload: priority
// levels for scheduled bytes (adaptiveSchedPrioLevels, of 8) and the
// messages granted to at once (numSendersToKeepGranted).
var paperSetup = map[string]struct{ schedLevels, overcommit int }{
	"W1": {1, 1}, "W2": {3, 3}, "W3": {4, 4}, "W4": {7, 7}, "W5": {7, 7},
}

// paper is the table that sets the paper's figures beside this run's,
// and what it says of them.
func paper(results []*Result) (perf.Table, []string) {
	what := fmt.Sprintf("The paper gives its simulations' slowdown by size only as plots (Figure 12 and its neighbours), "+
		"so no per-size figure of it is copied here. Two figures are stated in words, in the simulator's README (%s): "+
		"\"even at 80%% network load, Homa provides 99th-percentile tail latencies for short messages within a factor of 2.2x "+
		"of an unloaded network\", and \"Homa can push the network bandwidth utilization to 90%% for different workloads\". "+
		"Its slowdown is a size's P99 latency over the least latency measured for that size; ours is each message's "+
		"completion time over its idle time from link math (idle.go), which is a little lower than a measured least.", paperSimSource)
	t := perf.Table{Title: "Beside the Homa paper", Header: []string{"workload", "paper: short P99 at 80%", "homa-dpdk: short P99 at 80%", "paper: utilization", "homa-dpdk at 90%: backlog growth, keeps up", "paper: scheduled levels / granted at once", "homa-dpdk: scheduled levels / granted at once"}}
	find := func(wl string, load float64) *Result { return findRun(results, wl, load, Homa) }
	for _, wl := range workloads(results) {
		if find(wl, 0.8) == nil && find(wl, 0.9) == nil {
			continue
		}
		short, keep, levels := "-", "-", "-"
		if r := find(wl, 0.8); r != nil {
			if b, what := ShortOf(r); b != nil {
				short = fmt.Sprintf("%.2f (%s)", b.P99, strings.TrimPrefix(what, "its "))
			}
		}
		if r := find(wl, 0.9); r != nil {
			keep = fmt.Sprintf("%+.3f, %s", r.BacklogGrowth, yesNo(r.KeepsUp))
		}
		for _, r := range results {
			if r.Workload == wl && r.Variant == Homa {
				c := sched.Cutoffs(r.Cutoffs)
				levels = fmt.Sprintf("%d / %d", c.MaxSchedPrio()+1, r.MaxOvercommit)
				break
			}
		}
		p := paperSetup[wl]
		t.Rows = append(t.Rows, []string{wl, "within 2.2 (all workloads)", short, "90% (all workloads)", keep,
			fmt.Sprintf("%d / %d", p.schedLevels, p.overcommit), levels})
	}
	return t, []string{what, fmt.Sprintf("The simulator's setup (%s): 144 hosts, 16 per rack, 4 aggregation switches (full bisection), "+
		"10 Gb/s host and 40 Gb/s fabric links, 0.25 µs per switch, store-and-forward, 0.5 µs of software turnaround and "+
		"0.5 µs in the NIC per packet, RTTbytes 10,000, 8 priority levels, at most RTTbytes outstanding per granted message; "+
		"the same as here but for the per-workload levels and overcommitment above (set by hand there, from the workload "+
		"here: the unscheduled levels from the unscheduled share of wire bytes, cutoffs balanced by load and delay; "+
		"8 messages granted at once within 10 x RTTbytes).", paperConfigSource)}
}
