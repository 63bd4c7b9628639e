package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
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
	MTU int
	// Hosts is how many hosts to run (0: 2), 10.0.0.1 and on. Above 2
	// they are joined by a ring switch (host.RingSwitch: the ring link
	// of every host to one learning switch in the loop), which --link
	// ring also means for 2; memif joins two only.
	Hosts int
	// Shards runs each host as this many shards (--shards;
	// ports[].lcores), shard s on the s-th EAL worker lcore (shared when
	// there are fewer); each worker lives on one shard of its host (0 or
	// 1: one).
	Shards int
	// Copier gives each host (each shard) a lane of a copier thread
	// pinned to CopierCPU for its receive copies into the workers' pools
	// (ports[].copier_cpus); without it the loop copies.
	Copier    bool
	CopierCPU int
	// Metrics is the daemon's metrics.address, as Config's.
	Metrics  string
	Duration time.Duration // 0: until Context ends or Stop is closed
	// Context's end stops the demo, during its start-up too (homa-dpdk
	// demo's ends on SIGINT or SIGTERM, caught from main's start); the
	// "stopping" line names its cause. nil: none.
	Context context.Context
	Stop    <-chan struct{} // closing it stops the demo too (tests, perf)
	Out     io.Writer
}

// switchSeq numbers the ring switches a process makes: DPDK's names of
// rings, ports and pools are process-wide, and a closed port's name is not
// free again (the tests start several demos).
var switchSeq atomic.Int64

// maxDemoHosts bounds --hosts: each host is a port, a hub and its
// workers' regions on the one loop.
const maxDemoHosts = 16

// Validate checks the configuration's flags before EAL comes up.
func (c WorkersConfig) Validate() error {
	switch {
	case c.Link != "" && c.Link != "memif" && c.Link != "ring":
		return fmt.Errorf("--link %q: want memif or ring", c.Link)
	case c.Link == "ring" && c.MemifPeers != "":
		return fmt.Errorf("--link ring with --memif-peers: the memif peers are the link; leave one out")
	case c.MTU != 0 && (c.MTU < 576 || c.MTU > 9000):
		return fmt.Errorf("--mtu %d: want 576..9000", c.MTU)
	case c.Hosts < 0 || c.Hosts == 1 || c.Hosts > maxDemoHosts:
		return fmt.Errorf("--hosts %d: want 2..%d", c.Hosts, maxDemoHosts)
	case c.Shards < 0 || c.Shards > 16:
		return fmt.Errorf("--shards %d: want 1..16", c.Shards)
	case c.Copier && (c.CopierCPU < 0 || c.CopierCPU >= runtime.NumCPU()):
		return fmt.Errorf("--copier-cpu %d: want a CPU below %d (or -1: none)", c.CopierCPU, runtime.NumCPU())
	case c.Hosts > 2 && (c.Link == "memif" || c.MemifPeers != ""):
		return fmt.Errorf("--hosts %d: more than two hosts are joined by a ring switch; leave out --link memif and --memif-peers", c.Hosts)
	}
	return checkMetrics(c.Metrics)
}

// ringTxQueues is the TX queues of each ring port with --link ring: one
// per priority, all feeding the one ring to the other port.
const ringTxQueues = 8

// ringLinkSpeed is the rate the ring link's ports are paced at (the
// engine's pacer and the TX scheduler's NIC-queue estimate): a 100 Gb/s
// NIC, as an ML cluster's hosts have. The ring itself is as fast as the
// CPU that moves the mbufs.
const ringLinkSpeed, ringLinkRate = "100G", config.Rate(100e9)

// Worker regions of the demo: messages up to 64 MiB between its hosts,
// which all run homa-dpdk (protocol.long_message_peers); the perf harness
// measures 8 MB and 64 MB ones. Each worker's region is 128 MiB of
// transmit arena (two 64 MiB messages in flight: the harness's
// throughput keeps two 64 MB requests outstanding) plus 128 MiB of
// receive pool (2048 pages of 64 KiB: two 64 MiB messages received at
// once, 1024 pages each), 256 MiB, plus its header and rings (1024
// entries each), 258 MiB on 2 MiB hugepages while there are free ones
// (else ordinary shared memory), made resident when a worker attaches
// (about 60 ms per region here: no first-touch page fault on the polling
// loop afterwards). At most 8 regions a uid, about 2 GiB; the harness
// attaches two workers, 516 MiB. max_recv_heap_bytes keeps its default,
// 128 MiB (ports without workers; at least one message).
const (
	workersMaxMessage     = 64 << 20
	workersRegionBytes    = 128 << 20 // workers.max_bytes and workers.pool_bytes
	workersSessionsPerUID = 8
)

