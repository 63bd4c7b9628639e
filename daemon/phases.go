package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
	"github.com/rs/zerolog"
)

// validate checks the Spec against what EAL found: it finds each port's
// device (making a vdev that ports[].device gives with its arguments)
// and makes the plan of the ports' shards, queues and loops (makePlan).
func (d *Daemon) validate() error {
	var devs []device
	for i, ps := range d.spec.Ports {
		name, args, hasArgs := strings.Cut(ps.Device, ",")
		p, err := dpdk.PortByName(name)
		if err != nil && hasArgs && strings.HasPrefix(name, "net_") {
			// A vdev with its arguments that EAL was not given: made
			// now, as --vdev would have, and removed at Stop.
			if p, err = dpdk.NewVdev(name, args); err != nil {
				return fmt.Errorf("ports[%d].device: create %s: %w", i, name, err)
			}
			d.vdevs = append(d.vdevs, name)
		}
		if err != nil {
			return fmt.Errorf("ports[%d].device: %w (%s)", i, err, noPortHint(d.spec.EAL, name, hasArgs))
		}
		d.ports = append(d.ports, p)
		if err := checkFrameBuffers(d.spec, i, kernelMTU); err != nil {
			return err
		}
		dev, err := deviceOf(p)
		if err != nil {
			return fmt.Errorf("ports[%d] (%s): %w", i, p.Name, err)
		}
		devs = append(devs, dev)
	}
	pl, err := makePlan(d.spec, devs, dpdk.WorkerLcores(), dpdk.MainLcore())
	if err != nil {
		return err
	}
	d.plan = pl
	return nil
}

// noPortHint says why a port's device may be missing: a vdev EAL was
// given (--vdev) whose driver did not attach it, a vdev made from
// ports[].device's arguments that failed, or a device EAL was not given.
func noPortHint(eal []string, name string, hasArgs bool) string {
	for _, v := range ealVdevs(eal) {
		if n, _, _ := strings.Cut(v, ","); n == name {
			return fmt.Sprintf("EAL was given --vdev %s, but its driver did not attach the device: its reason is in EAL's log above (a bad argument, such as an iface= that does not exist)", v)
		}
	}
	if strings.HasPrefix(name, "net_") {
		if hasArgs {
			return "the vdev could not be made from its arguments: see the driver's message above"
		}
		return "give a vdev its arguments here (device: " + name + ",ARGS) or to EAL with --vdev"
	}
	return "a PCI device must be bound to a DPDK driver (vfio-pci) or be a bifurcated one (mlx5), and not excluded by EAL's -a/-b"
}

// makePools makes each port's mbuf pool: every frame of the port in one
// mbuf, for the engine writes a whole frame into the mbuf the transmit
// side lends.
func (d *Daemon) makePools() error {
	spec := d.spec
	for i, ps := range spec.Ports {
		room := spec.Mempool.DataRoomFor(ps.MTU)
		pool, err := dpdk.NewPktMbufPool(fmt.Sprintf("d%dport%d", d.seq, i), uint32(spec.Mempool.Mbufs), uint32(spec.Mempool.Cache),
			uint16(room+dpdk.PktmbufHeadroom), d.plan.Ports[i].Socket)
		if err != nil {
			return fmt.Errorf("%s: %w", ps.Device, err)
		}
		d.pools = append(d.pools, pool)
	}
	return nil
}

