package demo

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
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
	Duration   time.Duration // 0: until SIGINT or SIGTERM
	Out        io.Writer
}

// ServeWorkers runs the demo's two hosts on a memif pair with a worker
// socket each, until interrupted or for cfg.Duration. EAL must be up,
// with lcore 1 a worker lcore.
func ServeWorkers(cfg WorkersConfig) error {
	pool, err := dpdk.NewPktMbufPool("demo", 16384, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	defer pool.Free()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	memifDir, err := os.MkdirTemp("", "homa-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(memifDir)
	_, clock, wallOff := host.NewClock()
	pc := host.PairConfig{Name: "demo", Pool: pool, TxQueues: 2, Clock: clock, WallOff: wallOff,
		ARP: 100 * time.Millisecond, MemifSocket: filepath.Join(memifDir, "memif.sock")}
	via := "a net_memif pair"
	if cfg.MemifPeers != "" {
		a, b, ok := strings.Cut(cfg.MemifPeers, ",")
		if !ok || a == "" || b == "" {
			return fmt.Errorf("--memif-peers %q: want two socket paths, SOCK0,SOCK1", cfg.MemifPeers)
		}
		pc.MemifSocket, pc.MemifPeers = "", [2]string{a, b}
		pc.TxQueues = 1 // a forwarder's port pair has one queue each
		via = "memif ports joined through the memif servers at " + cfg.MemifPeers
	}
	hp, err := host.NewPair(pc)
	if err != nil {
		return err
	}
	defer hp.Close()
	hubs, err := ServeOnPair(hp, cfg.Dir, WorkerLimits)
	defer closeHubs(hubs)
	if err != nil {
		return err
	}
	// Busy polling, as a latency-sensitive deployment runs: the loop owns
	// lcore 1 and the workers have the other CPU.
	loop, err := lcore.Launch(1, lcore.Config{Name: "demo-workers", Pass: hp.Pass, Drain: hp.Drain,
		Idle: lcore.Idle{Kind: lcore.BusyPoll}})
	if err != nil {
		return err
	}
	hk := lcore.StartHousekeeping([]*lcore.Loop{loop}, time.Second) // other threads off the loop's CPU
	defer hk.Stop()
	fmt.Fprintf(cfg.Out, "demo: Homa hosts 10.0.0.1 and 10.0.0.2 on %s, one busy-polling loop on lcore 1; workers attach at %s and %s\n",
		via, filepath.Join(cfg.Dir, "10.0.0.1.sock"), filepath.Join(cfg.Dir, "10.0.0.2.sock"))
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
	closeHubs(hubs) // workers detach while the loop runs
	hubs = nil
	if err := loop.Stop(5 * time.Second); err != nil {
		return err
	}
	st := loop.Stats()
	fmt.Fprintf(cfg.Out, "loop: %d passes, longest gap between passes %v\n", st.Passes, st.MaxGap)
	for _, h := range hp.Hosts {
		fmt.Fprintln(cfg.Out, h.Summary())
	}
	return nil
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
