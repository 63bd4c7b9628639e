package cluster

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/ns3"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/pflag"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "cluster",
		Order: 110,
		Use:   "[flags]",
		Short: "a 144-host datacenter in simulation, every host running the real engine: W1-W5 and the AI mix, beside DCTCP and TCP on ns-3",
		Long: `cluster simulates the Homa paper's cluster in simulated time: 9 racks of 16 hosts behind
top-of-rack switches, 4 core switches, 10 Gb/s host links and 40 Gb/s ToR-core links
(full bisection), 0.25 µs per switch, packet spraying over the cores, 0.5 µs of
software turnaround per packet at hosts. Every host runs the real engine.Endpoint.
Messages follow the workloads W1-W5 with Poisson arrivals to uniformly random other
hosts at the offered load (of the host links, in wire bytes). For each workload, load
and variant it reports the P50/P99 slowdown by message size (completion time over the
time on an idle network, from link math), the peak switch queues and offered against
delivered bandwidth, and writes cluster.json. No DPDK: it runs anywhere.

The AI mix (--workload AI) is a training cluster's traffic: groups of 8 hosts across
racks running ring all-reduces (512 KiB chunks) and all-to-all rounds (64 KiB to 4 MiB per
pair), W4 in the background and W1's small RPCs; it reports the all-reduce steps and the
all-to-all rounds over their ideal too.

Variants: homa, homa-1prio (one network priority), basic (grants in arrival order, no
SRPT, one priority), homa-no-incast (homa-dpdk's incast allowance off) on the engine;
dctcp and tcp (Cubic) on ns-3, the same messages on the same fabric (ns3/, built by the
set-up; --ns3-arg passes its flags).`,
		Command: command,
	})
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	wls, lds, variants := []string{"W1", "W2", "W3", "W4", "W5", workload.AI}, []float64{0.5, 0.8, 0.9}, []string{"all"}
	var hosts int
	var simMs int64
	f := perf.BindFlags(fs, "16 hosts in 4 racks, 3000 messages or 20 ms of arrivals per run, whichever is less (the AI mix: 5 ms)", false)
	fs.IntVar(&hosts, "hosts", cfg.Hosts(), "hosts (a multiple of --hosts-per-rack; racks = hosts / hosts-per-rack)")
	fs.IntVar(&cfg.HostsPerRack, "hosts-per-rack", cfg.HostsPerRack, "hosts behind each top-of-rack switch")
	fs.IntVar(&cfg.Cores, "cores", cfg.Cores, "core switches")
	f.Names(&wls, "workload", "workloads, comma-separated", strings.ToUpper)
	f.Loads(&lds, "load", "offered loads of the host links, comma-separated (0.8 or 80)")
	f.Names(&variants, "variant", "variants, comma-separated, or all: "+variantNames(), nil)
	fs.IntVar(&cfg.Messages, "messages", 0, "messages offered per run (0: those of --sim-ms of arrivals, at most --max-messages)")
	fs.Int64Var(&simMs, "sim-ms", cfg.Duration/1e6, "ms of arrivals per run, when --messages is 0")
	fs.IntVar(&cfg.MaxMessages, "max-messages", cfg.MaxMessages, "the most messages --sim-ms may offer")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the arrivals")
	fs.Int64Var(&cfg.HostDelay, "turnaround", cfg.HostDelay, "ns of software turnaround per packet sent at hosts")
	fs.Int64Var(&cfg.RecvDelay, "recv-turnaround", cfg.RecvDelay, "ns of software turnaround per packet received at hosts")
	fs.Int64Var(&cfg.NICDelay, "nic-delay", cfg.NICDelay, "ns a packet spends in the NIC before the wire")
	fs.Int64Var(&cfg.PropDelay, "prop-delay", cfg.PropDelay, "ns of propagation per link")
	fs.BoolVar(&cfg.NICFIFO, "nic-fifo", false, "one FIFO queue in every host NIC instead of a strict-priority queue per priority (homa-dpdk's TX queue per priority)")
	fs.BoolVar(&cfg.ScheduledDataQueue, "sched-queue", cfg.ScheduledDataQueue, "hosts send scheduled DATA from their lowest NIC queue, in the sender's SRPT order (engine ScheduledDataQueue; =false: every priority its own strict-priority NIC queue)")
	fs.StringVar(&cfg.Cutoffs, "cutoffs", DefaultCutoffRule, "rule of the unscheduled priority cutoffs: "+strings.Join(CutoffRules, ", ")+" (equal unscheduled message bytes per level, as kernel Homa; equal bytes on the wire, headers counted, as the Homa paper's simulator; equal message counts; balanced: the least predicted P99 slowdown by load and delay)")
	fs.Float64Var(&cfg.CutoffSkew, "cutoff-skew", 1, "with --cutoffs bytes, wire or count: each lower unscheduled level's share of the level above it (1: equal shares; below 1: higher levels carry more)")
	fs.IntVar(&cfg.MaxIncoming, "max-incoming", 0, "receivers' bound on granted, unreceived bytes (0: ten times the 10 KB unscheduled bytes, the kernel's ratio)")
	fs.IntVar(&cfg.MaxOvercommit, "max-overcommit", 0, "messages a receiver grants to at once (0: the engine's default, 8)")
	fs.IntVar(&cfg.UnschedLevels, "unsched-levels", 0, "priority levels for unscheduled bytes, 1..7 (0: the workload's share of unscheduled wire bytes of the 8 levels)")
	fs.BoolVar(&cfg.MessagePriorityResends, "message-priority-resends", false, "RESENDs name the message's own priority, not kernel Homa's 7 (engine MessagePriorityResends)")
	fs.BoolVar(&cfg.ECMP, "ecmp", false, "one core per pair of hosts (hash) instead of per-packet spraying")
	fs.IntVar(&cfg.BufferBytes, "buffer", cfg.BufferBytes, "bytes per switch egress port, drop-tail (-1: unlimited)")
	fs.IntVar(&cfg.AI.Group, "ai-group", cfg.AI.Group, "AI mix: hosts per all-reduce ring and all-to-all group")
	fs.IntVar(&cfg.AI.Chunk, "ai-chunk", cfg.AI.Chunk, "AI mix: bytes each host sends per ring step")
	fs.IntVar(&cfg.AI.A2AMin, "ai-a2a-min", cfg.AI.A2AMin, "AI mix: least bytes per pair of an all-to-all round")
	fs.IntVar(&cfg.AI.A2AMax, "ai-a2a-max", cfg.AI.A2AMax, "AI mix: most bytes per pair of an all-to-all round")
	jobs := 1
	fs.IntVar(&jobs, "jobs", jobs, "runs at once (each ns-3 run is one process on one CPU; the engine's runs use one CPU each too)")
	var ns3Path string
	fs.StringVar(&ns3Path, "ns3", "", "the ns-3 program that runs dctcp and tcp (default: "+ns3.Program+" beside this homa-dpdk, or $HOMA_NS3)")
	fs.StringArrayVar(&cfg.NS3Args, "ns3-arg", nil, "a flag for the ns-3 program, e.g. --ns3-arg=--buffer-packets=200 (repeatable; its --help lists them)")
	return func(inv perf.Invocation) error {
		if err := perf.SmokeOver(f, &cfg, SmokeConfig); err != nil {
			return err
		}
		cfg.Duration = simMs * 1e6
		if jobs < 1 {
			return fmt.Errorf("--jobs %d: want 1 or more", jobs)
		}
		if inv.Changed("hosts") {
			if hosts%cfg.HostsPerRack != 0 {
				return fmt.Errorf("--hosts %d: want a multiple of --hosts-per-rack (%d)", hosts, cfg.HostsPerRack)
			}
			cfg.Racks = hosts / cfg.HostsPerRack
		}
		vs := AllVariants()
		if !slices.Equal(variants, []string{"all"}) {
			vs = nil
			for _, v := range variants {
				vs = append(vs, Variant(v))
			}
		}
		var runs []Config // every combination checked before the first (long) run
		for _, w := range wls {
			for _, l := range lds {
				for _, v := range vs {
					c := cfg
					c.Workload, c.Load, c.Variant = w, l, v
					if f.Smoke && !inv.Changed("messages") && !inv.Changed("sim-ms") {
						c = c.SmokeRun()
					}
					if err := c.Validate(); err != nil {
						return err
					}
					runs = append(runs, c)
				}
			}
		}
		dir, err := f.Dir()
		if err != nil {
			return err
		}
		if slices.Contains(vs, DCTCP) || slices.Contains(vs, TCP) {
			if cfg.NS3 = ns3Path; cfg.NS3 == "" {
				self, _ := os.Executable()
				if cfg.NS3, err = ns3.Find(self); err != nil {
					return err
				}
			}
			for i := range runs {
				runs[i].NS3, runs[i].NS3Args, runs[i].NS3Dir = cfg.NS3, cfg.NS3Args, dir
			}
		}
		o := inv.Out
		results, err := runAll(runs, jobs, o, dir)
		if err != nil {
			return err
		}
		if err := results.Report().Write(o, dir); err != nil {
			return err
		}
		for _, r := range results {
			if r.Errors > 0 {
				return fmt.Errorf("%s %s at %.0f%%: %d conservation errors: %v", r.Variant, r.Workload, 100*r.Load, r.Errors, r.ErrorLines)
			}
		}
		return nil
	}
}