// setupPort configures and starts port i with the plan's queues.
func (d *Daemon) setupPort(i int) error {
	ps, p, pp := d.spec.Ports[i], d.ports[i], d.plan.Ports[i]
	s := host.PortSetup{TxQueues: pp.TxQueues, RxQueues: pp.RxQueues, RxDesc: ps.RxDesc, TxDesc: ps.TxDesc,
		Pool: d.pools[i], MTU: ps.MTU, MAC: ps.MAC}
	st, err := host.SetupPort(p, s)
	if err != nil && clientWithoutServer(d.spec, i, st, err) {
		// Its server may start after this daemon: the link phase dials
		// it again (dialClients).
		d.started = append(d.started, st)
		d.Log.Info().Str("port", p.Name).Str("start", err.Error()).
			Msg("memif client: no server accepted its dial; it dials again while the link phase waits")
		return nil
	}
	if err != nil {
		var pe *host.PortError
		if errors.As(err, &pe) && pe.Setting == "mac" && st.Driver == "net_memif" && errors.Is(pe.Err, syscall.ENOTSUP) {
			name, _ := vdevOf(d.spec, i)
			return fmt.Errorf("ports[%d].mac: %w; net_memif cannot change its MAC: give it in the vdev's arguments (%s,...,mac=%s) and leave ports[%d].mac empty", i, pe.Err, name, ps.MAC, i)
		}
		if errors.As(err, &pe) && pe.Setting != "" {
			return fmt.Errorf("ports[%d].%s: %w", i, pe.Setting, pe.Err)
		}
		return fmt.Errorf("ports[%d] (%s): %w", i, p.Name, err)
	}
	d.started = append(d.started, st)
	d.Log.Info().Str("port", p.Name).Str("driver", st.Driver).Int("rx_queues", st.RxQueues).Int("tx_queues", st.TxQueues).
		Bool("ipv4_checksum_offload", st.Offloads.IPv4Checksum).Bool("zero_copy_worker_payloads", st.Offloads.MultiSeg).
		Bool("mtu_past_ethdev", st.MTUPastEthdev).Bool("mac_in_frames_only", st.MACInFramesOnly).Msg("port started")
	if st.MTUPastEthdev {
		d.Log.Info().Str("port", p.Name).Int("mtu", ps.MTU).Msg("ethdev refuses this MTU on the device, which carries such frames all the same: " +
			"the port is configured at ethdev's 1500, the engine keeps to the MTU")
	}
	return nil
}

// peerVariants maps peers[].variant to the engine's ("" and "auto":
// VariantAuto; "homa-dpdk" runs the full protocol).
var peerVariants = map[string]engine.Variant{"full": engine.VariantFull, "upstream": engine.VariantUpstream, "homa-dpdk": engine.VariantFull}