// workersSpec is ServeWorkers' daemon config, built here as the daemon
// takes it (config.Defaults, completed by config.Complete: the HOMA_*
// environment still sets its keys): host i, 10.0.0.<i+1> and
// fd00::<i+1>, on devs[i] with its worker socket socks[i] (the first is
// workers.socket), each on lcore 1, busy-polling, a long-message peer of
// the others. With macs, each port gets a MAC of its own,
// 02:00:0a:00:00:<i+1> (ring ports all have the same one, which a switch
// cannot tell apart). With shards, every port runs on those lcores
// (ports[].lcores); with copiers, each shard's receive copies are made on
// the CPU copiers[s] (ports[].copier_cpus). metrics is
// metrics.address ("": none), over the environment's, as a flag is.
func workersSpec(devs, socks []string, txq, mtu int, speed config.Rate, macs bool, shards, copiers []uint, metrics string) (*config.Spec, error) {
	s := config.Defaults()
	s.Lcores = nil // each port's own, below
	for i, dev := range devs {
		ip, ip6 := netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), netip.MustParseAddr(fmt.Sprintf("fd00::%x", i+1))
		p := config.PortSpec{Device: dev, Address: netip.PrefixFrom(ip, 24), Address6: netip.PrefixFrom(ip6, 64),
			TxQueues: txq, MTU: mtu, LinkSpeed: speed, WorkersSocket: socks[i], Lcores: []uint{1}}
		if macs {
			p.MAC = net.HardwareAddr{0x02, 0, 0x0a, 0, 0, byte(i + 1)}
		}
		if len(shards) > 1 {
			p.Lcores = shards
		}
		p.CopierCPUs = copiers
		s.Ports = append(s.Ports, p)
		s.Protocol.LongMessagePeers = append(s.Protocol.LongMessagePeers, netip.PrefixFrom(ip, 32), netip.PrefixFrom(ip6, 128))
	}
	s.Protocol.MaxMessage = workersMaxMessage
	s.ARP.Timeout = 100 * time.Millisecond
	s.Runtime.Idle = "busy"
	s.Workers.Enabled, s.Workers.Socket = true, socks[0]
	s.Workers.MaxSessionsPerUID = workersSessionsPerUID
	s.Workers.MaxBytes, s.Workers.PoolBytes = workersRegionBytes, workersRegionBytes
	s.Log.Level = "warn"
	spec, err := config.Complete(s)
	if err != nil {
		return nil, err
	}
	spec.Metrics.Address = metrics
	return spec, nil
}