// runAll runs every configuration, jobs at a time, and returns their
// results in runs' order; cluster.json in dir holds the finished ones in
// that order after each run ends, so that a stopped matrix keeps them.
func runAll(runs []Config, jobs int, o io.Writer, dir string) (Results, error) {
	var mu sync.Mutex // o, done, firstErr
	done := make(Results, len(runs))
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(runs)) {
		wg.Go(func() {
			for i := range next {
				c := runs[i]
				name := fmt.Sprintf("%s %.0f%% %s", c.Workload, 100*c.Load, c.Variant)
				what := fmt.Sprintf("%d messages", c.Messages)
				if c.Messages == 0 {
					what = fmt.Sprintf("%d ms of arrivals (at most %d messages)", c.Duration/1e6, c.MaxMessages)
				}
				mu.Lock()
				fmt.Fprintf(o, "cluster: %d hosts, %s, %s ...\n", c.Hosts(), name, what)
				mu.Unlock()
				r, err := Run(c, func(ns int64, n, all int) {
					mu.Lock()
					defer mu.Unlock()
					fmt.Fprintf(o, "  [%s] %.1f ms simulated, %d of %d messages delivered\n", name, float64(ns)/1e6, n, all)
				})
				mu.Lock()
				if err != nil {
					firstErr = cmp.Or(firstErr, fmt.Errorf("%s: %w", name, err))
				} else {
					done[i] = r
					fmt.Fprintf(o, "cluster: %s done\n", name)
					Summary(r, o)
					finished := slices.DeleteFunc(slices.Clone(done), func(d *Result) bool { return d == nil })
					if err := perf.WriteJSON(filepath.Join(dir, "cluster.json"), finished); err != nil {
						firstErr = cmp.Or(firstErr, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range runs {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return done, nil
}
