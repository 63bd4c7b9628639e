// Command homa-dpdk is the homa-dpdk program: the embedded demo, the perf
// harness, and (later) the daemon.
//
// EAL arguments follow `--` and are passed to DPDK verbatim:
//
//	homa-dpdk perf pmd --device null -- -l 0,1 --no-pci --no-huge -m 512
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "homa-dpdk:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "homa-dpdk",
		Short:         "Homa transport in user space on DPDK",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCmd(), demoCmd(), statsCmd(), perfCmd(), versionCmd())
	return root
}
