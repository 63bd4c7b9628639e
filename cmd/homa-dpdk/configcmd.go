package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
environment), validates every key (the polling lcores and copier CPUs against the
eal list's lcores and the CPUs it runs them on), and checks what it names on this
machine that run would otherwise find wanting only after EAL is up (the copier
CPUs exist here, capture.file is writable). It prints a warning for each HOMA_*
variable that looks misspelt (it is ignored), every problem and exits 1, or a
summary and exits 0. The devices themselves are checked by EAL at run time.`,
		Args: oneFile("the config file to check"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, w := range config.EnvWarnings(os.Environ()) {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			spec, err := config.Load(config.Source{File: args[0]})
			if err != nil {
				return err
			}
			if err := errors.Join(spec.CheckMachine(), daemon.Preflight(spec)); err != nil {
				return fmt.Errorf("config %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "config %s: valid; %d port(s):\n", args[0], len(spec.Ports))
			folded := false // a port's lcores came from the top-level list
			for i, p := range spec.Ports {
				workers := ""
				if p.WorkersSocket != "" {
					workers = ", workers on " + p.WorkersSocket
				}
				lcores := fmt.Sprintf("lcores %v", p.Lcores)
				if len(p.Lcores) > 1 {
					lcores = fmt.Sprintf("%d shards on lcores %v", len(p.Lcores), p.Lcores)
				}
				folded = folded || strings.HasPrefix(spec.LcoresKey(i), "lcores[")
				fmt.Fprintf(out, "  ports[%d]: %s, %s, mtu %d, %s%s\n", i, p.Device, p.Address, p.MTU, lcores, workers)
			}
			if folded {
				fmt.Fprintln(out, "  (lcores[i] is shorthand for ports[i].lcores: [lcore], the one place each port's lcores are kept)")
			}
			if len(spec.EAL) > 0 {
				fmt.Fprintf(out, "  eal: %q\n", spec.EAL)
			}
			return nil
		},
	})
	return c
}

// oneFile accepts exactly one argument, FILE (what it is: what), and
// otherwise says what is wrong with the command's usage line (the root
// silences cobra's own usage print).
func oneFile(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 1:
			return nil
		case 0:
			return fmt.Errorf("%s: missing FILE, %s\nusage: %s", nameOf(cmd), what, cmd.UseLine())
		}
		return fmt.Errorf("%s: takes one FILE, got %d arguments\nusage: %s", nameOf(cmd), len(args), cmd.UseLine())
	}
}

// nameOf is cmd's path without the program's name: "config check".
func nameOf(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