// hostConfigFor builds port i's host settings from the Spec.
func (d *Daemon) hostConfigFor(i int, clock func() int64, wallOff int64) (host.Config, error) {
	ps, p, h, st := d.spec.Ports[i], d.ports[i], d.spec.Protocol, d.started[i]
	pfx := ps.Address
	hwaddr, err := p.MAC()
	if err != nil {
		return host.Config{}, err
	}
	if st.MACInFramesOnly {
		hwaddr = ps.MAC // the port kept its own (host.StartedPort)
	}
	txq := d.plan.Ports[i].Shards[0].TxQueues // each shard's
	pm, err := nicq.NewMap(txq)
	if ps.PriorityMap != "" {
		pm, err = nicq.ParseMap(ps.PriorityMap, txq)
	}
	if err != nil {
		return host.Config{}, fmt.Errorf("ports[%d].priority_map: %w", i, err)
	}
	rate := float64(ps.LinkSpeed)
	if rate == 0 { // auto
		rate = host.LinkRate(p, 10e9)
	}
	ec := engine.DefaultConfig()
	ec.MTU, ec.UnschedBytes, ec.MaxMessageLength = ps.MTU, h.UnschedBytes, h.MaxMessage
	// Peers outside protocol.long_message_peers may run kernel Homa: the
	// engine holds them to its 1,000,000 bytes.
	ec.KernelPeer = func(ip netip.Addr) bool { return !h.TakesLongMessages(ip) }
	ec.Grant.MaxIncoming, ec.Grant.MaxOvercommit = h.MaxIncoming, h.MaxOvercommit
	ec.Grant.FIFOIncrement, ec.Grant.Window = h.FIFOGrantIncrement, h.Window
	ec.Grant.Increment = h.GrantIncrement
	ec.Grant.FIFOFraction = int(h.GrantFIFOFraction * 1000)
	ec.TickNs = h.Tick.Nanoseconds()
	ec.ResendTicks, ec.ResendInterval, ec.TimeoutTicks, ec.RequestAckTicks = h.ResendTicks, h.ResendInterval, h.TimeoutTicks, h.RequestAckTick
	ec.BusyTimeoutTicks = h.BusyTimeoutTicks // 0: the engine's 100 x TimeoutTicks
	ec.GrantLapseTicks = h.GrantLapseTicks   // 0: the engine's 4 x ResendTicks
	ec.MaxNICQueueNs = h.MaxNICQueue.Nanoseconds()
	ec.MaxGaps, ec.MaxResendsPerRPC, ec.MaxResendBytes = h.MaxGaps, h.MaxResendsPerRPC, h.MaxResendBytes
	ec.MaxServerRPCs, ec.MaxServerRPCsPerPeer = h.MaxServerRPCs, h.MaxServerRPCsPerPeer
	ec.MaxStagingBytes, ec.MaxRecvHeapBytes = h.MaxStagingBytes, h.MaxRecvHeapBytes
	ec.MaxPeers, ec.PeerIdleTicks = h.MaxPeers, h.PeerIdleTicks
	ec.ICMPRate = icmpRate(h)
	ec.PacerThreshold = h.PacerThreshold
	ec.ScheduledDataQueue = h.ScheduledDataQueue
	ec.Upstream, ec.Checksum = h.Variant == "upstream", h.Checksum
	ec.MessagePriorityResends = h.MessagePriorityResends
	ec.VerifyChecksum = map[string]engine.ChecksumCheck{"all": engine.VerifyAll, "none": engine.VerifyNone}[h.VerifyChecksum]
	if len(d.spec.Peers) > 0 {
		spec := d.spec
		ec.PeerOptions = func(ip netip.Addr) engine.PeerOptions {
			ps := spec.PeerFor(ip)
			return engine.PeerOptions{Hijack: ps.Hijack, Variant: peerVariants[ps.Variant], HomaDPDK: ps.Variant == "homa-dpdk"}
		}
	}
	if h.PacerThreshold == 0 {
		ec.PacerThreshold = -1 // the engine's 0 is its default: here every message is paced
	}
	var cut sched.Cutoffs
	for k, c := range h.UnschedCutoffs {
		cut[wire.NumPriorities-1-k] = uint32(c)
	}
	ec.Cutoffs = cut
	if !h.IncastControl {
		ec.Incast.Budget = 0
	}
	hc := host.Config{
		Port: p, Pool: d.pools[i], MAC: wire.MAC(hwaddr), PrioMap: pm,
		LinkBps: rate, Engine: ec, Static: map[[4]byte]wire.MAC{}, Static6: map[[16]byte]wire.MAC{}, Capture: d.capture, CapIf: i,
		Offloads: st.Offloads, PCP: ps.Marking == "pcp", VLAN: uint16(ps.VLAN),
		Burst: 32, Clock: clock, WallOff: wallOff,
		ARP: host.ARPConfig{Timeout: d.spec.ARP.Timeout, Aging: d.spec.ARP.Aging, Retries: d.spec.ARP.Retries},
		Faults: host.Faults{Drop: d.spec.Faults.Drop, Duplicate: d.spec.Faults.Duplicate,
			Reorder: d.spec.Faults.Reorder, Seed: d.spec.Faults.Seed},
	}
	if m, ok := memifOf(d.spec, i); ok && m.role == "client" {
		hc.Redial = true // its server may leave and come back
	}
	if ps.Gateway.IsValid() {
		hc.Gateway = ps.Gateway.As4()
	}
	p6 := ps.Address6
	if pfx.Addr().Is4() {
		hc.IP, hc.Subnet = pfx.Addr().As4(), pfx.Masked()
	} else {
		p6 = pfx // an IPv6-only port
	}
	if p6.IsValid() {
		hc.IP6, hc.Subnet6 = p6.Addr().As16(), p6.Masked()
		if ps.Gateway6.IsValid() {
			hc.Gateway6 = ps.Gateway6.As16()
		}
	}
	for _, n := range d.spec.Neighbours {
		if n.IP.Is4() {
			hc.Static[n.IP.As4()] = wire.MAC(n.MAC)
		} else {
			hc.Static6[n.IP.As16()] = wire.MAC(n.MAC)
		}
	}
	return hc, nil
}

