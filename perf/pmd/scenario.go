package pmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/spf13/pflag"
)

// Title is the pmd section's title.
const Title = "pmd: forwarding, our Go loop vs dpdk-testpmd"

func init() {
	perf.Register(perf.Scenario{
		Name:  "pmd",
		Order: 10,
		Use:   "[flags] [-- EAL arguments]",
		Short: "Forwarding Mpps of our Go loop vs dpdk-testpmd io mode on virtual devices",
		Long: `pmd forwards 64-byte packets between two ports of a virtual device with our
dpdk/ + lcore/ loop (reading each Ethernet header in Go), then with dpdk-testpmd in
io mode on the same devices, core, burst size and pool, and prints both rates and
their ratio. Devices: null (net_null), memif (net_memif, with a traffic peer process),
ring (net_ring). The report's last note is the ratio ours/testpmd per device.`,
		Title:   Title,
		Key:     "pmd",
		Command: command,
		All:     inAll,
	})
	perf.Register(perf.Scenario{
		Name:    "pmd-peer",
		Order:   11,
		Use:     "--socket PATH [-- EAL arguments]",
		Short:   "The memif traffic peer of the pmd scenario (run by pmd itself)",
		Hidden:  true,
		Command: peerCommand,
	})
}

// inAll runs pmd short, as a child process: it brings EAL up in its
// process.
func inAll(o perf.Options, _ map[string]any) (perf.Outcome, error) {
	args := []string{"perf", "pmd", "--seconds", "2", "--warmup", "1", "--trials", "3"}
	if o.Smoke {
		args = []string{"perf", "pmd", "--smoke"}
	}
	return perf.ChildOutcome[Result](o, "pmd", args)
}

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	cfg := DefaultConfig()
	var devices string
	f := perf.BindFlags(fs, "one trial of 1 s after 1 s of warm-up", false)
	fs.StringVar(&devices, "device", "all", "devices: null, memif, ring, comma-separated, or all")
	fs.IntVar(&cfg.Burst, "burst", cfg.Burst, "packets per burst")
	f.Seconds(&cfg.Measure, "seconds", "measuring time per run (whole seconds)")
	f.Seconds(&cfg.Warmup, "warmup", "warm-up time before measuring, seconds")
	fs.IntVar(&cfg.Trials, "trials", cfg.Trials, "runs of each forwarder, alternating; the median is reported")
	fs.StringVar(&cfg.Testpmd, "testpmd", cfg.Testpmd, "the dpdk-testpmd program")
	fs.UintVar(&cfg.FwdLcore, "fwd-lcore", cfg.FwdLcore, "the forwarding lcore (and CPU) of both forwarders")
	return func(inv perf.Invocation) error {
		err := perf.SmokeOver(f, &cfg, func() Config {
			c := DefaultConfig()
			c.Measure, c.Warmup, c.Trials = time.Second, time.Second, 1
			return c
		})
		if err != nil {
			return err
		}
		if cfg.Devices, err = ParseDevices(devices); err != nil {
			return err
		}
		dir, err := f.Dir()
		if err != nil {
			return err
		}
		return RunInProcess(inv.Out, inv.EAL, cfg, filepath.Join(dir, "pmd.json"))
	}
}

// RunInProcess brings EAL up in this process (eal, or the defaults for
// virtual devices when nil), runs pmd as cfg says, prints its report to
// out and writes its files (pmd.json) beside jsonPath ("": none).
func RunInProcess(out io.Writer, eal []string, cfg Config, jsonPath string) error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("pmd needs two CPUs (a forwarding core and one for the rest); this machine has %d", runtime.NumCPU())
	}
	cfg.Mem = dpdk.ProbeMemory()
	cfg.Out = out
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Self = self
	cfg.PeerCPU = 0
	if cfg.FwdLcore == 0 {
		cfg.PeerCPU = 1
	}
	lcores := fmt.Sprintf("%d,%d", cfg.PeerCPU, cfg.FwdLcore)
	if _, err := dpdk.Init(dpdk.ArgsOr(eal, lcores, cfg.Mem)); err != nil {
		return err
	}
	defer dpdk.Cleanup()
	lcore.SetGOMAXPROCS(1)
	res, err := Run(cfg)
	if err != nil {
		return err
	}
	if jsonPath == "" {
		res.Report().Text(out)
		return nil
	}
	return res.Report().Write(out, filepath.Dir(jsonPath))
}

func peerCommand(fs *pflag.FlagSet) func(perf.Invocation) error {
	var sock string
	var burst, cpu int
	fs.StringVar(&sock, "socket", "", "the forwarder's memif socket")
	fs.IntVar(&burst, "burst", 32, "packets per burst")
	fs.IntVar(&cpu, "cpu", 0, "CPU of the sending loop")
	return func(inv perf.Invocation) error {
		if sock == "" {
			return fmt.Errorf("--socket is required")
		}
		mem := dpdk.ProbeMemory()
		if _, err := dpdk.Init(dpdk.ArgsOr(inv.EAL, strconv.Itoa(cpu), mem)); err != nil {
			return err
		}
		defer dpdk.Cleanup()
		return RunMemifPeer(sock, burst, cpu, os.Stdout, os.Stdin)
	}
}
