package workerrtt

import (
	"fmt"
	"runtime"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/pflag"
)

// Title is the worker-rtt section's title.
const Title = "worker-rtt: what the shared-memory path adds"

func init() {
	perf.Register(perf.Scenario{
		Name:  "worker-rtt",
		Order: 20,
		Use:   "[flags] [-- EAL arguments]",
		Short: "RTT of an RPC issued by a shared-memory worker vs the same RPC from inside the daemon",
		Long: `worker-rtt measures what the shared-memory worker interface adds to a round trip: the
same RPC (one at a time) goes worker → daemon → memif → daemon → worker and back, and
from an application inside the daemon's polling loop to one inside the other host's
loop, alternating in rounds, in the same run. It prints P50/P99/P99.9 per path and the
difference of the medians.`,
		Title:     Title,
		Key:       "worker_rtt",
		Command:   command,
		All:       inAll,
		Goals:     perf.GoalsOf(Goals),
		GoalOrder: 5,
	})
}

// inAll runs worker-rtt as a child process: it runs both hosts and EAL
// in its process.
func inAll(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	args := []string{"perf", "worker-rtt"}
	if o.Smoke {
		args = append(args, "--smoke")
	}
	return perf.ChildOutcome[Result](o, "worker-rtt", args)
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	f := perf.BindFlags(fs, "one round of 2,000 RPCs per path after 200 of warm-up", false)
	fs.IntVar(&cfg.Size, "size", cfg.Size, "message bytes (request and response)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds; each runs both paths")
	fs.IntVar(&cfg.PerRound, "rpcs", cfg.PerRound, "RPCs per path per round")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "RPCs per path before measuring")
	return func(inv perf.Invocation) error {
		if runtime.NumCPU() < 2 {
			return fmt.Errorf("worker-rtt needs two CPUs (the polling loop and the workers)")
		}
		err := perf.SmokeOver(f, &cfg, func() Config {
			c := DefaultConfig()
			c.Rounds, c.PerRound, c.Warmup = 1, 2000, 200
			return c
		})
		if err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		dir, err := f.Dir()
		if err != nil {
			return err
		}
		cfg.Out = inv.Out
		if _, err := dpdk.Init(dpdk.ArgsOr(inv.EAL, "0,1", dpdk.ProbeMemory())); err != nil {
			return err
		}
		defer dpdk.Cleanup()
		lcore.SetGOMAXPROCS(1)
		res, err := Run(cfg)
		if err != nil {
			return err
		}
		return res.Report().Write(inv.Out, dir)
	}
}