func (d *Daemon) launch() error {
	if d.spec.Capture.File != "" {
		names := make([]string, len(d.ports))
		for i, p := range d.ports {
			names[i] = p.Name
		}
		cs := d.spec.Capture
		c, err := dpdk.NewCapture(cs.File, names, cs.Snaplen, cs.Last)
		if err != nil {
			return fmt.Errorf("capture.file: %w", err)
		}
		if cs.Last == 0 {
			if err := c.LimitSize(int64(cs.MaxBytes), cs.Files); err != nil {
				c.Close()
				return fmt.Errorf("capture.max_bytes: %w", err)
			}
		}
		d.capture = c
	}
	_, clock, wallOff := host.NewClock()
	idle := lcore.Idle{Kind: lcore.Adaptive, SpinPasses: d.spec.Runtime.IdleSpinPasses,
		MaxSleep: time.Duration(d.spec.Runtime.IdleMaxSleepUs) * time.Microsecond}
	if d.spec.Runtime.Idle == "busy" {
		idle.Kind = lcore.BusyPoll
	}
	for i := range d.ports {
		hc, err := d.hostConfigFor(i, clock, wallOff)
		if err != nil {
			return err
		}
		shards, err := d.newShards(i, hc)
		if err != nil {
			return err
		}
		d.hosts = append(d.hosts, shards[0])
		d.shards = append(d.shards, shards)
	}
	if err := d.openWorkers(); err != nil {
		return err
	}
	if d.opts.Prepare != nil {
		if err := d.opts.Prepare(d.hosts); err != nil {
			return err
		}
	}
	if d.opts.PrepareShards != nil {
		if err := d.opts.PrepareShards(d.shards); err != nil {
			return err
		}
	}
	if err := d.launchLoops(idle); err != nil {
		return err
	}
	// The process's other threads stay off the loops' CPUs.
	d.housekeeping = lcore.StartHousekeeping(d.loops, time.Second)
	if addr := d.spec.Metrics.Address; addr != "" {
		col := &Collector{Hosts: d.hosts, Shards: d.shards, Hubs: d.hubOf, Loops: d.loopOf}
		srv, err := ServeMetrics(addr, col, col.Health, col.Readiness)
		switch {
		case err != nil && d.opts.MetricsOptional && errors.Is(err, syscall.EADDRINUSE):
			d.Log.Warn().Str("address", addr).Msg("metrics address in use (another daemon's?): running without /metrics")
		case err != nil:
			return err
		default:
			d.metrics = srv
			d.Log.Info().Str("address", srv.Addr).Msg("serving /metrics, /healthz and /readyz")
		}
	}
	return nil
}

