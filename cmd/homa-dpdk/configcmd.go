package main

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/spf13/cobra"
)

// configCmd groups what can be done with a config without starting
// anything: `config check FILE`.
func configCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Check a daemon config without starting EAL",
	}
	c.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file (with the HOMA_* environment) as run would, without starting EAL or touching a port",
		Long: `check reads FILE as run --config FILE would (defaults, the file, the HOMA_*
environment), validates every key, and checks what it names on this machine that
run would otherwise find wanting only after EAL is up (capture.file writable). It
prints every problem and exits 1, or prints a summary and exits 0. The devices
themselves are checked by EAL at run time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := config.Load(config.Source{File: args[0]})
			if err != nil {
				return err
			}
			if err := daemon.Preflight(spec); err != nil {
				return fmt.Errorf("config %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "config %s: valid; %d port(s):\n", args[0], len(spec.Ports))
			for i, p := range spec.Ports {
				workers := ""
				if p.WorkersSocket != "" {
					workers = ", workers on " + p.WorkersSocket
				}
				fmt.Fprintf(out, "  ports[%d]: %s, %s, mtu %d%s\n", i, p.Device, p.Address, p.MTU, workers)
			}
			if len(spec.EAL) > 0 {
				fmt.Fprintf(out, "  eal: %q\n", spec.EAL)
			}
			return nil
		},
	})
	return c
}
