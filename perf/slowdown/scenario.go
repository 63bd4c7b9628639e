package slowdown

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	var workloads, loads, rate, transports string
	var seconds float64
	var smoke bool
	cfg := DefaultConfig()
	d := DefaultConfig()
	fs.StringVar(&workloads, "workloads", strings.Join(d.Workloads, ","), "workloads, comma-separated: W1..W5")
	fs.StringVar(&loads, "loads", "50,80", "offered loads in percent of the bottleneck's rate, comma-separated")
	fs.Float64Var(&seconds, "seconds", d.Period.Seconds(), "offered period of each transport x workload x load")
	fs.StringVar(&rate, "rate", "200mbit", "highest bottleneck rate (tc syntax: 1gbit, 500mbit); W4 and W5 run at it, W1-W3 lower (--rpc-rate)")
	fs.StringVar(&transports, "transports", "homa,tcp", "transports: homa, tcp")
	fs.IntVar(&cfg.Clients, "clients", d.Clients, "client hosts (the server is one more)")
	fs.IntVar(&cfg.Sessions, "sessions", d.Sessions, "worker sessions per Homa client host (arrivals dealt in turn: a Send waits for the daemon)")
	fs.Float64Var(&cfg.RPCRate, "rpc-rate", d.RPCRate, "RPC/s at a workload's highest load: its bottleneck rate is what offers this many (at most --rate; 0: --rate for all)")
	fs.IntVar(&cfg.IdleSpin, "idle-spin", d.IdleSpin, "the daemons' runtime.idle_spin_passes")
	fs.IntVar(&cfg.IdleMaxSleepUs, "idle-max-sleep", d.IdleMaxSleepUs, "the daemons' runtime.idle_max_sleep_us")
	fs.IntVar(&cfg.Reps, "reps", d.Reps, "unloaded RPCs per probe size")
	fs.Uint64Var(&cfg.Seed, "seed", d.Seed, "seed of the arrivals and sizes")
	fs.StringVar(&cfg.Out, "out", "", "results directory for slowdown.json and the plots (default results/<timestamp>)")
	fs.BoolVar(&smoke, "smoke", false, "W3 at 50% for 3 s with 2 clients (well under a minute); other flags given override")
	return func(inv perf.Invocation) error {
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
			s := SmokeConfig()
			s.Out = cfg.Out
			cfg = s
		}
		if inv.Changed("workloads") || !smoke {
			cfg.Workloads = strings.Split(strings.ToUpper(workloads), ",")
		}
		if inv.Changed("loads") || !smoke {
			cfg.Loads = nil
			for _, l := range strings.Split(loads, ",") {
				v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(l), "%"), 64)
				if err != nil || v <= 0 || v >= 100 {
					return fmt.Errorf("--loads %q: want percentages in (0,100), e.g. 50,80", loads)
				}
				cfg.Loads = append(cfg.Loads, v/100)
			}
		}
		if inv.Changed("seconds") || !smoke {
			cfg.Period = time.Duration(seconds * float64(time.Second))
		}
		if inv.Changed("rate") || !smoke {
			r, err := ParseTCRate(rate)
			if err != nil {
				return err
			}
			cfg.RateBps = r
		}
		if inv.Changed("transports") || !smoke {
			cfg.Transports = strings.Split(strings.ToLower(transports), ",")
		}
		if smoke && !inv.Changed("clients") {
			cfg.Clients = SmokeConfig().Clients
		}
		if smoke && !inv.Changed("reps") {
			cfg.Reps = SmokeConfig().Reps
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.Bin = self
		cfg.Log = inv.Err
		res, err := Run(cfg)
		if res != nil {
			Print(inv.Out, res)
		}
		return err
	}
}

// Title is the slowdown section's title.
const Title = "slowdown: Homa daemons vs kernel TCP through a tc bottleneck (W1-W5)"

// inAll runs `perf slowdown` as a child process (it needs one of its
// own: daemons and namespaces) and makes its report section from its
// table and plots; its JSON is DIR/slowdown.json.
func inAll(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	args := []string{"perf", "slowdown"}
	if o.Smoke {
		args = append(args, "--smoke")
	}
	sec := perf.Section{Name: "slowdown", Title: Title, Method: Method}
	logPath, err := perf.RunChild(o, "slowdown", args)
	if err != nil {
		return perf.Outcome{Sections: []perf.Section{sec}}, err
	}
	b, _ := os.ReadFile(logPath)
	table := slowdownTable(string(b))
	fmt.Fprintf(o.Out, "slowdown:\n%s", table)
	imgs, _ := filepath.Glob(filepath.Join(o.Dir, "slowdown-*.png"))
	for i := range imgs {
		imgs[i] = filepath.Base(imgs[i])
	}
	sec.Notes = []string{"Results: slowdown.json; the run's own table (end of slowdown.log):", "```\n" + strings.TrimRight(table, "\n") + "\n```"}
	sec.Images = imgs
	return perf.Outcome{Sections: []perf.Section{sec}, Files: "slowdown.json"}, nil
}

// slowdownTable is the table slowdown.Print wrote at the end of log: from
// its "slowdown: " line on, without the plots' file names.
func slowdownTable(log string) string {
	i := strings.LastIndex(log, "\nslowdown: ")
	if i < 0 {
		return perf.LastLines(log, 12)
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(log[i+1:], "\n") {
		if !strings.HasPrefix(l, "plot: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}
