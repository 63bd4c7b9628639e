package demo

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// WorkerLimits are the regions of demo workers: 16 MB of arena and 16 MB
// of receive pool each (a few 1 MB messages in flight).
var WorkerLimits = hub.Config{MaxOutstanding: 1024, Params: shm.Params{
	SQEntries: 1024, CQEntries: 1024, ArenaSize: 16 << 20, PoolPages: 256}}

// WorkersConfig configures ServeWorkers.
type WorkersConfig struct {
	Dir string // the worker sockets: Dir/10.0.0.1.sock and Dir/10.0.0.2.sock
	// MemifPeers, "SOCK0,SOCK1", joins the hosts through these memif
	// servers (e.g. dpdk-testpmd forwarding between them) instead of a
	// memif pair.
	MemifPeers string
	// Link is what joins the two hosts: "memif" (the default, "" too), a
	// net_memif pair, which copies every byte into and out of its shared
	// rings; or "ring", a net_ring pair, which passes the mbufs themselves
	// (no copy, as a NIC's DMA), both ends in this process.
	Link string
	// The ring link has no speed of its own: its ports are paced as
	// ringLinkSpeed NICs. net_memif reports 100 Gb/s, which its ports use: both links are paced alike.
	//
	// MTU is both ports' IP MTU (0: 1500), up to 9000 (jumbo frames) on
	// either link. On memif, ethdev refuses more than 1500, which the PMD
	// carries all the same (host.SetupPort), each frame in one buffer of
	// the bsize the devargs give (host.MemifDevargs).
	MTU      int
	Duration time.Duration // 0: until SIGINT or SIGTERM
	Out      io.Writer
}

// Validate checks the configuration's flags before EAL comes up.
func (c WorkersConfig) Validate() error {
	switch {
	case c.Link != "" && c.Link != "memif" && c.Link != "ring":
		return fmt.Errorf("--link %q: want memif or ring", c.Link)
	case c.Link == "ring" && c.MemifPeers != "":
		return fmt.Errorf("--link ring with --memif-peers: the memif peers are the link; leave one out")
	case c.MTU != 0 && (c.MTU < 576 || c.MTU > 9000):
		return fmt.Errorf("--mtu %d: want 576..9000", c.MTU)
	}
	return nil
}

// ringTxQueues is the TX queues of each ring port with --link ring: one
// per priority, all feeding the one ring to the other port.
const ringTxQueues = 8

// ringLinkSpeed is the rate the ring link's ports are paced at (the
// engine's pacer and the TX scheduler's NIC-queue estimate): a 100 Gb/s
// NIC, as an ML cluster's hosts have. The ring itself is as fast as the
// CPU that moves the mbufs.
const ringLinkSpeed = "100G"

// workersYAML is the template of ServeWorkers' daemon config.
//
//go:embed workers.yaml
var workersYAML string

// ServeWorkers runs the demo's two hosts, through the daemon's phases,
// on a memif pair with a worker socket each, until interrupted or for
// cfg.Duration. EAL must be up, with lcore 1 a worker lcore.
func ServeWorkers(cfg WorkersConfig) error {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	memifDir, err := os.MkdirTemp("", "homa-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(memifDir)
	sock := filepath.Join(memifDir, "memif.sock")
	if err := cfg.Validate(); err != nil {
		return err
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = 1500
	}
	// memif's buffers hold a whole frame of the MTU (host.MemifBufferSize).
	devs := [2]string{"net_memif_demo0," + host.MemifDevargs("server", sock, mtu), "net_memif_demo1," + host.MemifDevargs("client", sock, mtu)}
	txq, via, speed := 2, "a net_memif pair", "auto"
	if cfg.Link == "ring" {
		ports, rings, err := host.NewRingPorts(ringName, ringTxQueues)
		defer host.CloseRingPorts(ports, rings)
		if err != nil {
			return err
		}
		devs = [2]string{"net_ring_" + ringName + "0", "net_ring_" + ringName + "1"}
		txq, via, speed = ringTxQueues, "a net_ring pair (no copy in the link, paced as "+ringLinkSpeed+")", ringLinkSpeed
	}
	if cfg.MemifPeers != "" {
		a, b, ok := strings.Cut(cfg.MemifPeers, ",")
		if !ok || a == "" || b == "" {
			return fmt.Errorf("--memif-peers %q: want two socket paths, SOCK0,SOCK1", cfg.MemifPeers)
		}
		for i, s := range []string{a, b} {
			devs[i] = fmt.Sprintf("net_memif_demo%d,%s", i, host.MemifDevargs("client", s, mtu))
		}
		txq = 1 // a forwarder's port pair has one queue each
		via = "memif ports joined through the memif servers at " + cfg.MemifPeers
	}
	socks := [2]string{filepath.Join(dir, "10.0.0.1.sock"), filepath.Join(dir, "10.0.0.2.sock")}
	spec, err := config.Load(config.Source{YAML: fmt.Sprintf(workersYAML, devs[0], devs[1], txq, socks[0], socks[1], mtu, speed)})
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	dm, err := daemon.Start(spec, demoLog(), daemon.Options{SkipEAL: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "demo: Homa hosts 10.0.0.1 and 10.0.0.2 on %s, MTU %d, one busy-polling loop on lcore 1; workers attach at %s and %s\n",
		via, mtu, socks[0], socks[1])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		timeout = time.After(cfg.Duration)
	}
	select {
	case s := <-sig:
		fmt.Fprintf(cfg.Out, "demo: %v, stopping\n", s)
	case <-timeout:
	}
	if err := dm.StopLoops(); err != nil { // workers detach while the loop runs
		return err
	}
	st := dm.Loops()[0].Stats()
	fmt.Fprintf(cfg.Out, "loop: %d passes, longest gap between passes %v\n", st.Passes, st.MaxGap)
	for _, h := range dm.Hosts() {
		fmt.Fprintln(cfg.Out, h.Summary())
	}
	return dm.StopPorts()
}

// ServeOnPair opens a worker socket for each host of a pair, dir/IP.sock,
// and adds its hub to the host's loop (before the loop starts). On error
// the hubs opened so far are returned too: close them.
func ServeOnPair(p *host.Pair, dir string, lim hub.Config) ([]*hub.Hub, error) {
	var hubs []*hub.Hub
	for _, h := range p.Hosts {
		lim.Path = filepath.Join(dir, h.Addr().String()+".sock")
		hb, err := hub.New(h, lim)
		if err != nil {
			return hubs, err
		}
		h.AddApp(hb)
		hubs = append(hubs, hb)
	}
	return hubs, nil
}

func closeHubs(hubs []*hub.Hub) {
	for _, hb := range hubs {
		hb.Close()
	}
}