// launchLoops starts the plan's polling loops, one per distinct lcore;
// the shards that share an lcore run in its loop as a host.Pipeline, in
// port order, with one clock reading per pass.
func (d *Daemon) launchLoops(idle lcore.Idle) error {
	d.loopOf = make([]*lcore.Loop, len(d.hosts))
	for _, lp := range d.plan.Loops {
		hosts := make([]*host.Host, 0, len(lp.Shards))
		names := make([]string, 0, len(lp.Shards))
		for _, sh := range lp.Shards {
			h := d.shards[sh.Port][sh.Shard]
			hosts = append(hosts, h)
			name := h.Addr().String()
			if len(d.shards[sh.Port]) > 1 {
				name += fmt.Sprintf(" shard %d", sh.Shard)
			}
			names = append(names, name)
		}
		// One crossing into C per host pass: each pass sends what the
		// loop's previous host prepared and receives its own burst.
		pipe := host.NewPipeline(hosts...)
		cfg := lcore.Config{Name: hosts[0].String(), Pass: pipe.Pass, Flush: pipe.Flush, Drain: pipe.Drain, Idle: idle}
		if idle.Kind == lcore.Adaptive { // workers wake the loop instead of waiting out its sleeps
			cfg.Doorbell = pipe.Doorbell()
		}
		if len(hosts) > 1 {
			cfg.Name = "hosts " + strings.Join(names, ", ")
		}
		loop, err := lcore.Launch(lp.Lcore, cfg)
		if err != nil {
			return fmt.Errorf("lcores: lcore %d: %w", lp.Lcore, err)
		}
		d.loops = append(d.loops, loop)
		for _, sh := range lp.Shards {
			if sh.Shard == 0 {
				d.loopOf[sh.Port] = loop
			}
		}
		d.Log.Info().Strs("hosts", names).Uint("lcore", lp.Lcore).Msg("polling loop launched")
	}
	return nil
}

// refusalLog logs refused workers as warnings, at most one line per
// every (anyone who reaches the socket can be refused in a loop); a line
// says how many were left out before it.
func refusalLog(log zerolog.Logger, every time.Duration) func(uid, gid, pid int, why string) {
	var mu sync.Mutex
	var last time.Time
	skipped := 0
	return func(uid, gid, pid int, why string) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= every {
			log.Warn().Int("uid", uid).Int("gid", gid).Int("pid", pid).Int("refusals_not_logged", skipped).
				Msg("worker refused: " + why)
			last, skipped = now, 0
			return
		}
		skipped++
	}
}

