package throughput

import (
	"fmt"
	"strconv"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/pflag"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "throughput",
		Order: 40,
		Use:   "[--smoke] [--out DIR] [--no-veth] [--copier-cpu N]",
		Short: "Gbps and CPU per GB of a Homa worker pair streaming 512 KiB (NCCL's shape), 1, 8 and 64 MB messages, on memif and on ring, vs kernel TCP",
		Long: `throughput streams messages of 512 KiB (8 outstanding: NCCL's slices, its 4 MiB
buffer in 8 slots), 1 MB (4), 8 MB (4) and 64 MB (2: what the demo's worker regions hold), each with 1-byte replies and for 10 s, from a client worker
to a server worker through the daemon (run as a child process: demo --workers), with
its hosts on a net_memif pair (homa-memif) and then on a net_ring pair (homa-ring), then
over kernel TCP on loopback and across a veth pair (--smoke: 1 MB alone, 1 s), and
prints per size Gbps of payload and CPU seconds per GB (harness and daemon processes)
and each Homa run's ratios to TCP's. It writes throughput.json and
throughput-gbps.png, throughput-cpu.png into the results directory. --copier-cpu N
makes the daemon's receive copies into the workers' pools on a copier thread pinned to
CPU N (demo --copier-cpu) instead of its polling loop.`,
		Command:   command,
		Title:     Title,
		Key:       "throughput",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 1,
	})
}

// command is `perf throughput`: the directory flags and --copier-cpu.
func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	copierCPU := -1
	f := perf.BindFlags(fs, "", true)
	fs.IntVar(&copierCPU, "copier-cpu", -1, "the daemon's receive copies on a copier thread pinned to this CPU (demo --copier-cpu); -1: its loop copies")
	return func(inv perf.Invocation) error {
		o, err := f.Options(inv.Out)
		if err != nil {
			return err
		}
		if _, err := runWith(o, copierCPU); err != nil {
			return err
		}
		fmt.Fprintf(inv.Out, "results in %s\n", o.Dir)
		return nil
	}
}

// run measures as perf's options say (o.Testpmd: Homa through
// dpdk-testpmd) and writes throughput.json and the plots into o.Dir.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) { return runWith(o, -1) }

// runWith is run with the daemon's receive copies on a copier thread on
// copierCPU (-1: none).
func runWith(o perf.Options, copierCPU int) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	if copierCPU >= 0 {
		cfg.DaemonArgs = []string{"--copier-cpu", strconv.Itoa(copierCPU)}
	}
	cfg.Self, cfg.OutDir, cfg.Veth, cfg.Testpmd = o.Self, o.Dir, !o.NoVeth, o.Testpmd
	return perf.Measured(o, "throughput", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
