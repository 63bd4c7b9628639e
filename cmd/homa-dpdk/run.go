package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runFlags are the command-line flags of run, bound to config keys.
func runFlags(fs *pflag.FlagSet) map[string]*pflag.Flag {
	fs.String("capture", "", "write a pcapng capture of both directions to this file")
	fs.Int("capture-last", 0, "keep only the last N packets in the capture")
	fs.Int("capture-snaplen", 0, "bytes kept of each captured packet (default 128: every header; 65535: whole frames)")
	fs.String("metrics", "", "serve Prometheus metrics on this host:port (\"\" keeps the config's)")
	fs.String("log-format", "", "console (colours only on a terminal) or json")
	fs.String("log-level", "", "debug, info, warn or error")
	return map[string]*pflag.Flag{
		"capture.file":    fs.Lookup("capture"),
		"capture.last":    fs.Lookup("capture-last"),
		"capture.snaplen": fs.Lookup("capture-snaplen"),
		"metrics.address": fs.Lookup("metrics"),
		"log.format":      fs.Lookup("log-format"),
		"log.level":       fs.Lookup("log-level"),
	}
}

func runCmd() *cobra.Command {
	var file string
	var flags map[string]*pflag.Flag
	c := &cobra.Command{
		Use:   "run --config FILE [flags] [-- EAL arguments]",
		Short: "Run the Homa daemon on DPDK ports",
		Long: `run starts the daemon: it reads the config (file, HOMA_* environment, flags),
brings up EAL (with the arguments after --, or the config's eal list), sets up the
ports, waits for their links and launches one polling loop per port. It answers ARP
and ping, speaks Homa on protocol 146, and stops cleanly on SIGINT or SIGTERM,
during start-up too (the wait for the links included): the log names the phase,
what it made so far is released (its sockets removed), and it exits 0.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// SIGINT and SIGTERM end ctx from main's first instant on
			// (signals.go): a start-up phase (the wait for the links
			// too) stops, as the running daemon does.
			ctx := cmd.Context()
			if file == "" {
				// Lists come only from a file, so no environment or
				// flag can give the ports: say which flag does.
				return daemon.InPhase("config", fmt.Errorf("no port is configured: give --config FILE, a YAML file with the ports (every key is in %s); ports come only from a file, not from HOMA_* variables or flags (homa-dpdk demo runs two hosts without one)", config.ExampleFile))
			}
			given := map[string]*pflag.Flag{}
			for k, f := range flags {
				if f.Changed {
					given[k] = f
				}
			}
			var eal []string // the arguments after --, which replace the config's eal list
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				eal = append([]string{}, args[n:]...)
			}
			spec, err := config.Load(config.Source{File: file, Flags: given, EAL: eal})
			if err != nil {
				return daemon.InPhase("config", err)
			}
			if err := spec.CheckMachine(); err != nil {
				return daemon.InPhase("config", fmt.Errorf("config %s: %w", file, err))
			}
			log := newLogger(spec.Log)
			for _, w := range config.EnvWarnings(os.Environ()) {
				log.Warn().Msg(w)
			}
			d, err := daemon.StartContext(ctx, spec, log, daemon.Options{})
			if errors.Is(err, daemon.ErrStopped) {
				return nil // logged, with its phase: a clean stop, as after start-up
			}
			if err != nil {
				return err
			}
			<-ctx.Done()
			d.Log.Info().Str("signal", signalOf(ctx)).Msg("stopping")
			return d.Stop()
		},
	}
	c.Flags().StringVar(&file, "config", "", "the YAML config file (see config/example.yaml)")
	flags = runFlags(c.Flags())
	return c
}

func newLogger(ls config.LogSpec) zerolog.Logger {
	return daemon.NewLogger(os.Stderr, ls.Format, ls.Level)
}
