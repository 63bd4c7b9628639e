package rtt

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "rtt",
		Order: 30,
		Use:   "[--smoke] [--out DIR] [--no-veth]",
		Short: "Unloaded RTT of Homa workers (100 B to 64 MB) on memif and on ring vs kernel TCP over loopback and veth",
		Long: `rtt measures the unloaded round trip of 100 B, 1 KB, 10 KB, 100 KB, 1 MB, 8 MB and 64 MB
messages (MB: 10^6 bytes; --smoke stops at 1 MB) issued by shared-memory workers
through the daemon (two Homa hosts, run as a child process: demo --workers, whose
config takes messages up to 64 MiB between them), once with the hosts on a net_memif
pair (homa-memif: each byte copied into and out of its rings) and once on a net_ring
pair (homa-ring: the mbufs change hands, no copy in the link), then of the same
request/response over kernel TCP (TCP_NODELAY) on loopback and across a veth pair
between two network namespaces, in the same run. Each size gets up to 20,000 round
trips or 5 s (at least 10), after a warm-up of up to 1,000 (for at most 1.25 s
after the first 3). It prints P50 and P99 per size and the ratios TCP/Homa for each Homa
series, and writes rtt.json and rtt.png into the results directory.`,
		Title:     Title,
		Key:       "rtt",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 2,
	})
}

// run measures as perf's options say (o.Testpmd: Homa through
// dpdk-testpmd) and writes rtt.json and the plots into o.Dir.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Veth, cfg.Testpmd = o.Self, o.Dir, !o.NoVeth, o.Testpmd
	return perf.Measured(o, "rtt", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