// ServeWorkers runs the demo's two hosts, through the daemon's phases,
// on a memif pair with a worker socket each, until cfg.Context ends (its
// start-up stops then too), cfg.Stop is closed or cfg.Duration has passed.
// EAL must be up, with lcore 1 a worker lcore.
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
	nHosts := max(cfg.Hosts, 2)
	if nHosts > 2 {
		cfg.Link = "ring"
	}
	// memif's buffers hold a whole frame of the MTU (host.MemifBufferSize).
	devs := []string{"net_memif_demo0," + host.MemifDevargs("server", sock, mtu), "net_memif_demo1," + host.MemifDevargs("client", sock, mtu)}
	txq, via, speed := 2, "a net_memif pair", config.Rate(0) // auto: memif's 100 Gb/s
	var sw *host.RingSwitch
	switch {
	case nHosts > 2:
		pool, err := dpdk.NewPktMbufPool(fmt.Sprintf("demoswitch%d", switchSeq.Load()+1), 2048, 64, uint16(wire.BufferRoom(mtu)+dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
		if err != nil {
			return fmt.Errorf("the ring switch's pool: %w", err)
		}
		defer pool.Free()
		if sw, err = host.NewRingSwitch(fmt.Sprintf("%ssw%d", ringName, switchSeq.Add(1)), nHosts, ringTxQueues, pool); err != nil {
			return err
		}
		defer sw.ClosePorts()
		devs = devs[:0]
		for _, p := range sw.Ports() {
			devs = append(devs, p.Name)
		}
		txq, via, speed = ringTxQueues, "a ring switch (no copy in the links, paced as "+ringLinkSpeed+")", ringLinkRate
	case cfg.Link == "ring":
		ports, rings, err := host.NewRingPorts(ringName, ringTxQueues)
		defer host.CloseRingPorts(ports, rings)
		if err != nil {
			return err
		}
		devs = []string{"net_ring_" + ringName + "0", "net_ring_" + ringName + "1"}
		txq, via, speed = ringTxQueues, "a net_ring pair (no copy in the link, paced as "+ringLinkSpeed+")", ringLinkRate
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
	var socks []string
	for i := range devs {
		socks = append(socks, filepath.Join(dir, fmt.Sprintf("10.0.0.%d.sock", i+1)))
	}
	loops := "one busy-polling loop on lcore 1"
	var shards []uint
	if cfg.Shards > 1 {
		if shards, err = shardLcores(cfg.Shards); err != nil {
			return err
		}
		loops = fmt.Sprintf("%d shards a host on lcores %v, each worker on one", cfg.Shards, shards)
	}
	var copiers []uint
	if cfg.Copier {
		copiers = slices.Repeat([]uint{uint(cfg.CopierCPU)}, max(cfg.Shards, 1))
		loops += fmt.Sprintf(", receive copies on a copier thread on CPU %d", cfg.CopierCPU)
	}
	spec, err := workersSpec(devs, socks, txq, mtu, speed, sw != nil, shards, copiers, cfg.Metrics)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	opts := daemon.Options{SkipEAL: true, MetricsOptional: true}
	if sw != nil {
		opts.Prepare = func(hosts []*host.Host) error { hosts[0].AddApp(sw); return nil }
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	dm, err := daemon.StartContext(ctx, spec, demoLog(), opts)
	if errors.Is(err, daemon.ErrStopped) {
		// Stopped in a start-up phase: what it made is released, its
		// sockets removed.
		fmt.Fprintf(cfg.Out, "demo: %v during start-up, stopping\n", context.Cause(ctx))
		return nil
	}
	if err != nil {
		return err
	}
	names := make([]string, nHosts)
	for i := range names {
		names[i] = fmt.Sprintf("10.0.0.%d", i+1)
	}
	fmt.Fprintf(cfg.Out, "demo: Homa hosts %s on %s, MTU %d, %s; workers attach at %s%s\n",
		strings.Join(names, ", "), via, mtu, loops, strings.Join(socks, ", "), metricsNote(dm, cfg.Metrics))
	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		timeout = time.After(cfg.Duration)
	}
	select {
	case <-ctx.Done():
		fmt.Fprintf(cfg.Out, "demo: %v, stopping\n", context.Cause(ctx))
	case <-timeout:
	case <-cfg.Stop:
	}
	if err := dm.StopLoops(); err != nil { // workers detach while the loop runs
		return err
	}
	st := dm.Loops()[0].Stats()
	fmt.Fprintf(cfg.Out, "loop: %d passes, longest gap between passes %v\n", st.Passes, st.MaxGap)
	for _, h := range dm.Hosts() {
		fmt.Fprintln(cfg.Out, h.Summary())
	}
	if sw != nil {
		st := sw.Stats()
		fmt.Fprintf(cfg.Out, "ring switch: %d frames switched, %d flooded (%d copies), %d dropped, %d MACs forgotten\n", st.Switched, st.Flooded, st.Copies, st.Dropped, st.Evicted)
	}
	return dm.StopPorts()
}

// ServeOnPair opens a worker socket for each host of a pair, dir/IP.sock,
// and adds its hub to the host's loop (before the loop starts). Its
// workers learn the host (hub.Config.Host): its addresses, its MTU and
// the speed its port reports (0 when it reports none). On error the hubs
// opened so far are returned too: close them.
func ServeOnPair(p *host.Pair, dir string, lim hub.Config) ([]*hub.Hub, error) {
	var hubs []*hub.Hub
	for _, h := range p.Hosts {
		lim.Path = filepath.Join(dir, h.Addr().String()+".sock")
		var v4 netip.Addr
		if ip := h.IP(); ip != [4]byte{} {
			v4 = netip.AddrFrom4(ip)
		}
		lim.Host = hub.HostInfoOf(v4, h.Addr6(), host.LinkRate(h.Port(), 0), h.Endpoint().MTU())
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
