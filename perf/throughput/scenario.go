package throughput

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "throughput",
		Order: 40,
		Use:   "[--smoke] [--out DIR] [--no-veth]",
		Short: "Gbps and CPU per GB of a Homa worker pair streaming 1, 8 and 64 MB messages, on memif and on ring, vs kernel TCP",
		Long: `throughput streams messages of 1 MB (4 outstanding), 8 MB (4) and 64 MB (2: what the
demo's worker regions hold), each with 1-byte replies and for 10 s, from a client worker
to a server worker through the daemon (run as a child process: demo --workers), with
its hosts on a net_memif pair (homa-memif) and then on a net_ring pair (homa-ring), then
over kernel TCP on loopback and across a veth pair (--smoke: 1 MB alone, 1 s), and
prints per size Gbps of payload and CPU seconds per GB (harness and daemon processes)
and each Homa run's ratios to TCP's. It writes throughput.json and
throughput-gbps.png, throughput-cpu.png into the results directory.`,
		Title:     Title,
		Key:       "throughput",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 1,
	})
}

// run measures as perf's options say (o.Testpmd: Homa through
// dpdk-testpmd) and writes throughput.json and the plots into o.Dir.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth, cfg.Testpmd = o.Self, o.Dir, o.Out, !o.NoVeth, o.Testpmd
	return perf.Measured(o, "throughput", "throughput.json", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
