package main

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/spf13/cobra"
)

// versionCmd prints the build: the module version, the VCS commit and its
// date (from Go's build information, or stamped by scripts/lib/build.sh
// where there is no .git, as in the container image), Go's and DPDK's
// versions. `homa-dpdk --version` prints the same line.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build: version, commit, date, Go and DPDK versions",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), daemon.BuildInfo())
		},
	}
}
