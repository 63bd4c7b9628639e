package slowdown

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/pflag"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "slowdown",
		Order: 90,
		Use:   "[flags]",
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
distorts it, are in docs/perf.md and in every report (slowdown.json's
"method", perf all's report.md).`,
		Title:   Title,
		Command: command,
		All:     inAll,
	})
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	f := perf.BindFlags(fs, "W3 at 50% for 3 s with 2 clients (well under a minute); other flags given override", false)
	f.Names(&cfg.Workloads, "workloads", "workloads, comma-separated: W1..W5", strings.ToUpper)
	f.Loads(&cfg.Loads, "loads", "offered loads of the bottleneck's rate, comma-separated: 50,80 (percent) or 0.5,0.8")
	f.Seconds(&cfg.Period, "seconds", "offered period of each transport x workload x load")
	fs.Var(tcRate{&cfg.RateBps}, "rate", "highest bottleneck rate (tc syntax: 1gbit, 500mbit); W4 and W5 run at it, W1-W3 lower (--rpc-rate)")
	f.Names(&cfg.Transports, "transports", "transports: homa, tcp", strings.ToLower)
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "client hosts (the server is one more)")
	fs.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "worker sessions per Homa client host (arrivals dealt in turn: a Send waits for the daemon)")
	fs.Float64Var(&cfg.RPCRate, "rpc-rate", cfg.RPCRate, "RPC/s at a workload's highest load: its bottleneck rate is what offers this many (at most --rate; 0: --rate for all)")
	fs.IntVar(&cfg.IdleSpin, "idle-spin", cfg.IdleSpin, "the daemons' runtime.idle_spin_passes")
	fs.IntVar(&cfg.IdleMaxSleepUs, "idle-max-sleep", cfg.IdleMaxSleepUs, "the daemons' runtime.idle_max_sleep_us")
	fs.IntVar(&cfg.Reps, "reps", cfg.Reps, "unloaded RPCs per probe size")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the arrivals and sizes")
	return func(inv perf.Invocation) error {
		if os.Geteuid() != 0 {
			return fmt.Errorf("slowdown needs root (network namespaces, tc)")
		}
		for _, p := range []string{"ip", "tc"} {
			if _, err := exec.LookPath(p); err != nil {
				return fmt.Errorf("slowdown needs %s (iproute2)", p)
			}
		}
		if err := perf.SmokeOver(f, &cfg, SmokeConfig); err != nil {
			return err
		}
		dir, err := f.Dir()
		if err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.Bin, cfg.Log = self, inv.Err
		res, err := Run(cfg)
		if res != nil {
			if werr := res.Report().Write(inv.Out, dir); err == nil {
				err = werr
			}
		}
		return err
	}
}

// tcRate is a bottleneck rate flag in tc's syntax (ParseTCRate).
type tcRate struct{ bps *float64 }

func (r tcRate) Set(s string) (err error) { *r.bps, err = ParseTCRate(s); return err }
func (r tcRate) String() string {
	if r.bps == nil {
		return ""
	}
	return strconv.FormatFloat(*r.bps/1e6, 'g', -1, 64) + "mbit"
}
func (r tcRate) Type() string { return "rate" }

// inAll runs `perf slowdown` as a child process (it needs one of its
// own: daemons and namespaces) and makes its report section from its
// DIR/slowdown.json.
func inAll(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	args := []string{"perf", "slowdown"}
	if o.Smoke {
		args = append(args, "--smoke")
	}
	return perf.ChildOutcome[Result](o, "slowdown", args)
}
