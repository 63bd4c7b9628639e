package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/wire"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// phaseError is a start-up failure in a named phase (EAL, validate,
// mempools, ports, link, launch), so the message says where it stopped.
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return "start-up phase " + e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

func inPhase(phase string, err error) error {
	if err == nil {
		return nil
	}
	return &phaseError{phase, err}
}

// runFlags are the command-line flags of run, bound to config keys.
func runFlags(fs *pflag.FlagSet) map[string]*pflag.Flag {
	fs.String("capture", "", "write a pcapng capture of both directions to this file")
	fs.Int("capture-last", 0, "keep only the last N packets in the capture")
	fs.String("metrics", "", "serve Prometheus metrics on this host:port (\"\" keeps the config's)")
	fs.String("log-format", "", "console or json")
	fs.String("log-level", "", "debug, info, warn or error")
	return map[string]*pflag.Flag{
		"capture.file":    fs.Lookup("capture"),
		"capture.last":    fs.Lookup("capture-last"),
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
and ping, speaks Homa on protocol 146, and stops cleanly on SIGINT or SIGTERM.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			given := map[string]*pflag.Flag{}
			for k, f := range flags {
				if f.Changed {
					given[k] = f
				}
			}
			spec, err := config.Load(config.Source{File: file, Flags: given})
			if err != nil {
				return inPhase("config", err)
			}
			if cmd.ArgsLenAtDash() >= 0 {
				spec.EAL = args[cmd.ArgsLenAtDash():]
			}
			d, err := startDaemon(spec, newLogger(spec.Log), nil)
			if err != nil {
				return err
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			s := <-sig
			d.log.Info().Str("signal", s.String()).Msg("stopping")
			return d.stop()
		},
	}
	c.Flags().StringVar(&file, "config", "", "the YAML config file (see config/example.yaml)")
	flags = runFlags(c.Flags())
	return c
}

func newLogger(ls config.LogSpec) zerolog.Logger {
	level, _ := zerolog.ParseLevel(ls.Level)
	var l zerolog.Logger
	if ls.Format == "json" {
		l = zerolog.New(os.Stderr)
	} else {
		l = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly})
	}
	return l.Level(level).With().Timestamp().Logger()
}

// daemon is a running homa-dpdk: its ports, loops and hosts.
type daemon struct {
	prepare      func([]*hostLoop)
	cksumOffload []bool // per port: IPv4 checksum offloaded to the NIC
	multiSeg     []bool // per port: sends chained mbufs (zero-copy worker payloads)
	metrics      *http.Server
	spec         *config.Spec
	log          zerolog.Logger
	ports        []*dpdk.Port
	pools        []*dpdk.Mempool
	hosts        []*hostLoop
	loops        []*lcore.Loop
	hubs         []*workerHub
	housekeeping *lcore.Housekeeping
	capture      *dpdk.Capture
}

// startDaemon turns a Spec into live objects, phase by phase. prepare, if
// not nil, sees the hosts after they are built and before their loops
// start: the place to give a host an in-loop application (tests).
func startDaemon(spec *config.Spec, log zerolog.Logger, prepare func([]*hostLoop)) (*daemon, error) {
	d := &daemon{spec: spec, log: log, prepare: prepare}
	applyRuntime(spec.Runtime, len(spec.Ports))

	if _, err := dpdk.Init(spec.EAL); err != nil {
		return nil, inPhase("EAL", err)
	}
	log.Info().Strs("eal", spec.EAL).Msg("EAL up")

	if err := d.validate(); err != nil {
		return nil, inPhase("validate", err)
	}
	for i, ps := range spec.Ports {
		// Every frame of the port in one mbuf: the engine writes a whole
		// frame into the mbuf the transmit side lends.
		room := spec.Mempool.DataRoomFor(ps.MTU)
		pool, err := dpdk.NewPktMbufPool(fmt.Sprintf("port%d", i), uint32(spec.Mempool.Mbufs), uint32(spec.Mempool.Cache),
			uint16(room+dpdk.PktmbufHeadroom), portSocket(d.ports[i]))
		if err != nil {
			return nil, inPhase("mempools", fmt.Errorf("%s: %w", ps.Device, err))
		}
		d.pools = append(d.pools, pool)
	}
	txq := make([]int, len(spec.Ports))
	for i := range spec.Ports {
		n, err := d.setupPort(i)
		if err != nil {
			return nil, inPhase("ports", err)
		}
		txq[i] = n
	}
	if err := d.waitLinks(10 * time.Second); err != nil {
		return nil, inPhase("link", err)
	}
	if err := d.launch(txq); err != nil {
		d.stop()
		return nil, inPhase("launch", err)
	}
	return d, nil
}