// lingerOf is workers.linger as hub.Config.Linger: 0 (none) is negative
// there, where 0 is the default.
func lingerOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// zeroCopyMinOf is workers.zero_copy_min as hub.Config.ZeroCopyMin:
// the config's 0 (every message copied) is the hub's negative.
func zeroCopyMinOf(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// openWorkers opens the worker control socket of each host that has one.
func (d *Daemon) openWorkers() error {
	ws := d.spec.Workers
	d.hubOf = make([]*hub.Set, len(d.hosts))
	if !ws.Enabled {
		return nil
	}
	hc := hub.Config{SocketGroup: ws.SocketGroup, AllowUIDs: ws.AllowUIDs, AllowGIDs: ws.AllowGIDs, MaxOutstanding: ws.MaxOutstanding,
		MaxBacklog: ws.MaxBacklog, MaxSessionsPerUID: ws.MaxSessionsPerUID,
		Linger:      lingerOf(ws.Linger),
		ZeroCopyMin: zeroCopyMinOf(ws.ZeroCopyMin),
		OnRefuse:    refusalLog(d.Log, time.Second),
		Doorbell:    d.spec.Runtime.Idle != "busy", // a busy loop never sleeps: its workers need not look
		Params: shm.Params{
			SQEntries: uint64(ws.RingEntries), CQEntries: uint64(ws.RingEntries),
			ArenaSize: uint64(ws.MaxBytes), PoolPages: uint64(ws.PoolBytes / shm.PageSize),
			MaxMessage: uint32(d.spec.Protocol.MaxMessage), // the config checked that both hold it
		}}
	for i, h := range d.hosts {
		hc.Path = d.workersSocket(i)
		if hc.Path == "" {
			continue
		}
		hc.Host = d.hostInfo(i)
		hosts := make([]hub.Host, len(d.shards[i]))
		for k, sh := range d.shards[i] {
			hosts[k] = sh
		}
		set, err := hub.NewSet(hosts, hc)
		if err != nil {
			return fmt.Errorf("workers of %s: %w", h.Addr(), err)
		}
		for k, hb := range set.Hubs() {
			d.shards[i][k].AddApp(hb)
		}
		d.hubOf[i] = set
		d.hubs = append(d.hubs, set)
		d.Log.Info().Str("host", h.Addr().String()).Str("socket", hc.Path).Int("shards", len(hosts)).Msg("worker control socket open")
	}
	return nil
}

// hostInfo is what port i's workers learn of their host from their
// regions' headers (shm.FeatureHostInfo): its addresses, ports[i].mtu,
// and ports[i].link_speed, or under "auto" the speed the port reports (0,
// unknown, when it reports none: the pacer's 10 Gb/s then is a guess, not
// the link's).
func (d *Daemon) hostInfo(i int) shm.HostInfo {
	h, ps := d.hosts[i], d.spec.Ports[i]
	var v4 netip.Addr
	if ip := h.IP(); ip != [4]byte{} {
		v4 = netip.AddrFrom4(ip)
	}
	rate := float64(ps.LinkSpeed)
	if rate == 0 {
		rate = host.LinkRate(d.ports[i], 0)
	}
	return hub.HostInfoOf(v4, h.Addr6(), rate, ps.MTU)
}

// workersSocket is port i's worker control socket, "" for none.
func (d *Daemon) workersSocket(i int) string { return workersSocket(d.spec, i) }

// workersSocket is port i's worker control socket in spec, "" for none.
func workersSocket(spec *config.Spec, i int) string {
	ws := spec.Workers
	if !ws.Enabled {
		return ""
	}
	if p := spec.Ports[i].WorkersSocket; p != "" {
		return p
	}
	if i == 0 {
		return ws.Socket
	}
	return ""
}

// copierOn is the copier thread on cpu, started at its first use: one a
// CPU, a lane for each shard that copies there.
func (d *Daemon) copierOn(cpu uint) (*host.Copier, error) {
	if cp := d.copiers[cpu]; cp != nil {
		return cp, nil
	}
	cp, err := host.NewCopier(int(cpu))
	if err != nil {
		return nil, err
	}
	if d.copiers == nil {
		d.copiers = map[uint]*host.Copier{}
	}
	d.copiers[cpu] = cp
	return cp, nil
}

// icmpRate is the engine's limits on the port unreachables sent, from
// protocol.icmp_*: a limit the config sets to 0 is off (the engine's 0
// is its default).
func icmpRate(h config.ProtocolSpec) engine.ICMPRate {
	r := engine.ICMPRate{PerDestNs: h.ICMPRateLimit.Nanoseconds(), PerDestBurst: h.ICMPRateLimitBurst,
		PerSec: h.ICMPMsgsPerSec, Burst: h.ICMPMsgsBurst, Buckets: h.ICMPRateLimitBuckets}
	if r.PerDestNs == 0 {
		r.PerDestNs = -1
	}
	if r.PerSec == 0 {
		r.PerSec = -1
	}
	return r
}

// newShards builds port i's hosts from hc as the plan says: one, or a
// shard per lcore of ports[i].lcores, each on its own TX queues and its
// share of the RX queues (a shard without one takes its frames from the
// others, host.ShardSet).
func (d *Daemon) newShards(i int, hc host.Config) ([]*host.Host, error) {
	pp := d.plan.Ports[i]
	var set *host.ShardSet
	if len(pp.Shards) > 1 {
		set = host.NewShardSet(len(pp.Shards))
		if pp.HomePorts {
			set.HomePorts() // a worker's ports are bound on its shard alone (hub.Set)
		}
	}
	var hosts []*host.Host
	for s, sp := range pp.Shards {
		c := hc
		if set != nil {
			c.Shards, c.ShardIndex = set, s
			c.TxQueueBase, c.RxQueues = uint16(sp.TxBase), sp.RxQueues
		}
		if sp.CopierCPU >= 0 {
			cp, err := d.copierOn(uint(sp.CopierCPU))
			if err != nil {
				return nil, fmt.Errorf("ports[%d].copier_cpus: %w", i, err)
			}
			c.Copier = cp.Lane()
		}
		h, err := host.New(c)
		if err != nil {
			return nil, err
		}
		h.PublishSnapshots() // before the loops start: they publish into them
		hosts = append(hosts, h)
	}
	return hosts, nil
}
