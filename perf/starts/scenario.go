package starts

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "starts",
		Order: 80,
		Use:   "[--smoke] [--out DIR]",
		Short: "Ten fresh daemons per link: their first 100 RPCs against their steady P50, and the spread of their 1 MB P50s",
		Long: `starts starts the daemon that rtt starts (demo --workers, a child process) ten times on
the ring link and ten on memif, the links taking turns, and measures each fresh daemon:
the RTT of its first 100 RPCs of 100 B one by one, the steady P50 of 100 B after 5,000
more, then the P50 of up to 1,000 1 MB round trips. It judges two goals: no bimodal
starts (per link, the largest 1 MB P50 within 15 % of the smallest) and no warm-up
penalty (in every start, the P50 of the first 100 within 1.5x of the steady P50), and
keeps the evidence of each start: the page faults of the daemon and of the harness in
each phase and during each first RPC, and how both map the worker regions (hugepages
or not). --smoke: two starts on the ring link, short phases. It writes starts.json,
starts-first.png and starts-large.png into the results directory.`,
		Title:     Title,
		Key:       "starts",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 4,
	})
}

// run measures as perf's options say and writes starts.json and the plots
// into o.Dir.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir = o.Self, o.Dir
	return perf.Measured(o, "starts", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