func portSocket(p *dpdk.Port) int {
	if info, err := p.Info(); err == nil && info.Socket >= 0 {
		return info.Socket
	}
	return dpdk.SocketIDAny
}

func applyRuntime(rs config.RuntimeSpec, loops int) {
	debug.SetGCPercent(rs.GOGC)
	if rs.GOMemLimit != "" {
		if b, err := config.ParseBytes(rs.GOMemLimit); err == nil {
			debug.SetMemoryLimit(b)
		}
	}
	lcore.SetGOMAXPROCS(loops)
	if rs.GOMAXPROCS > 0 {
		lcore.SetGOMAXPROCS(rs.GOMAXPROCS - 2)
	}
}

// validate checks the Spec against what EAL found.
func (d *daemon) validate() error {
	workers := dpdk.WorkerLcores()
	if len(d.spec.Lcores) < len(d.spec.Ports) {
		return fmt.Errorf("lcores: %d polling lcores for %d ports; give one per port", len(d.spec.Lcores), len(d.spec.Ports))
	}
	for i, l := range d.spec.Lcores[:len(d.spec.Ports)] {
		if !slices.Contains(workers, l) {
			return fmt.Errorf("lcores[%d]: lcore %d is not an EAL worker lcore (workers: %v; the main lcore is %d); change -l or lcores", i, l, workers, dpdk.MainLcore())
		}
	}
	for i, ps := range d.spec.Ports {
		name, _, _ := strings.Cut(ps.Device, ",")
		p, err := dpdk.PortByName(name)
		if err != nil {
			return fmt.Errorf("ports[%d].device: %w (a vdev must also be given to EAL with --vdev)", i, err)
		}
		d.ports = append(d.ports, p)
	}
	return nil
}

// setupPort configures port i and returns its number of TX queues.
func (d *daemon) setupPort(i int) (int, error) {
	ps, p := d.spec.Ports[i], d.ports[i]
	info, err := p.Info()
	if err != nil {
		return 0, err
	}
	ntx := ps.TxQueues
	if ntx == 0 {
		ntx = min(int(info.MaxTxQueues), nicq.NumPriorities)
	}
	nrx := ps.RxQueues
	if nrx == 0 {
		// memif pairs queues: the peer's TX queue i is our RX queue i, and
		// the link comes up only when both sides have as many of each.
		nrx = 1
		if info.Driver == "net_memif" {
			nrx = ntx
		}
	}
	conf := dpdk.PortConf{}
	if info.TxOffloadCapa&dpdk.TxOffloadIPv4Cksum != 0 {
		conf.TxOffloads |= dpdk.TxOffloadIPv4Cksum // the NIC computes IPv4 header checksums
	}
	d.cksumOffload = append(d.cksumOffload, conf.TxOffloads&dpdk.TxOffloadIPv4Cksum != 0)
	if zeroCopyPort(info) {
		conf.TxOffloads |= dpdk.TxOffloadMultiSegs // workers' payloads as external buffers
	}
	d.multiSeg = append(d.multiSeg, conf.TxOffloads&dpdk.TxOffloadMultiSegs != 0)
	if err := p.Configure(uint16(nrx), uint16(ntx), conf); err != nil {
		return 0, fmt.Errorf("ports[%d].rx_queues/tx_queues: %w", i, err)
	}
	for q := range nrx {
		if err := p.RxQueueSetup(uint16(q), uint16(ps.RxDesc), d.pools[i]); err != nil {
			return 0, fmt.Errorf("ports[%d].rx_desc: %w", i, err)
		}
	}
	for q := range ntx {
		if err := p.TxQueueSetup(uint16(q), uint16(ps.TxDesc)); err != nil {
			return 0, fmt.Errorf("ports[%d].tx_desc: %w", i, err)
		}
	}
	if ps.MAC != "" {
		mac, _ := net.ParseMAC(ps.MAC)
		if err := p.SetMAC(mac); err != nil {
			return 0, fmt.Errorf("ports[%d].mac: %w", i, err)
		}
	}
	if err := p.SetMTU(uint16(ps.MTU)); err != nil && ps.MTU != 1500 {
		return 0, fmt.Errorf("ports[%d].mtu: %w", i, err)
	}
	if err := p.Start(); err != nil {
		return 0, err
	}
	d.log.Info().Str("port", p.Name).Str("driver", info.Driver).Int("rx_queues", nrx).Int("tx_queues", ntx).
		Bool("ipv4_checksum_offload", d.cksumOffload[i]).Bool("zero_copy_worker_payloads", d.multiSeg[i]).Msg("port started")
	return ntx, nil
}

