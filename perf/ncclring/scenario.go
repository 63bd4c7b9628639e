package ncclring

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/torchjob"
	"github.com/spf13/pflag"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "nccl",
		Order: 125,
		Use:   "[flags] [-- EAL arguments]",
		Short: "NCCL's ring all-reduce through the homa NCCL plugin, over libhoma directly and gloo's all_reduce: 8 B-64 MiB, 2 and 4 ranks",
		Long: `nccl serves the demo's hosts in this process (a worker socket each, joined by the ring
switch) and runs nccl/build/bench-allreduce as jobs of 2 and 4 ranks (a forked process per
rank, rank r on host r+1): NCCL's ring all-reduce over host buffers (reduce-scatter then
all-gather, 512 KiB slices through 8 receive slots a connection, float32 summed on the
CPU, checked) through the plugin's v10 table, then the same ring over libhoma directly
(what the plugin costs); then gloo's all_reduce of the same sizes, 8 B to 64 MiB
(python/examples/collectives_bench.py --gloo-sweep, a process of Debian's Python with
torch per rank). It prints nccl-tests' columns per series (time, algbw, busbw = algbw x
2(n-1)/n, and CPU seconds per GB of all ranks), the ratios per size, and the goal rows
(time up to 64 KiB at most 0.5x gloo's; busbw at 4 and 64 MiB at least gloo's, at no
more CPU per GB; the plugin at most 1 µs per isend+test and 5% of bandwidth over
libhoma directly; at most 5 µs of a rank's CPU per message one at a time), met or not, then notes saying why a goal was missed; it writes
nccl.json, nccl.md and each job's logs to the results directory. --smoke: 2 ranks,
8 B to 64 KiB, 5 all-reduces a size. It builds nothing: run make -C nccl first. Needs
python3-torch; run it from the repository's root or give --root and --bench.`,
		Command: command,
		// perf all does not run it (it needs the plugin built, torch and
		// minutes); its rows stand in the goals table without figures.
		Goals:     perf.GoalsOf(func(*Result) []perf.Goal { return Goals(nil) }),
		GoalOrder: 8,
	})
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	f := perf.BindFlags(fs, "the smoke size: 2 ranks, 8 B to 64 KiB, 5 all-reduces a size", false)
	f.Ints(&cfg.Ranks, "ranks", "job sizes, a job each (2..8 ranks, a demo host per rank)")
	fs.IntVar(&cfg.Max, "max", cfg.Max, "the largest all-reduce, bytes (sizes double from 8 B)")
	fs.IntVar(&cfg.Iters, "iters", 0, "timed all-reduces per size (0: 100 up to 64 KiB, 30 to 1 MiB, 10 to 16 MiB, 5 above)")
	fs.StringVar(&cfg.Bench, "bench", cfg.Bench, "the benchmark program (make -C nccl builds it, the plugin beside it)")
	fs.StringVar(&cfg.Python, "python", cfg.Python, "the Python with torch (for gloo)")
	fs.StringVar(&cfg.Root, "root", cfg.Root, "the repository (python/examples is taken from there)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a job's bench or gloo run may take")
	return func(inv perf.Invocation) error {
		err := perf.SmokeOver(f, &cfg, func() Config {
			c := DefaultConfig()
			c.Smoke()
			return c
		})
		if err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		cfg.Out = inv.Out
		_, err = torchjob.Command(inv, f, &cfg.Dir, func() (*Result, error) { return Run(cfg) })
		return err
	}
}
