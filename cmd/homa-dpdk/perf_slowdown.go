package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/slowdown"
	"github.com/spf13/cobra"
)

// slowdownCmd is `homa-dpdk perf slowdown`.
func slowdownCmd() *cobra.Command {
	var workloads, loads, rate, transports string
	var seconds float64
	var smoke bool
	cfg := slowdown.DefaultConfig()
	c := &cobra.Command{
		Use:   "slowdown",
		Short: "P50/P99 slowdown vs message size, Homa daemons vs kernel TCP through a tc bottleneck",
		Long: `slowdown is the Homa papers' experiment on one machine: a server and --clients
client hosts in network namespaces on a bridge, the server's downlink limited
by tc htb with 8 strict-priority bands classified by the IPv4 TOS (Homa priority p =
TOS p<<5), at a rate per workload: the one at which its highest load offers --rpc-rate
RPCs per second, at most --rate. Homa runs as one 'homa-dpdk run' daemon per namespace on net_af_packet, with
this process's workers attached over the daemons' unix sockets; then kernel TCP runs the
same open-loop Poisson workload (W1-W5 sizes, 1-byte responses) through the same
bottleneck. Slowdown = RTT / unloaded RTT of that size, measured first in the same run.
Writes slowdown.json and one PNG per workload x load into --out DIR (default
results/<timestamp>). Needs root, iproute2 and tc. The method in full, and what
distorts it, are in the README's perf section and in every report (slowdown.json's
"method", perf all's report.md).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Geteuid() != 0 {
				return fmt.Errorf("slowdown needs root (network namespaces, tc)")
			}
			for _, p := range []string{"ip", "tc"} {
				if _, err := exec.LookPath(p); err != nil {
					return fmt.Errorf("slowdown needs %s (iproute2)", p)
				}
			}
			dir, err := perf.ResultsDir(cfg.Out)
			if err != nil {
				return err
			}
			cfg.Out = dir
			if smoke {
				s := slowdown.SmokeConfig()
				s.Out = cfg.Out
				cfg = s
			}
			f := cmd.Flags()
			if f.Changed("workloads") || !smoke {
				cfg.Workloads = strings.Split(strings.ToUpper(workloads), ",")
			}
			if f.Changed("loads") || !smoke {
				cfg.Loads = nil
				for _, l := range strings.Split(loads, ",") {
					v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(l), "%"), 64)
					if err != nil || v <= 0 || v >= 100 {
						return fmt.Errorf("--loads %q: want percentages in (0,100), e.g. 50,80", loads)
					}
					cfg.Loads = append(cfg.Loads, v/100)
				}
			}
			if f.Changed("seconds") || !smoke {
				cfg.Period = time.Duration(seconds * float64(time.Second))
			}
			if f.Changed("rate") || !smoke {
				r, err := slowdown.ParseTCRate(rate)
				if err != nil {
					return err
				}
				cfg.RateBps = r
			}
			if f.Changed("transports") || !smoke {
				cfg.Transports = strings.Split(strings.ToLower(transports), ",")
			}
			if smoke && !f.Changed("clients") {
				cfg.Clients = slowdown.SmokeConfig().Clients
			}
			if smoke && !f.Changed("reps") {
				cfg.Reps = slowdown.SmokeConfig().Reps
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Bin = self
			cfg.Log = cmd.ErrOrStderr()
			res, err := slowdown.Run(cfg)
			if res != nil {
				slowdown.Print(cmd.OutOrStdout(), res)
			}
			return err
		},
	}
	d := slowdown.DefaultConfig()
	f := c.Flags()
	f.StringVar(&workloads, "workloads", strings.Join(d.Workloads, ","), "workloads, comma-separated: W1..W5")
	f.StringVar(&loads, "loads", "50,80", "offered loads in percent of the bottleneck's rate, comma-separated")
	f.Float64Var(&seconds, "seconds", d.Period.Seconds(), "offered period of each transport x workload x load")
	f.StringVar(&rate, "rate", "200mbit", "highest bottleneck rate (tc syntax: 1gbit, 500mbit); W4 and W5 run at it, W1-W3 lower (--rpc-rate)")
	f.StringVar(&transports, "transports", "homa,tcp", "transports: homa, tcp")
	f.IntVar(&cfg.Clients, "clients", d.Clients, "client hosts (the server is one more)")
	f.IntVar(&cfg.Sessions, "sessions", d.Sessions, "worker sessions per Homa client host (arrivals dealt in turn: a Send waits for the daemon)")
	f.Float64Var(&cfg.RPCRate, "rpc-rate", d.RPCRate, "RPC/s at a workload's highest load: its bottleneck rate is what offers this many (at most --rate; 0: --rate for all)")
	f.IntVar(&cfg.IdleSpin, "idle-spin", d.IdleSpin, "the daemons' runtime.idle_spin_passes")
	f.IntVar(&cfg.IdleMaxSleepUs, "idle-max-sleep", d.IdleMaxSleepUs, "the daemons' runtime.idle_max_sleep_us")
	f.IntVar(&cfg.Reps, "reps", d.Reps, "unloaded RPCs per probe size")
	f.Uint64Var(&cfg.Seed, "seed", d.Seed, "seed of the arrivals and sizes")
	f.StringVar(&cfg.Out, "out", "", "results directory for slowdown.json and the plots (default results/<timestamp>)")
	f.BoolVar(&smoke, "smoke", false, "W3 at 50% for 3 s with 2 clients (well under a minute); other flags given override")
	return c
}