func (d *daemon) waitLinks(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i, p := range d.ports {
		for {
			l, err := p.Link()
			if err == nil && l.Up {
				d.log.Info().Str("port", p.Name).Str("link", l.String()).Msg("link up")
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("ports[%d] (%s): link still down after %v (is the peer up?)", i, p.Name, timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// hostConfigFor builds port i's host settings from the Spec.
func (d *daemon) hostConfigFor(i, ntx int, clock func() int64, wallOff int64) (hostConfig, error) {
	ps, p, h := d.spec.Ports[i], d.ports[i], d.spec.Protocol
	pfx := netip.MustParsePrefix(ps.Address)
	hwaddr, err := p.MAC()
	if err != nil {
		return hostConfig{}, err
	}
	pm, err := nicq.NewMap(ntx)
	if ps.PriorityMap != "" {
		pm, err = nicq.ParseMap(ps.PriorityMap, ntx)
	}
	if err != nil {
		return hostConfig{}, fmt.Errorf("ports[%d].priority_map: %w", i, err)
	}
	rate := 10e9
	if ps.LinkSpeed != "auto" {
		rate, _ = config.ParseRate(ps.LinkSpeed)
	} else if l, err := p.Link(); err == nil && l.SpeedMbps > 0 && l.SpeedMbps < 1<<31 {
		rate = float64(l.SpeedMbps) * 1e6
	}
	ec := engine.DefaultConfig()
	ec.MTU, ec.UnschedBytes, ec.MaxMessageLength = ps.MTU, h.UnschedBytes, h.MaxMessage
	ec.Grant.MaxIncoming, ec.Grant.MaxOvercommit = h.MaxIncoming, h.MaxOvercommit
	ec.Grant.FIFOIncrement = h.FIFOGrantIncrement
	ec.Grant.FIFOFraction = int(h.GrantFIFOFraction * 1000)
	ec.TickNs = h.Tick.Nanoseconds()
	ec.ResendTicks, ec.ResendInterval, ec.TimeoutTicks, ec.RequestAckTicks = h.ResendTicks, h.ResendInterval, h.TimeoutTicks, h.RequestAckTick
	ec.MaxNICQueueNs = h.MaxNICQueue.Nanoseconds()
	ec.IDSeed = uint64(time.Now().UnixNano())
	var cut sched.Cutoffs
	for k, c := range h.UnschedCutoffs {
		cut[wire.NumPriorities-1-k] = uint32(c)
	}
	ec.Cutoffs = cut
	if !h.IncastControl {
		ec.Incast.Budget = 0
	}
	hc := hostConfig{
		port: p, pool: d.pools[i], ip: pfx.Addr().As4(), mac: wire.MAC(hwaddr), txQueues: ntx, prioMap: pm,
		linkBps: rate, engine: ec, static: map[[4]byte]wire.MAC{}, capture: d.capture, capIf: i,
		subnet: pfx.Masked(), ipCksumOffload: d.cksumOffload[i], multiSeg: d.multiSeg[i], pcp: ps.Marking == "pcp", vlan: uint16(ps.VLAN),
		burst: 32, clock: clock, wallOff: wallOff,
	}
	if ps.Gateway != "" {
		hc.gateway = netip.MustParseAddr(ps.Gateway).As4()
	}
	for _, n := range d.spec.Neighbours {
		mac, _ := net.ParseMAC(n.MAC)
		hc.static[netip.MustParseAddr(n.IP).As4()] = wire.MAC(mac)
	}
	hc.arp.timeout, hc.arp.aging, hc.arp.retries = d.spec.ARP.Timeout, d.spec.ARP.Aging, d.spec.ARP.Retries
	f := d.spec.Faults
	hc.faults.drop, hc.faults.dup, hc.faults.reorder, hc.faults.seed = f.Drop, f.Duplicate, f.Reorder, f.Seed
	return hc, nil
}

func (d *daemon) launch(txq []int) error {
	if d.spec.Capture.File != "" {
		names := make([]string, len(d.ports))
		for i, p := range d.ports {
			names[i] = p.Name
		}
		c, err := dpdk.NewCapture(d.spec.Capture.File, names, 0, d.spec.Capture.Last)
		if err != nil {
			return err
		}
		d.capture = c
	}
	_, clock, wallOff := newClock()
	idle := lcore.Idle{Kind: lcore.Adaptive, SpinPasses: d.spec.Runtime.IdleSpinPasses,
		MaxSleep: time.Duration(d.spec.Runtime.IdleMaxSleepUs) * time.Microsecond}
	if d.spec.Runtime.Idle == "busy" {
		idle.Kind = lcore.BusyPoll
	}
	for i := range d.ports {
		hc, err := d.hostConfigFor(i, txq[i], clock, wallOff)
		if err != nil {
			return err
		}
		h, err := newHostLoop(hc)
		if err != nil {
			return err
		}
		d.hosts = append(d.hosts, h)
	}
	if err := d.openWorkers(); err != nil {
		return err
	}
	attachBoxes(d.hosts) // before the loops start: they publish into them
	if d.prepare != nil {
		d.prepare(d.hosts)
	}
	for i, h := range d.hosts {
		loop, err := lcore.Launch(d.spec.Lcores[i], lcore.Config{Name: h.String(), Pass: h.pass, Drain: h.drain, Idle: idle})
		if err != nil {
			return err
		}
		d.loops = append(d.loops, loop)
		d.log.Info().Str("host", h.me.ip4()).Uint("lcore", d.spec.Lcores[i]).Msg("polling loop launched")
	}
	// The process's other threads stay off the loops' CPUs.
	d.housekeeping = lcore.StartHousekeeping(d.loops, time.Second)
	if addr := d.spec.Metrics.Address; addr != "" {
		srv, err := serveMetrics(addr, &collector{hosts: d.hosts, loops: d.loops})
		if err != nil {
			return err
		}
		d.metrics = srv
		d.log.Info().Str("address", addr).Msg("serving /metrics")
	}
	return nil
}

// openWorkers opens the worker control socket of each host that has one.
func (d *daemon) openWorkers() error {
	ws := d.spec.Workers
	if !ws.Enabled {
		return nil
	}
	lim := workerLimits{maxOutstanding: ws.MaxOutstanding, params: shm.Params{
		SQEntries: uint64(ws.RingEntries), CQEntries: uint64(ws.RingEntries),
		ArenaSize: uint64(ws.MaxBytes), PoolPages: uint64(ws.PoolBytes / shm.PageSize),
	}}
	for i, h := range d.hosts {
		path := d.spec.Ports[i].WorkersSocket
		if path == "" && i == 0 {
			path = ws.Socket
		}
		if path == "" {
			continue
		}
		hub, err := newWorkerHub(h, path, ws.AllowUIDs, ws.AllowGIDs, lim)
		if err != nil {
			return fmt.Errorf("workers of %s: %w", h.me.ip4(), err)
		}
		h.workers = hub
		d.hubs = append(d.hubs, hub)
		d.log.Info().Str("host", h.me.ip4()).Str("socket", path).Msg("worker control socket open")
	}
	return nil
}

// stop stops the loops (each drains on its own thread), then the ports,
// and closes the capture.
func (d *daemon) stop() error {
	first := d.stopLoops()
	if err := d.stopPorts(); err != nil && first == nil {
		first = err
	}
	return first
}

// stopLoops stops polling (each loop drains on its own thread); the ports
// stay up. A memif port's peer must not be polled while the port goes down.
func (d *daemon) stopLoops() error {
	var first error
	if d.metrics != nil {
		d.metrics.Close()
		d.metrics = nil
	}
	if d.housekeeping != nil {
		d.housekeeping.Stop()
		d.housekeeping = nil
	}
	for _, hub := range d.hubs { // workers detach while the loops still run
		if err := hub.close(); err != nil && first == nil {
			first = err
		}
	}
	d.hubs = nil
	for _, l := range d.loops {
		if err := l.Stop(5 * time.Second); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stopPorts stops the ports, closes the capture and logs each host's counters.
func (d *daemon) stopPorts() error {
	var first error
	for _, p := range d.ports {
		p.Stop()
	}
	if d.capture != nil {
		if err := d.capture.Close(); err != nil && first == nil {
			first = err
		}
	}
	for i, h := range d.hosts {
		if i >= len(d.loops) {
			break
		}
		st := d.loops[i].Stats()
		d.log.Info().Str("host", h.me.ip4()).Uint64("passes", st.Passes).Uint64("packets", st.Packets).
			Uint64("arp_requests", h.stack.ARPRequests).Uint64("echo_requests", h.stack.EchoRequests).Msg("stopped")
	}
	return first
}

// newClock returns the data path's monotonic clock (ns) and the offset
// that turns its readings into Unix time (for capture timestamps). It
// starts at 1 s, not 0: the engine treats a zero time as "never".
func newClock() (start time.Time, clock func() int64, wallOff int64) {
	start = time.Now()
	const origin = int64(time.Second)
	return start, func() int64 { return int64(time.Since(start)) + origin }, start.UnixNano() - origin
}

func (a hostAddr) ip4() string { return netip.AddrFrom4(a.ip).String() }
