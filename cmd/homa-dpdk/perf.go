package main

import (
	"strings"

	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
	"github.com/spf13/cobra"

	_ "github.com/homa-dpdk/homa-dpdk/perf/scenarios" // every scenario in perf's table
)

// perfCmd is `homa-dpdk perf`: a command per scenario of perf's table,
// and all.
func perfCmd() *cobra.Command {
	perf.Build, perf.CPUModel = daemon.BuildInfo().String(), procstat.CPUModel()
	c := &cobra.Command{
		Use:   "perf",
		Short: "Performance scenarios, measured beside a peer in the same run",
	}
	for _, s := range append(perf.Scenarios(), perf.AllScenario()) {
		c.AddCommand(scenarioCmd(s))
	}
	return c
}

// scenarioCmd is the command of scenario s: its usage, help and flags,
// and its body with what the command line gave it.
func scenarioCmd(s perf.Scenario) *cobra.Command {
	c := &cobra.Command{Use: strings.TrimSpace(s.Name + " " + s.Use), Short: s.Short, Long: s.Long, Hidden: s.Hidden}
	command := s.Command
	if command == nil {
		command = perf.DirCommand(s.All)
	}
	run := command(c.Flags())
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return run(perf.Invocation{Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), EAL: ealGiven(cmd, args),
			Changed: cmd.Flags().Changed})
	}
	return c
}

// ealGiven are the EAL arguments given after --, or nil.
func ealGiven(cmd *cobra.Command, args []string) []string {
	if n := cmd.ArgsLenAtDash(); n >= 0 {
		return args[n:]
	}
	return nil
}

// ealArgs returns the user's EAL arguments (after --) or the defaults for
// virtual devices on the given lcores.
func ealArgs(cmd *cobra.Command, args []string, lcores string, mem dpdk.Memory) []string {
	return dpdk.ArgsOr(ealGiven(cmd, args), lcores, mem)
}
