package collectives

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/torchjob"
	"github.com/spf13/pflag"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "collectives",
		Order: 120,
		Use:   "[flags] [-- EAL arguments]",
		Short: "the PyTorch backend \"homa\" against gloo: all_reduce 4 B-64 MiB, send/recv ping-pong, a DDP training step, 2 and 4 ranks",
		Long: `collectives serves the demo's hosts in this process (a worker socket each, joined by the
ring switch) and runs python/examples/collectives_bench.py as a job of 2 ranks and one
of 4 (a process of Debian's Python with torch per rank): all_reduce latency and bus
bandwidth from 4 B to 64 MiB and send/recv ping-pong, with the backend "homa" and
with gloo (kernel TCP) in the same job, and homa's ring and recursive doubling at every
size (where the switch between them belongs). Then, as a job of its own per size, it
runs python/examples/ddp_bench.py: a DistributedDataParallel training step of a
3-layer MLP (~10 MiB of float32 gradients, batch 1 per rank, SGD, fixed seeds, random
data) with three replicas stepped in turn: DDP over homa, DDP over gloo, and the same
step under no_sync() (no all_reduce). It reports the median and p90 step time of
--ddp-steps steps after a warm-up (each the slowest rank's), homa over gloo, each
backend's communication share (1 - compute/step), and checks that homa's losses and
parameters follow gloo's within float32 rounding: if not, the command fails (after
writing the results). It prints the tables and the goal rows (every goal of the issue
that this scenario measures, met or not, or why it has no figure) and writes
collectives.json, collectives.md, the plots and each rank's log to the results
directory. --smoke: sizes up to 1 MiB and 5 DDP steps of a small MLP. Needs
python3-torch (scripts/setup.sh installs it); run it from the repository's root or
give --root. The backend "homa" is whatever python/homa_dpdk registers.`,
		Command: command,
		// perf all does not run it (it needs torch and minutes); its
		// rows stand in the goals table without figures.
		Goals:     perf.GoalsOf(func(*Result) []perf.Goal { return Goals(nil) }),
		GoalOrder: 6,
	})
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	var noAlgorithms, noDDP bool
	f := perf.BindFlags(fs, "the smoke size: --quick and 5 DDP steps of a small MLP", false)
	f.Ints(&cfg.Ranks, "ranks", "job sizes, a job each (2..16 ranks, a demo host per rank)")
	fs.BoolVar(&cfg.Quick, "quick", false, "sizes up to 1 MiB, fewer repetitions")
	fs.BoolVar(&noAlgorithms, "no-algorithms", false, "skip homa's ring and recursive doubling at every size")
	fs.BoolVar(&noDDP, "no-ddp", false, "skip the DDP training step")
	fs.BoolVar(&cfg.DDPOnly, "ddp-only", false, "the DDP training step alone (no all_reduce sweep or ping-pong)")
	fs.IntVar(&cfg.DDPSteps, "ddp-steps", cfg.DDPSteps, "timed DDP steps per variant (homa, gloo, compute)")
	fs.IntVar(&cfg.DDPWarmup, "ddp-warmup", cfg.DDPWarmup, "untimed DDP steps per variant before")
	fs.IntVar(&cfg.DDPBatch, "ddp-batch", cfg.DDPBatch, "DDP samples per rank per step")
	fs.StringVar(&cfg.Python, "python", cfg.Python, "the Python with torch")
	fs.StringVar(&cfg.Root, "root", cfg.Root, "the repository (python/ is taken from there)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a job may take")
	return func(inv perf.Invocation) error {
		err := perf.SmokeOver(f, &cfg, func() Config {
			c := DefaultConfig()
			c.Smoke()
			return c
		})
		if err != nil {
			return err
		}
		cfg.Algorithms, cfg.DDP, cfg.Out = !noAlgorithms, !noDDP, inv.Out
		if err := cfg.Validate(); err != nil {
			return err
		}
		res, err := torchjob.Command(inv, f, &cfg.Dir, func() (*Result, error) { return Run(cfg) })
		if err != nil {
			return err
		}
		return res.Check()
	}
}
