package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// demoWorkerLimits are the regions of demo workers: 16 MB of arena and
// 16 MB of receive pool each (a few 1 MB messages in flight).
var demoWorkerLimits = workerLimits{maxOutstanding: 1024, params: shm.Params{
	SQEntries: 1024, CQEntries: 1024, ArenaSize: 16 << 20, PoolPages: 256}}

// serveDemoWorkers runs the demo's two hosts on a memif pair with a
// worker socket each, until interrupted or for cfg.duration.
func serveDemoWorkers(cfg demoConfig) error {
	pool, err := dpdk.NewPktMbufPool("demo", 16384, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	defer pool.Free()
	if err := os.MkdirAll(cfg.workers, 0o755); err != nil {
		return err
	}
	memifDir, err := os.MkdirTemp("", "homa-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(memifDir)
	_, clock, wallOff := newClock()
	pc := hostPairConfig{name: "demo", pool: pool, txQueues: 2, clock: clock, wallOff: wallOff,
		arp: 100 * time.Millisecond, memifSocket: filepath.Join(memifDir, "memif.sock")}
	via := "a net_memif pair"
	if cfg.memifPeers != "" {
		a, b, ok := strings.Cut(cfg.memifPeers, ",")
		if !ok || a == "" || b == "" {
			return fmt.Errorf("--memif-peers %q: want two socket paths, SOCK0,SOCK1", cfg.memifPeers)
		}
		pc.memifSocket, pc.memifPeers = "", [2]string{a, b}
		pc.txQueues = 1 // a forwarder's port pair has one queue each
		via = "memif ports joined through the memif servers at " + cfg.memifPeers
	}
	hp, err := newHostPair(pc)
	if err != nil {
		return err
	}
	defer hp.close()
	var hubs []*workerHub
	defer func() {
		for _, hub := range hubs {
			hub.close()
		}
	}()
	for _, h := range hp.hosts {
		path := filepath.Join(cfg.workers, h.me.ip4()+".sock")
		hub, err := newWorkerHub(h, path, nil, nil, demoWorkerLimits)
		if err != nil {
			return err
		}
		h.workers = hub
		hubs = append(hubs, hub)
	}
	// Busy polling, as a latency-sensitive deployment runs: the loop owns
	// lcore 1 and the workers have the other CPU.
	loop, err := lcore.Launch(1, lcore.Config{Name: "demo-workers", Pass: hp.pass, Drain: hp.drain,
		Idle: lcore.Idle{Kind: lcore.BusyPoll}})
	if err != nil {
		return err
	}
	hk := lcore.StartHousekeeping([]*lcore.Loop{loop}, time.Second) // other threads off the loop's CPU
	defer hk.Stop()
	fmt.Fprintf(cfg.out, "demo: Homa hosts 10.0.0.1 and 10.0.0.2 on %s, one busy-polling loop on lcore 1; workers attach at %s and %s\n",
		via, filepath.Join(cfg.workers, "10.0.0.1.sock"), filepath.Join(cfg.workers, "10.0.0.2.sock"))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	var timeout <-chan time.Time
	if cfg.duration > 0 {
		timeout = time.After(cfg.duration)
	}
	select {
	case s := <-sig:
		fmt.Fprintf(cfg.out, "demo: %v, stopping\n", s)
	case <-timeout:
	}
	for _, hub := range hubs { // workers detach while the loop runs
		hub.close()
	}
	hubs = nil
	if err := loop.Stop(5 * time.Second); err != nil {
		return err
	}
	st := loop.Stats()
	fmt.Fprintf(cfg.out, "loop: %d passes, longest gap between passes %v\n", st.Passes, st.MaxGap)
	for _, h := range hp.hosts {
		fmt.Fprintln(cfg.out, h.summary())
	}
	return nil
}
