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
	"strings"

	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/spf13/cobra"
)

// mainStarted, when set (the tests), is called as soon as main has
// caught the stop signals.
var mainStarted func()

func main() {
	stop := catchStopSignals() // first of all: a signal from here on stops run or demo --workers cleanly
	if mainStarted != nil {
		mainStarted()
	}
	root := rootCmd()
	root.PersistentPreRunE = stop.decide
	err := root.ExecuteContext(stop.ctx)
	stop.giveBack()
	if err != nil {
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
		Version:       daemon.BuildInfo().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(runCmd(), demoCmd(), statsCmd(), perfCmd(), configCmd(), versionCmd(), manCmd())
	return root
}

// flagError adds to an unknown flag's error, for the commands that start
// EAL, that EAL's arguments go after -- (DPDK programs take them first).
func flagError(c *cobra.Command, err error) error {
	if !strings.HasPrefix(err.Error(), "unknown") || !takesEAL(c) {
		return err
	}
	return fmt.Errorf("%w; EAL's arguments go after --, as in: %s [flags] -- -l 0-1 --vdev net_ring0", err, c.CommandPath())
}

// takesEAL reports whether c passes the arguments after -- to EAL: run,
// demo and the perf scenarios.
func takesEAL(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		switch c.Name() {
		case "run", "demo", "perf":
			return true
		}
	}
	return false
}
