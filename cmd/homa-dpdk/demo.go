package main

import (
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/cobra"
)

// demoCmd is the embedded default: until the Homa daemon exists, it is the
// forwarding comparison on every virtual device, short.
func demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo [-- EAL arguments]",
		Short: "Run the embedded demo on virtual devices (no NIC, no config file)",
		Long: `demo runs the forwarding benchmark on net_null, net_memif and net_ring, with our
Go polling loop and dpdk-testpmd one after the other, for a few seconds each.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := perf.DefaultPMDConfig()
			cfg.Measure = 2 * time.Second
			cfg.Warmup = time.Second
			cfg.Trials = 1
			return runPMD(cmd, args, cfg, "")
		},
	}
}
