// Package pmd is the forwarding benchmark of the perf harness: our
// forwarding loop (dpdk/ and lcore/, reading each packet's Ethernet header
// in Go) against dpdk-testpmd in io mode on the same virtual devices,
// core, burst size, pool and descriptors. pmd.go runs the trials and
// prints the ratios; forward.go is our forwarder, testpmd.go runs
// dpdk-testpmd, peer.go the memif traffic peer (`perf pmd-peer`).
//
// It is the part of the harness that needs DPDK in its own process, and
// so cgo; its result type and report section live in package perf, which
// stays pure Go.
package pmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// Config configures the pmd scenario.
type Config struct {
	Devices  []string      // of "null", "memif", "ring"
	Burst    int           // packets per RX/TX burst
	Measure  time.Duration // measuring time per run
	Warmup   time.Duration // time before measuring starts
	Trials   int           // runs of each forwarder, alternating
	Testpmd  string        // dpdk-testpmd command
	Self     string        // this program, run as the memif traffic peer
	FwdLcore uint          // the forwarding lcore (= CPU), for both forwarders
	PeerCPU  int           // CPU of the memif peer
	Mem      dpdk.Memory   // memory mode of every EAL in the run
	Out      io.Writer     // progress and results
}

// method is the measurement method, printed with the results.
const method = `Both forwarders move packets between two ports of the same virtual device ` +
	`(io forwarding, both directions), on one forwarding core with bursts of the same size, ` +
	`the same mbuf pool (16384 mbufs of 2176 bytes, cache 250) and 1024 descriptors. net_null and net_ring: ` +
	`the forwarding rate is the ports' transmitted packets per second (rte_eth_stats, which is also ` +
	`what testpmd's Tx-pps shows); net_ring starts with one burst per port in flight (--tx-first). ` +
	`net_memif: a peer process of ours on another core sends 64-byte packets into memif id 0 and ` +
	`counts what comes back on id 1; the rate is what the peer receives, so both forwarders are ` +
	`measured by the same counter. Each figure is the median of the per-second rates after warm-up. ` +
	`Trials alternate ours and testpmd; the ratio is the median over trials of ours/testpmd in the ` +
	`same trial (paired, so that the machine's slow drifts cancel), the Mpps figures the medians over trials.`

// DefaultConfig is the benchmark's configuration: 64-byte packets,
// bursts of 32, one forwarding core.
func DefaultConfig() Config {
	return Config{
		Devices:  []string{"null", "memif", "ring"},
		Burst:    32,
		Measure:  5 * time.Second,
		Warmup:   2 * time.Second,
		Trials:   5,
		Testpmd:  "dpdk-testpmd",
		FwdLcore: 1,
		PeerCPU:  0,
		Out:      os.Stdout,
	}
}

// deviceNames maps the short names to DPDK driver names.
var deviceNames = map[string]string{"null": "net_null", "memif": "net_memif", "ring": "net_ring"}

// ParseDevices checks a comma-separated device list ("all" for every one).
func ParseDevices(s string) ([]string, error) {
	if s == "all" || s == "" {
		return []string{"null", "memif", "ring"}, nil
	}
	var out []string
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimPrefix(strings.TrimSpace(d), "net_")
		if _, ok := deviceNames[d]; !ok {
			return nil, fmt.Errorf("unknown device %q: choose from null, memif, ring (or all)", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// Run runs the pmd scenario. EAL must be initialised in this process
// with FwdLcore as a worker lcore.
func Run(cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	res := &Result{Method: method, PacketSize: 64, Burst: cfg.Burst}
	fmt.Fprintf(cfg.Out, "pmd: 64-byte packets, bursts of %d, forwarding on lcore %d (CPU %d), %v per run after %v warm-up, %d trial(s), memory: %s\n",
		cfg.Burst, cfg.FwdLcore, dpdk.LcoreCPU(cfg.FwdLcore), cfg.Measure, cfg.Warmup, cfg.Trials, memDesc(cfg.Mem))
	for _, dev := range cfg.Devices {
		run := DeviceRun{Device: deviceNames[dev]}
		for trial := 1; trial <= cfg.Trials; trial++ {
			o, refusedO, err := cfg.runOurs(dev)
			if err != nil {
				return nil, fmt.Errorf("%s, ours: %w", run.Device, err)
			}
			t, refusedT, err := cfg.runTestpmd(dev)
			if err != nil {
				return nil, fmt.Errorf("%s, testpmd: %w", run.Device, err)
			}
			run.Ours = append(run.Ours, o)
			run.Testpmd = append(run.Testpmd, t)
			if t > 0 {
				run.Ratios = append(run.Ratios, o/t)
			}
			run.PeerTxRefusedOurs += refusedO
			run.PeerTxRefusedTestpmd += refusedT
			fmt.Fprintf(cfg.Out, "  %-9s trial %d: ours %7.2f Mpps   testpmd %7.2f Mpps   ratio %.3f\n", run.Device, trial, o, t, o/max(t, 1e-9))
		}
		run.OursMpps, run.TestpmdMpps = perf.Median(run.Ours), perf.Median(run.Testpmd)
		run.Ratio = perf.Median(run.Ratios)
		if dev == "memif" && (run.PeerTxRefusedOurs == 0 || run.PeerTxRefusedTestpmd == 0) {
			fmt.Fprintf(cfg.Out, "  note: on memif the traffic peer, not the forwarder, set the pace (peer refusals: ours %d, testpmd %d)\n",
				run.PeerTxRefusedOurs, run.PeerTxRefusedTestpmd)
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func (cfg *Config) check() error {
	if len(cfg.Devices) == 0 {
		return fmt.Errorf("pmd: no device chosen")
	}
	if cfg.Burst < 1 || cfg.Burst > 512 {
		return fmt.Errorf("pmd: burst %d out of range 1..512", cfg.Burst)
	}
	if cfg.Trials < 1 {
		return fmt.Errorf("pmd: trials must be at least 1")
	}
	if cfg.Measure < time.Second {
		return fmt.Errorf("pmd: measuring time %v is under the 1 s sampling period", cfg.Measure)
	}
	if !slices.Contains(dpdk.WorkerLcores(), cfg.FwdLcore) {
		return fmt.Errorf("pmd: forwarding lcore %d is not an EAL worker lcore (workers: %v); give EAL -l with at least two lcores", cfg.FwdLcore, dpdk.WorkerLcores())
	}
	return nil
}

func memDesc(m dpdk.Memory) string {
	if m.UseHugepages() {
		return "2 MB hugepages on " + m.HugeDir
	}
	return "--no-huge (" + m.Reason + ")"
}
