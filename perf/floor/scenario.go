package floor

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "floor",
		Order: 70,
		Use:   "[--smoke] [--out DIR]",
		Short: "The memif link's own rate and copy cost (dpdk-testpmd txonly to rxonly, 1514- and 9014-byte frames) beside Homa on memif",
		Long: `floor measures what one net_memif link costs with nothing else in it: a dpdk-testpmd in txonly
mode on a memif server port sends frames as fast as the ring takes them, a second one in
rxonly mode on the client port receives and frees them, so each byte is copied twice, as
on Homa's memif link. It measures the frames of MTU 1500 (1514 bytes, bsize 2048) and
of MTU 9000 (9014 bytes, bsize 9216) in every trial (3 trials, 5 s each after 2 s of
warm-up; --smoke: 1 trial of 1 s): Gbps of frames, both processes' CPU seconds per
GB, and testpmd's busy ns per frame of each side. Then it streams Homa messages on
memif at MTU 1500 and 9000 (demo --workers --link memif --mtu M; 512 KiB, 1, 8 and 64
MB, as throughput; --smoke 1 MB) and prints each homa-memif run's Gbps and CPU per GB over the
floor at its MTU, the floor counted in Homa payload. It writes floor.json into the
results directory. perf all runs it after throughput, whose homa-memif runs are the
MTU 1500 ones.`,
		Title:     Title,
		Key:       "floor",
		All:       run,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 7,
	})
}

// run measures the floor. As its own command it runs Homa on memif at
// MTU 1500 and 9000; in perf all (prior given) at 9000 alone, beside the
// throughput scenario's homa-memif runs at 1500 when it has them.
func run(o perf.Options, prior map[string]any) (perf.Outcome, error) {
	mtus := []int{1500, 9000}
	var compare []perf.StreamRun
	if prior != nil {
		mtus = []int{9000}
		if t, ok := prior["throughput"].(perf.StreamRunner); ok {
			compare = t.StreamRuns()
		}
	}
	cfg := ConfigFor(o.Smoke, mtus)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Compare = o.Self, o.Dir, o.Out, compare
	return perf.Measured(o, "floor", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
