package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/suite"
	"github.com/spf13/cobra"
)

// The perf scenarios that write a results directory: rtt, throughput,
// rate, floor, starts, cost, testpmd-path and all (perf/suite runs them).

func perfScenarioCmds() []*cobra.Command {
	return []*cobra.Command{perfRTTCmd(), perfThroughputCmd(), perfRateCmd(), perfFloorCmd(), perfStartsCmd(), perfCostCmd(), perfTestpmdPathCmd(), perfAllCmd()}
}

type scenarioFlags struct {
	smoke  bool
	out    string
	noVeth bool
}

func (f *scenarioFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.smoke, "smoke", false, "tiny counts and durations (CI runs this once)")
	c.Flags().StringVar(&f.out, "out", "", "results directory (default results/<timestamp>)")
	c.Flags().BoolVar(&f.noVeth, "no-veth", false, "skip kernel TCP across a veth pair between network namespaces")
}

func scenarioPrereqs() (string, error) {
	if runtime.NumCPU() < 2 {
		return "", fmt.Errorf("the scenario needs two CPUs (the daemon's polling loop and the workers); this machine has %d", runtime.NumCPU())
	}
	return os.Executable()
}

// scenarioRunE is a scenario command's body: prerequisites, the results
// directory, run, and where the results are.
func scenarioRunE(f *scenarioFlags, run func(o suite.Options) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		self, err := scenarioPrereqs()
		if err != nil {
			return err
		}
		dir, err := perf.ResultsDir(f.out)
		if err != nil {
			return err
		}
		o := suite.Options{Self: self, Dir: dir, Smoke: f.smoke, NoVeth: f.noVeth, Out: cmd.OutOrStdout()}
		if err := run(o); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "results in %s\n", dir)
		return nil
	}
}

func perfRTTCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "rtt [--smoke] [--out DIR]",
		Short: "Unloaded RTT of Homa workers (100 B to 64 MB) on memif and on ring vs kernel TCP over loopback and veth",
		Long: `rtt measures the unloaded round trip of 100 B, 1 KB, 10 KB, 100 KB, 1 MB, 8 MB and 64 MB
messages (MB: 10^6 bytes; --smoke stops at 1 MB) issued by shared-memory workers
through the daemon (two Homa hosts, run as a child process: demo --workers, whose
config takes messages up to 64 MiB between them), once with the hosts on a net_memif
pair (homa-memif: each byte copied into and out of its rings) and once on a net_ring
pair (homa-ring: the mbufs change hands, no copy in the link), then of the same
request/response over kernel TCP (TCP_NODELAY) on loopback and across a veth pair
between two network namespaces, in the same run. Each size gets up to 20,000 round
trips or 5 s (at least 10), after a warm-up of up to 1,000 (for at most 1.25 s
after the first 3). It prints P50 and P99 per size and the ratios TCP/Homa for each Homa
series, and writes rtt.json and rtt.png into the results directory.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, _, err := suite.RTT(o)
			return err
		}),
	}
	f.add(c)
	return c
}

func perfTestpmdPathCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "testpmd-path [--smoke] [--out DIR]",
		Short: "rtt and throughput with dpdk-testpmd forwarding between the two Homa hosts",
		Long: `testpmd-path runs rtt and throughput with the daemon's two hosts joined through
dpdk-testpmd (io forwarding between two memif ports) instead of directly, so that a
third-party DPDK forwarder sits in the path (Homa on memif alone: homa-memif); kernel
TCP is measured beside it as in rtt and throughput. Results go to DIR/testpmd-path/.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, _, _, err := suite.TestpmdPath(o)
			return err
		}),
	}
	f.add(c)
	return c
}

func perfThroughputCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "throughput [--smoke] [--out DIR]",
		Short: "Gbps and CPU per GB of a Homa worker pair streaming 1, 8 and 64 MB messages, on memif and on ring, vs kernel TCP",
		Long: `throughput streams messages of 1 MB (4 outstanding), 8 MB (4) and 64 MB (2: what the
demo's worker regions hold), each with 1-byte replies and for 10 s, from a client worker
to a server worker through the daemon (run as a child process: demo --workers), with
its hosts on a net_memif pair (homa-memif) and then on a net_ring pair (homa-ring), then
over kernel TCP on loopback and across a veth pair (--smoke: 1 MB alone, 1 s), and
prints per size Gbps of payload and CPU seconds per GB (harness and daemon processes)
and each Homa run's ratios to TCP's. It writes throughput.json and
throughput-gbps.png, throughput-cpu.png into the results directory.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, _, err := suite.Throughput(o)
			return err
		}),
	}
	f.add(c)
	return c
}

func perfCostCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "cost [--smoke] [--out DIR]",
		Short: "The data path's time per packet event: the engine alone, and the demo pair",
		Long: `cost runs the engine benchmark (two engine endpoints on one goroutine, a link that
copies nothing) and the demo pair (this program's demo as a child: both Homa hosts on a
net_ring pair, one busy-polling loop) for 100 B RPCs and 1 MB echoes, and writes
cost.json into the results directory. Each figure is the core's time per packet event:
one packet sent or received by either side.`,
	}
	c.RunE = scenarioRunE(&f, func(o suite.Options) error {
		res, err := suite.Cost(o)
		if err != nil {
			return err
		}
		for _, t := range res.Section().Tables {
			t.Text(o.Out)
			fmt.Fprintln(o.Out)
		}
		return nil
	})
	f.add(c)
	return c
}

func perfRateCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "rate [--smoke] [--out DIR]",
		Short: "Small RPCs per second and CPU per million RPCs, Homa workers on memif and on ring vs kernel TCP; the daemon's memory with 10,000 outstanding",
		Long: `rate measures 100-byte RPCs per second with 256 outstanding: 4 Homa workers (goroutines on
one CPU, each with a client session on one of the daemon's hosts and a server session,
the echo, on the other) keeping 64 RPCs outstanding each through the daemon (run as a
child process: demo --workers), with its hosts on a net_memif pair (homa-memif) and on a
net_ring pair (homa-ring), then kernel TCP with 256 connections, one RPC outstanding on
each, to a goroutine-per-connection server on loopback and across a veth pair. Each
transport warms up for 1 s and is measured for 5 s (--smoke: 0.2 s and 0.5 s). It prints
RPCs/s, CPU seconds per million RPCs (the harness's workers or TCP ends, plus the
daemon) and the ratios Homa/TCP. Then, on each link, the workers hold 10,000 RPCs
outstanding at once (the server workers answer none until all have arrived): first
with the demo's config, whose bounds stop them (which bounds, and what they refused, is
printed), then on a second daemon with those bounds raised, where it reads the daemon's
VmRSS and VmHWM before and with the 10,000 held, and the bytes per RPC. It writes
rate.json, rate-rpcs.png and rate-cpu.png into the results directory.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, _, err := suite.Rate(o)
			return err
		}),
	}
	f.add(c)
	return c
}

func perfFloorCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "floor [--smoke] [--out DIR]",
		Short: "The memif link's own rate and copy cost (dpdk-testpmd txonly to rxonly, 1514- and 9014-byte frames) beside Homa on memif",
		Long: `floor measures what one net_memif link costs with nothing else in it: a dpdk-testpmd in txonly
mode on a memif server port sends frames as fast as the ring takes them, a second one in
rxonly mode on the client port receives and frees them, so each byte is copied twice, as
on Homa's memif link. It measures the frames of MTU 1500 (1514 bytes, bsize 2048) and
of MTU 9000 (9014 bytes, bsize 9216) in every trial (3 trials, 5 s each after 2 s of
warm-up; --smoke: 1 trial of 1 s): Gbps of frames, both processes' CPU seconds per
GB, and testpmd's busy ns per frame of each side. Then it streams Homa messages on
memif at MTU 1500 and 9000 (demo --workers --link memif --mtu M; 1, 8 and 64 MB, as
throughput; --smoke 1 MB) and prints each homa-memif run's Gbps and CPU per GB over the
floor at its MTU, the floor counted in Homa payload. It writes floor.json into the
results directory. perf all runs it after throughput, whose homa-memif runs are the
MTU 1500 ones.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, err := suite.Floor(o, nil, []int{1500, 9000})
			return err
		}),
	}
	f.add(c)
	return c
}

func perfStartsCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "starts [--smoke] [--out DIR]",
		Short: "Ten fresh daemons per link: their first 100 RPCs against their steady P50, and the spread of their 1 MB P50s",
		Long: `starts starts the daemon that rtt starts (demo --workers, a child process) ten times on
the ring link and ten on memif, the links taking turns, and measures each fresh daemon:
the RTT of its first 100 RPCs of 100 B one by one, the steady P50 of 100 B after 5,000
more, then the P50 of up to 1,000 1 MB round trips. It judges two goals: no bimodal
starts (per link, the largest 1 MB P50 within 15 % of the smallest) and no warm-up
penalty (in every start, the P50 of the first 100 within 1.5x of the steady P50), and
keeps the evidence of each start: the page faults of the daemon and of the harness in
each phase and during each first RPC, and how both map the worker regions (hugepages
or not). --smoke: two starts on the ring link, short phases. It writes starts.json,
starts-first.png and starts-large.png into the results directory.`,
		RunE: scenarioRunE(&f, func(o suite.Options) error {
			_, _, err := suite.Starts(o)
			return err
		}),
	}
	f.add(c)
	return c
}

func perfAllCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "all [--smoke] [--out DIR]",
		Short: "Every scenario (pmd, worker-rtt, rtt, throughput, rate, floor, starts, cost, slowdown, testpmd-path), then one markdown report and one JSON",
		Long: `all runs pmd (short) and worker-rtt, each as a child process of this program writing its
JSON, then rtt, throughput and rate, then floor (the memif link alone in dpdk-testpmd, beside
throughput's homa-memif runs and Homa on memif at MTU 9000), then starts (ten fresh daemons per link), then cost (the engine benchmark and
the demo pair), then slowdown (a child process: its daemons and
namespaces) and testpmd-path (rtt and throughput through dpdk-testpmd, in
testpmd-path/), and writes report.md (every table, plot and each
scenario's method and known distortions) and all.json into the results directory. A
scenario that fails is reported as failed and the others still run; the command then
exits with an error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := scenarioPrereqs()
			if err != nil {
				return err
			}
			dir, err := perf.ResultsDir(f.out)
			if err != nil {
				return err
			}
			return suite.All(suite.Options{Self: self, Dir: dir, Smoke: f.smoke, NoVeth: f.noVeth, Out: cmd.OutOrStdout()})
		},
	}
	f.add(c)
	return c
}
