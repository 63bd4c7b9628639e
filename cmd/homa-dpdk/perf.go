package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/pmd"
	"github.com/homa-dpdk/homa-dpdk/perf/workerrtt"
	"github.com/spf13/cobra"
)

func perfCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "perf",
		Short: "Performance scenarios, measured beside a peer in the same run",
	}
	c.AddCommand(pmdCmd(), pmdPeerCmd(), workerRTTCmd())
	c.AddCommand(perfScenarioCmds()...)
	c.AddCommand(slowdownCmd(), collectivesCmd(), clusterCmd())
	return c
}

// ealArgs returns the user's EAL arguments (after --) or the defaults for
// virtual devices on the given lcores.
func ealArgs(cmd *cobra.Command, args []string, lcores string, mem dpdk.Memory) []string {
	if cmd.ArgsLenAtDash() >= 0 {
		return args[cmd.ArgsLenAtDash():]
	}
	return dpdk.VirtualDeviceArgs(lcores, mem, 1024, "homa"+strconv.Itoa(os.Getpid()))
}

func pmdCmd() *cobra.Command {
	cfg := pmd.DefaultConfig()
	var devices, out string
	var seconds, warmup float64
	c := &cobra.Command{
		Use:   "pmd [flags] [-- EAL arguments]",
		Short: "Forwarding Mpps of our Go loop vs dpdk-testpmd io mode on virtual devices",
		Long: `pmd forwards 64-byte packets between two ports of a virtual device with our
dpdk/ + lcore/ loop (reading each Ethernet header in Go), then with dpdk-testpmd in
io mode on the same devices, core, burst size and pool, and prints both rates and
their ratio. Devices: null (net_null), memif (net_memif, with a traffic peer process),
ring (net_ring). The last line is the ratio ours/testpmd per device.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if cfg.Devices, err = pmd.ParseDevices(devices); err != nil {
				return err
			}
			cfg.Measure = time.Duration(seconds * float64(time.Second))
			cfg.Warmup = time.Duration(warmup * float64(time.Second))
			dir, err := perf.ResultsDir(out)
			if err != nil {
				return err
			}
			if err := runPMD(cmd, args, cfg, filepath.Join(dir, "pmd.json")); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "results in %s\n", dir)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&devices, "device", "all", "devices: null, memif, ring, comma-separated, or all")
	f.IntVar(&cfg.Burst, "burst", cfg.Burst, "packets per burst")
	f.Float64Var(&seconds, "seconds", cfg.Measure.Seconds(), "measuring time per run (whole seconds)")
	f.Float64Var(&warmup, "warmup", cfg.Warmup.Seconds(), "warm-up time before measuring")
	f.IntVar(&cfg.Trials, "trials", cfg.Trials, "runs of each forwarder, alternating; the median is reported")
	f.StringVar(&cfg.Testpmd, "testpmd", cfg.Testpmd, "the dpdk-testpmd program")
	f.UintVar(&cfg.FwdLcore, "fwd-lcore", cfg.FwdLcore, "the forwarding lcore (and CPU) of both forwarders")
	f.StringVar(&out, "out", "", "results directory for pmd.json (default results/<timestamp>)")
	return c
}

func runPMD(cmd *cobra.Command, args []string, cfg pmd.Config, jsonPath string) error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("pmd needs two CPUs (a forwarding core and one for the rest); this machine has %d", runtime.NumCPU())
	}
	cfg.Mem = dpdk.ProbeMemory()
	cfg.Out = cmd.OutOrStdout()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Self = self
	cfg.PeerCPU = 0
	if cfg.FwdLcore == 0 {
		cfg.PeerCPU = 1
	}
	lcores := fmt.Sprintf("%d,%d", cfg.PeerCPU, cfg.FwdLcore)
	if _, err := dpdk.Init(ealArgs(cmd, args, lcores, cfg.Mem)); err != nil {
		return err
	}
	defer dpdk.Cleanup()
	lcore.SetGOMAXPROCS(1)
	res, err := pmd.Run(cfg)
	if err != nil {
		return err
	}
	if jsonPath != "" {
		return res.WriteJSON(jsonPath)
	}
	return nil
}

func pmdPeerCmd() *cobra.Command {
	var sock string
	var burst, cpu int
	c := &cobra.Command{
		Use:    "pmd-peer --socket PATH [-- EAL arguments]",
		Short:  "The memif traffic peer of the pmd scenario (run by pmd itself)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if sock == "" {
				return fmt.Errorf("--socket is required")
			}
			mem := dpdk.ProbeMemory()
			if _, err := dpdk.Init(ealArgs(cmd, args, strconv.Itoa(cpu), mem)); err != nil {
				return err
			}
			defer dpdk.Cleanup()
			return pmd.RunMemifPeer(sock, burst, cpu, os.Stdout, os.Stdin)
		},
	}
	c.Flags().StringVar(&sock, "socket", "", "the forwarder's memif socket")
	c.Flags().IntVar(&burst, "burst", 32, "packets per burst")
	c.Flags().IntVar(&cpu, "cpu", 0, "CPU of the sending loop")
	return c
}

func workerRTTCmd() *cobra.Command {
	cfg := workerrtt.DefaultConfig()
	var out string
	c := &cobra.Command{
		Use:   "worker-rtt [flags] [-- EAL arguments]",
		Short: "RTT of an RPC issued by a shared-memory worker vs the same RPC from inside the daemon",
		Long: `worker-rtt measures what the shared-memory worker interface adds to a round trip: the
same RPC (one at a time) goes worker → daemon → memif → daemon → worker and back, and
from an application inside the daemon's polling loop to one inside the other host's
loop, alternating in rounds, in the same run. It prints P50/P99/P99.9 per path and the
difference of the medians.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runtime.NumCPU() < 2 {
				return fmt.Errorf("worker-rtt needs two CPUs (the polling loop and the workers)")
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			dir, err := perf.ResultsDir(out)
			if err != nil {
				return err
			}
			cfg.Out = cmd.OutOrStdout()
			mem := dpdk.ProbeMemory()
			if _, err := dpdk.Init(ealArgs(cmd, args, "0,1", mem)); err != nil {
				return err
			}
			defer dpdk.Cleanup()
			lcore.SetGOMAXPROCS(1)
			res, err := workerrtt.Run(cfg)
			if err != nil {
				return err
			}
			if err := perf.WriteJSON(filepath.Join(dir, "worker-rtt.json"), res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "results in %s\n", dir)
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.Size, "size", cfg.Size, "message bytes (request and response)")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds; each runs both paths")
	f.IntVar(&cfg.PerRound, "rpcs", cfg.PerRound, "RPCs per path per round")
	f.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "RPCs per path before measuring")
	f.StringVar(&out, "out", "", "results directory for worker-rtt.json (default results/<timestamp>)")
	return c
}
