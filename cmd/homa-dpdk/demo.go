package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/demo"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	perfpmd "github.com/homa-dpdk/homa-dpdk/perf/pmd"
	"github.com/spf13/cobra"
)

// demoCmd runs two Homa hosts on virtual devices, with no NIC and no
// config file: the README's first command.
func demoCmd() *cobra.Command {
	cfg := demo.Config{Duration: 10 * time.Second, Concurrency: 8}
	var sizes, workers, memifPeers, link, metrics string
	var seconds float64
	var pmd bool
	var mtu, hosts int
	copierCPU := -1
	c := &cobra.Command{
		Use:   "demo [flags] [-- EAL arguments]",
		Short: "Two Homa hosts on virtual devices exchanging RPCs (no NIC, no config file)",
		Long: `demo runs two Homa hosts, 10.0.0.1 and 10.0.0.2, in this process on two net_ring
ports joined back to back (every TX queue of one feeds the other's RX queue), driven by
one polling loop on lcore 1 — the daemon's own data path: the engine writes frames into
mbufs, each priority goes to its TX queue, ARP resolves the peer. The client keeps a
number of RPCs outstanding, each echoing a message of a size drawn from the mix, and the
demo prints the round-trip time percentiles per size and the throughput. While it
runs, the daemon serves its metrics on --metrics (127.0.0.1:9464 by default, where
homa-dpdk stats reads; "" for none), --workers too; the start line says where.

demo --workers DIR serves shared-memory workers instead: the same two hosts, joined
by a net_memif pair, open worker control sockets DIR/10.0.0.1.sock and
DIR/10.0.0.2.sock and run until interrupted (or for --seconds, when given). Workers
(examples/echo, python/examples) attach there and exchange RPCs through the daemon.
With --hosts N it runs N hosts, 10.0.0.1 to 10.0.0.N, each with its socket, joined
by a learning Ethernet switch over ring ports that the loop runs (host.RingSwitch).

demo --pmd runs the forwarding benchmark (perf pmd), short, instead: our Go polling
loop and dpdk-testpmd on net_null, net_memif and net_ring.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pmd {
				pc := perfpmd.DefaultConfig()
				pc.Measure, pc.Warmup, pc.Trials = 2*time.Second, time.Second, 1
				return perfpmd.RunInProcess(cmd.OutOrStdout(), ealGiven(cmd, args), pc, "")
			}
			var err error
			if cfg.Sizes, err = parseSizes(sizes); err != nil {
				return err
			}
			cfg.Duration = time.Duration(seconds * float64(time.Second))
			cfg.Copier, cfg.CopierCPU = copierCPU >= 0, copierCPU
			cfg.Out = cmd.OutOrStdout()
			if env, ok := os.LookupEnv("HOMA_METRICS_ADDRESS"); ok && !cmd.Flags().Changed("metrics") {
				metrics = env // the environment over the default, the flag over both, as for run
			}
			cfg.Metrics = metrics
			wc := demo.WorkersConfig{Dir: workers, MemifPeers: memifPeers, Link: link, MTU: mtu, Hosts: hosts, Shards: cfg.Shards, Out: cfg.Out,
				Copier: copierCPU >= 0, CopierCPU: copierCPU, Metrics: metrics, Context: cmd.Context()}
			if workers != "" && cmd.Flags().Changed("seconds") {
				wc.Duration = cfg.Duration // otherwise until interrupted
			}
			if workers == "" {
				if err := cfg.Validate(); err != nil {
					return err
				}
			} else if seconds < 0 {
				return fmt.Errorf("--seconds %v: want a positive duration", seconds)
			} else if err := wc.Validate(); err != nil {
				return err
			}
			if ctx := cmd.Context(); workers != "" && ctx.Err() != nil {
				// A SIGINT or SIGTERM already (main catches them from its
				// start): nothing was made yet.
				fmt.Fprintf(cfg.Out, "demo: %v, stopping\n", context.Cause(ctx))
				return nil
			}
			mem := dpdk.ProbeMemory()
			eal := ealArgs(cmd, args, "0,1", mem)
			if ealGiven(cmd, args) == nil && cfg.Shards > 1 {
				eal = shardLcores(eal, cfg.Shards)
			}
			if _, err := dpdk.Init(eal); err != nil {
				return err
			}
			defer dpdk.Cleanup()
			if workers != "" {
				return demo.ServeWorkers(wc)
			}
			return demo.Run(cfg)
		},
	}
	f := c.Flags()
	f.Float64Var(&seconds, "seconds", cfg.Duration.Seconds(), "how long to exchange RPCs")
	f.StringVar(&sizes, "sizes", "100,1000,10000,100000,1000000", "message sizes in bytes, drawn in turn")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "RPCs outstanding at once")
	f.StringVar(&cfg.Capture, "capture", "", "write a pcapng capture of both hosts to this file")
	f.IntVar(&cfg.CaptureLast, "capture-last", 0, "keep only the last N packets in the capture")
	f.IntVar(&cfg.CaptureSnaplen, "capture-snaplen", 128, "bytes kept of each captured packet (128: every header; 65535: whole frames); a capture file stops at 1 GiB")
	f.Float64Var(&cfg.Drop, "drop", 0, "drop this fraction of the packets each host receives (fault injection: RESENDs recover them)")
	f.BoolVar(&pmd, "pmd", false, "run the forwarding benchmark instead")
	f.IntVar(&copierCPU, "copier-cpu", -1, "make each host's receive copies (with --workers: into the workers' pools) on a copier thread pinned to this CPU instead of its polling loop (ports[].copier_cpus); -1: the loop copies")
	f.IntVar(&cfg.Shards, "shards", 1, "run each host as this many shards, shard s of both hosts on EAL lcore s+1 (ports[].lcores); shards past the CPUs share them; with --workers each worker lives on one shard")
	f.IntVar(&cfg.Shards, "lcores", 1, "the old name of --shards")
	f.MarkDeprecated("lcores", "it is now --shards (a count of shards, not a list of lcores)")
	f.StringVar(&metrics, "metrics", defaultMetrics, "serve the daemon's /metrics, /healthz and /readyz on this host:port, where homa-dpdk stats reads by default (metrics.address; HOMA_METRICS_ADDRESS when this flag is not given); \"\" for none")
	f.StringVar(&workers, "workers", "", "serve shared-memory workers on sockets in this directory until interrupted, instead of the demo's RPCs")
	f.StringVar(&link, "link", "", "with --workers: what joins the two hosts, memif (the default: a net_memif pair, each byte copied into and out of its rings) or ring (a net_ring pair: the mbufs change hands, no copy); more than two hosts are always joined by a ring switch")
	f.IntVar(&mtu, "mtu", 1500, "with --workers: both ports' IP MTU, up to 9000 (jumbo frames, on either link; memif's buffers are sized for it)")
	f.IntVar(&hosts, "hosts", 2, "with --workers: how many hosts (10.0.0.1 and on, a worker socket each), up to 16; more than 2 are joined by a ring switch in the loop")
	f.StringVar(&memifPeers, "memif-peers", "", "with --workers: SOCK0,SOCK1 — join the hosts through these memif servers (e.g. dpdk-testpmd forwarding between them) instead of a memif pair")
	return c
}

// defaultMetrics is the demo's metrics endpoint: where homa-dpdk stats
// reads by default.
const defaultMetrics = "127.0.0.1:9464"

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--sizes: %q is not a message size in 1..1000000", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// shardLcores makes eal's lcores (-l) the main lcore 0 and worker lcores
// 1..n, each on a CPU of its own while there are CPUs, then sharing them
// (EAL's --lcores lcore@cpu).
func shardLcores(eal []string, n int) []string {
	var m []string
	for l := range n + 1 {
		m = append(m, fmt.Sprintf("%d@%d", l, l%runtime.NumCPU()))
	}
	out := slices.Clone(eal)
	if i := slices.Index(out, "-l"); i >= 0 && i+1 < len(out) {
		out[i], out[i+1] = "--lcores", strings.Join(m, ",")
	}
	return out
}
