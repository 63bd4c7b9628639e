package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/collectives"
)

func collectivesCmd() *cobra.Command {
	cfg := collectives.DefaultConfig()
	var out, ranks string
	var noAlgorithms, noDDP, smoke bool
	c := &cobra.Command{
		Use:   "collectives [flags] [-- EAL arguments]",
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
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if cfg.Ranks, err = parseRanks(ranks); err != nil {
				return err
			}
			cfg.Algorithms = !noAlgorithms
			cfg.DDP = !noDDP
			if smoke { // its sizes, less what the command line sets
				given := cfg
				cfg.Smoke()
				if cmd.Flags().Changed("ddp-steps") {
					cfg.DDPSteps = given.DDPSteps
				}
				if cmd.Flags().Changed("ddp-warmup") {
					cfg.DDPWarmup = given.DDPWarmup
				}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			dir, err := perf.ResultsDir(out)
			if err != nil {
				return err
			}
			if cfg.Dir, err = filepath.Abs(dir); err != nil {
				return err
			}
			cfg.Out = cmd.OutOrStdout()
			mem := dpdk.ProbeMemory()
			if _, err := dpdk.Init(ealArgs(cmd, args, "0,1", mem)); err != nil {
				return err
			}
			defer dpdk.Cleanup()
			res, err := collectives.Run(cfg)
			if err != nil {
				return err
			}
			if err := perf.WriteJSON(filepath.Join(dir, "collectives.json"), res); err != nil {
				return err
			}
			if err := writeFile(filepath.Join(dir, "collectives.md"), func(w io.Writer) { collectives.Markdown(res, w) }); err != nil {
				return err
			}
			plots, err := collectives.Plot(res, dir)
			if err != nil {
				return err
			}
			collectives.Report(res, cfg.Out)
			fmt.Fprintf(cfg.Out, "\nresults in %s (collectives.json, collectives.md, %d plots)\n", dir, len(plots))
			return res.Check()
		},
	}
	f := c.Flags()
	f.StringVar(&ranks, "ranks", "2,4", "job sizes, a job each (2..16 ranks, a demo host per rank)")
	f.BoolVar(&cfg.Quick, "quick", false, "sizes up to 1 MiB, fewer repetitions")
	f.BoolVar(&noAlgorithms, "no-algorithms", false, "skip homa's ring and recursive doubling at every size")
	f.BoolVar(&smoke, "smoke", false, "the smoke size: --quick and 5 DDP steps of a small MLP")
	f.BoolVar(&noDDP, "no-ddp", false, "skip the DDP training step")
	f.BoolVar(&cfg.DDPOnly, "ddp-only", false, "the DDP training step alone (no all_reduce sweep or ping-pong)")
	f.IntVar(&cfg.DDPSteps, "ddp-steps", cfg.DDPSteps, "timed DDP steps per variant (homa, gloo, compute)")
	f.IntVar(&cfg.DDPWarmup, "ddp-warmup", cfg.DDPWarmup, "untimed DDP steps per variant before")
	f.IntVar(&cfg.DDPBatch, "ddp-batch", cfg.DDPBatch, "DDP samples per rank per step")
	f.StringVar(&cfg.Python, "python", cfg.Python, "the Python with torch")
	f.StringVar(&cfg.Root, "root", cfg.Root, "the repository (python/ is taken from there)")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "longest a job may take")
	f.StringVar(&out, "out", "", "results directory (default results/<timestamp>)")
	return c
}

func parseRanks(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--ranks: %q is not a number of ranks", f)
		}
		out = append(out, n)
	}
	return out, nil
}
