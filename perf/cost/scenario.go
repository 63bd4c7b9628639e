package cost

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "cost",
		Order: 60,
		Use:   "[--smoke] [--out DIR]",
		Short: "The data path's time per packet event: the engine alone, and the demo pair",
		Long: `cost runs the engine benchmark (two engine endpoints on one goroutine, a link that
copies nothing) and the demo pair (this program's demo as a child: both Homa hosts on a
net_ring pair, one busy-polling loop) for 100 B RPCs and 1 MB echoes, and writes
cost.json into the results directory. Each figure is the core's time per packet event:
one packet sent or received by either side.`,
		Title:     Title,
		Key:       "cost",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 3,
	})
}

// Title is the cost section's title.
const Title = "cost: the data path's time per packet event (engine alone, and the demo pair)"

func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir = o.Self, o.Dir
	return perf.Measured(o, "cost", Steps(), func(p *perf.Progress) (*Result, error) { return Measure(cfg, p) })
}
