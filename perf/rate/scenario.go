package rate

import (
	"github.com/homa-dpdk/homa-dpdk/perf"
)

func init() {
	perf.Register(perf.Scenario{
		Name:  "rate",
		Order: 50,
		Use:   "[--smoke] [--out DIR] [--no-veth]",
		Short: "Small RPCs per second and CPU per million RPCs, Homa workers on memif and on ring vs kernel TCP; the daemon's memory with 10,000 outstanding",
		Long: `rate measures 100-byte RPCs per second with 256 outstanding: 4 Homa workers (goroutines on
one CPU, each with a client session on one of the daemon's hosts and a server session,
the echo, on the other) keeping 64 RPCs outstanding each through the daemon (run as a
child process: demo --workers), with its hosts on a net_memif pair (homa-memif) and on a
net_ring pair (homa-ring), then kernel TCP with 256 connections, one RPC outstanding on
each, to a goroutine-per-connection server on loopback and across a veth pair. Each
transport warms up for 1 s and is measured for 5 s (--smoke: 0.2 s and 0.5 s). It prints
RPCs/s, CPU seconds per million RPCs (the harness's workers or TCP ends, plus the
daemon) and the ratios Homa/TCP. Then, on each link, the workers hold 10,000 RPCs
outstanding at once (the server workers answer none until all have arrived): first
with the demo's config, whose bounds stop them (which bounds, and what they refused, is
printed), then on a second daemon with those bounds raised, where it reads the daemon's
VmRSS and VmHWM before and with the 10,000 held, and the bytes per RPC. It writes
rate.json, rate-rpcs.png and rate-cpu.png into the results directory.`,
		Title: Title,
		Key:   "rate",
		All:   run,
	})
}

// run measures as perf's options say and writes rate.json and the plots
// into o.Dir.
func run(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	cfg := ConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Veth = o.Self, o.Dir, !o.NoVeth
	return perf.Measured(o, "rate", Steps(cfg), func(p *perf.Progress) (*Result, error) {
		cfg.Progress = p
		return Measure(cfg)
	})
}
