// Package daemon turns a config.Spec into a running homa-dpdk: EAL, the
// ports, one host (host.Host) per port on its own polling loop (lcore),
// the worker hubs (hub.Hub), the capture and the metrics endpoint, built
// in named phases (config, EAL, validate, mempools, ports, link, launch)
// so that a failure says where it stopped. Stop takes it down in order.
//
// Start is where to begin reading; phases.go holds the phases, plan.go
// the plan of the ports' shards, queues and loops that the validate phase
// makes once and the later phases read, metrics.go the Prometheus
// collector.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// PhaseError is a start-up failure in a named phase (config, EAL,
// validate, mempools, ports, link, launch), so the message says where it
// stopped.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return "start-up phase " + e.Phase + ": " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// InPhase wraps a non-nil err as a failure of phase.
func InPhase(phase string, err error) error {
	if err == nil {
		return nil
	}
	return &PhaseError{phase, err}
}

// Options are what a caller of Start adds to the Spec.
type Options struct {
	// Prepare, if not nil, sees the hosts after they are built and before
	// their loops start: the place to give a host an in-loop application
	// (host.AddApp).
	Prepare func([]*host.Host) error
	// PrepareShards, if not nil, sees every shard of every port (a port
	// of several lcores, ports[].lcores; the first of each is the host
	// Prepare sees), after Prepare.
	PrepareShards func([][]*host.Host) error
	// SkipEAL: EAL is up already (the caller initialised it).
	SkipEAL bool
	// MetricsOptional: a metrics.address already in use is logged and
	// the daemon runs without its endpoint (MetricsAddress is ""),
	// instead of failing launch. The demo's default address is so.
	MetricsOptional bool
}

// Daemon is a running homa-dpdk: its ports, loops, hosts and hubs.
type Daemon struct {
	Log          zerolog.Logger
	opts         Options
	spec         *config.Spec
	plan         plan               // the ports' shards, queues and loops (validate)
	started      []host.StartedPort // per port: what SetupPort did
	metrics      *http.Server
	ports        []*dpdk.Port
	vdevs        []string // vdevs the daemon made (ports[].device with arguments), removed at stop
	pools        []*dpdk.Mempool
	hosts        []*host.Host   // per port: its host, or its first shard
	shards       [][]*host.Host // per port: its shards (one: hosts[i])
	loops        []*lcore.Loop  // one per distinct lcore
	loopOf       []*lcore.Loop  // per host: the loop that runs it
	hubs         []*hub.Set
	copiers      map[uint]*host.Copier // by CPU; closed after the loops and the hosts' drains
	hubOf        []*hub.Set            // per port, or nil
	housekeeping *lcore.Housekeeping
	capture      *dpdk.Capture
	seq          int64 // this daemon's number in the process: its pools' names are its own
}

// daemonSeq numbers the daemons a process starts (tests start several;
// DPDK's pool names are process-wide).
var daemonSeq atomic.Int64

// ErrStopped is the error of a start-up that its context stopped (a
// SIGTERM or SIGINT to homa-dpdk run): wrapped, beside the context's
// cause, in the PhaseError of the phase it stopped in.
var ErrStopped = errors.New("stopped during start-up")

// Start turns a Spec into live objects, phase by phase; on failure,
// what was started is stopped again.
func Start(spec *config.Spec, log zerolog.Logger, opts Options) (*Daemon, error) {
	return StartContext(context.Background(), spec, log, opts)
}

// StartContext is Start that ctx can stop: between phases, and within
// the wait for the links (at once, not after its 10 s). What the phases
// made so far is then released (see abort) and a log line names the
// phase; the error wraps ErrStopped. A ctx done after the last phase is
// the caller's to see: the daemon is returned running.
func StartContext(ctx context.Context, spec *config.Spec, log zerolog.Logger, opts Options) (*Daemon, error) {
	d := &Daemon{spec: spec, Log: log, opts: opts, seq: daemonSeq.Add(1)}
	if err := Preflight(spec); err != nil {
		return nil, InPhase("config", err)
	}
	if ctx.Err() != nil {
		return nil, d.abort(ctx, "config")
	}
	if err := spec.Normalize(); err != nil { // Load did; a Spec built in Go may not have
		return nil, InPhase("config", err)
	}
	if err := makeMemifSocketDirs(spec); err != nil {
		return nil, InPhase("config", err)
	}
	for _, sock := range memifServerSockets(spec) {
		if removeStaleSocket(sock) {
			log.Warn().Str("socket", sock).Msg("removed a stale memif socket (its server was killed)")
		}
	}
	if !opts.SkipEAL {
		eal := spec.EAL
		if spec.Log.DPDKLevel != "" {
			eal = append([]string{"--log-level=" + spec.Log.DPDKLevel}, eal...)
		}
		if _, err := dpdk.Init(eal); err != nil {
			return nil, InPhase("EAL", err)
		}
		log.Info().Strs("eal", spec.EAL).Msg("EAL up")
		if ctx.Err() != nil {
			return nil, d.abort(ctx, "EAL")
		}
	}
	if err := d.validate(); err != nil {
		d.Stop() // EAL's vdevs are up: a memif server's socket file goes with its port
		return nil, InPhase("validate", err)
	}
	applyRuntime(spec.Runtime, len(d.plan.Loops))
	if ctx.Err() != nil {
		return nil, d.abort(ctx, "validate")
	}
	if err := d.makePools(); err != nil {
		d.Stop()
		return nil, InPhase("mempools", err)
	}
	if ctx.Err() != nil {
		return nil, d.abort(ctx, "mempools")
	}
	for i := range spec.Ports {
		if err := d.setupPort(i); err != nil {
			d.Stop()
			return nil, InPhase("ports", err)
		}
		if ctx.Err() != nil {
			return nil, d.abort(ctx, "ports")
		}
	}
	deadline := time.Now().Add(linkWait)
	d.logMemifWaits()
	err := d.dialClients(ctx, deadline)
	if err == nil {
		err = host.WaitLinksContext(ctx, d.ports, time.Until(deadline), func(i int, l dpdk.Link) {
			d.Log.Info().Str("port", d.ports[i].Name).Str("link", l.String()).Msg("link up")
		})
	}
	if ctx.Err() != nil {
		return nil, d.abort(ctx, "link")
	}
	if err != nil {
		if hint := memifLinkHint(spec, func(i int) bool { l, lerr := d.ports[i].Link(); return lerr == nil && l.Up }); hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		d.Stop()
		return nil, InPhase("link", err)
	}
	d.linkMemoryResident()
	if err := d.launch(); err != nil {
		d.Stop()
		return nil, InPhase("launch", err)
	}
	return d, nil
}

// linkWait is how long the link phase waits for every port's link (and
// a memif client's server: dialClients) before start-up fails.
const linkWait = 10 * time.Second

// abort ends a start-up that ctx stopped in phase: it stops what was
// started, as Stop does after start-up (EAL's vdev ports closed with
// the rest, a memif server's socket file too). It logs the phase and
// returns the error that wraps ErrStopped.
func (d *Daemon) abort(ctx context.Context, phase string) error {
	cause := context.Cause(ctx)
	start := time.Now()
	err := d.Stop()
	ev := d.Log.Info()
	if err != nil {
		ev = d.Log.Warn().Err(err)
	}
	ev.Str("phase", phase).Str("reason", cause.Error()).Str("took", took(time.Since(start))).Msg("stopped during start-up")
	return InPhase(phase, fmt.Errorf("%w: %w", ErrStopped, cause))
}

// closeVdevPorts closes the ports of the vdevs EAL was given, where the
// daemon brought EAL up itself: a net_memif server deletes its socket
// file only when its port is closed (stopped, it keeps the file, and a
// process that exits so leaves it behind). It returns the first error.
func (d *Daemon) closeVdevPorts() error {
	if d.opts.SkipEAL || !dpdk.Initialized() {
		return nil
	}
	var err error
	for _, v := range ealVdevs(d.spec.EAL) {
		name, _, _ := strings.Cut(v, ",")
		if p, perr := dpdk.PortByName(name); perr == nil {
			if cerr := d.timed("close port "+name, p.Close); cerr != nil && err == nil {
				err = fmt.Errorf("close %s: %w", name, cerr)
			}
		}
	}
	return err
}

// Preflight checks, before EAL and the ports are up, what the config
// names on this machine that a later phase would find wanting: the
// capture file must be writable where it is to go, and no other memif
// server may listen on a memif server's socket.
func Preflight(spec *config.Spec) error {
	if f := spec.Capture.File; f != "" {
		if err := writable(f); err != nil {
			return fmt.Errorf("capture.file: %w", err)
		}
	}
	return memifSocketInUse(spec)
}

// writable reports why a file could not be written at path (its
// directory missing or not writable, or the file itself read-only),
// without creating it.
func writable(path string) error {
	if err := unix.Access(path, unix.W_OK); err == nil {
		return nil
	} else if !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &os.PathError{Op: "create in", Path: dir, Err: err}
	}
	return nil
}

// linkMemoryResident makes the shared memory of the memif links resident
// before the loops start (dpdk.MemifResident): left to the loops, each
// fresh buffer page costs a fault on the data path, and a fresh daemon's
// first thousand small RPCs were several times slower than the rest. A
// failure (a kernel before 5.14) leaves the pages to be faulted in as
// used, as before: logged, not fatal. A memif link that comes back after
// a peer left has new regions, faulted in as used.
func (d *Daemon) linkMemoryResident() {
	memif := false
	for _, st := range d.started {
		memif = memif || st.Driver == "net_memif"
	}
	if !memif {
		return
	}
	start := time.Now()
	st, err := dpdk.MemifResident()
	if err != nil {
		d.Log.Warn().Err(err).Msg("memif regions left to be faulted in as used")
		return
	}
	d.Log.Info().Int("mappings", st.Mappings).Uint64("bytes", st.Bytes).Str("took", took(time.Since(start))).Msg("memif regions made resident")
}

// Hosts are the daemon's hosts, one per port, in the Spec's order.
func (d *Daemon) Hosts() []*host.Host { return d.hosts }

// MetricsAddress is the address the metrics endpoint listens on
// (metrics.address, its port chosen when it gave 0), or "" when there is
// none.
func (d *Daemon) MetricsAddress() string {
	if d.metrics == nil {
		return ""
	}
	return d.metrics.Addr
}

// Loops are the polling loops, one per distinct lcore.
func (d *Daemon) Loops() []*lcore.Loop { return d.loops }

// LoopOf is the loop that runs host i (nil before launch).
func (d *Daemon) LoopOf(i int) *lcore.Loop {
	if i < len(d.loopOf) {
		return d.loopOf[i]
	}
	return nil
}

func applyRuntime(rs config.RuntimeSpec, loops int) {
	debug.SetGCPercent(rs.GOGC)
	if rs.GOMemLimit > 0 {
		debug.SetMemoryLimit(int64(rs.GOMemLimit))
	}
	lcore.SetGOMAXPROCS(loops)
	if rs.GOMAXPROCS > 0 {
		lcore.SetGOMAXPROCS(rs.GOMAXPROCS - 2)
	}
}

// Stop stops the loops (each drains on its own thread), then the ports,
// closes the ports of EAL's vdevs where the daemon brought EAL up itself
// (a memif server's socket file goes with its port), and closes the
// capture. The mbuf pools stay until the process exits:
// ports the daemon did not make (the demo's rings, a caller's) may hold
// mbufs of them in their queues until their owner closes them; each
// daemon's pools have names of their own, so another daemon can start in
// the same process.
func (d *Daemon) Stop() error {
	first := d.StopLoops()
	if err := d.StopPorts(); err != nil && first == nil {
		first = err
	}
	return first
}

// stopGrace is how long a stop lets packets queued for a peer leave
// before it drops them.
const stopGrace = time.Second

// slowStop is how long a step of a stop may take before it is logged
// (with its duration): a stop should take milliseconds.
const slowStop = 250 * time.Millisecond

// timed runs one step of a stop and logs it if it was slow.
func (d *Daemon) timed(step string, f func() error) error {
	start := time.Now()
	err := f()
	if el := time.Since(start); el > slowStop {
		d.Log.Warn().Str("step", step).Str("took", took(el)).Msg("slow stop")
	}
	return err
}

// took is a duration for a log line, with its unit (zerolog's Dur is a
// bare number of milliseconds), in ASCII so that the console log need not
// quote it: 0.429ms, 250.1ms, 1.012s.
func took(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return strconv.FormatFloat(float64(d.Round(time.Microsecond))/1e6, 'f', -1, 64) + "ms"
}

// StopLoops stops polling (each loop drains on its own thread); the
// ports stay up. (A memif peer may poll, or leave, meanwhile: the burst
// guard and the interrupt thread make either safe, see dpdk/guard.go and
// dpdk/intr.go.)
func (d *Daemon) StopLoops() error {
	var first error
	if d.metrics != nil {
		d.metrics.Close()
		d.metrics = nil
	}
	if d.housekeeping != nil {
		d.housekeeping.Stop()
		d.housekeeping = nil
	}
	// Workers detach while the loops still run; a hub's Close waits until
	// every packet sent from a worker's memory has been freed. A peer
	// that takes no more packets (gone, or no longer polling) would hold
	// them, and the stop, for good: after stopGrace they are dropped.
	grace := time.AfterFunc(stopGrace, func() {
		for _, hs := range d.shards {
			for _, h := range hs {
				h.StopSending()
			}
		}
	})
	for i, hb := range d.hubs {
		if err := d.timed(fmt.Sprintf("close the worker hub of host %d", i), hb.Close); err != nil && first == nil {
			first = err
		}
	}
	grace.Stop()
	d.hubs = nil
	for i, l := range d.loops {
		if err := d.timed(fmt.Sprintf("stop loop %d", i), func() error { return l.Stop(5 * time.Second) }); err != nil && first == nil {
			first = err
		}
	}
	if len(d.loops) == 0 { // never launched: free what the hosts hold here
		for _, hs := range d.shards {
			for _, h := range hs {
				h.Drain()
			}
		}
	}
	for _, cp := range d.copiers { // the drains settled their copies
		cp.Close()
	}
	d.copiers = nil
	return first
}

// StopPorts stops the ports, removes the vdevs the daemon made, closes
// the ports of EAL's vdevs where the daemon brought EAL up itself
// (closeVdevPorts), closes the capture and logs each host's counters.
func (d *Daemon) StopPorts() error {
	var first error
	for _, p := range d.ports {
		// A memif port whose peer leaves now is torn down on EAL's
		// interrupt thread; its Stop runs there too, before or after
		// that teardown, never beside it (dpdk/intr.go).
		d.timed("stop port "+p.Name, func() error { p.Stop(); return nil })
	}
	for _, name := range d.vdevs {
		if err := d.timed("remove "+name, func() error { return dpdk.RemoveVdev(name) }); err != nil && first == nil {
			first = fmt.Errorf("remove %s: %w", name, err)
		}
	}
	d.ports, d.vdevs = nil, nil
	if err := d.closeVdevPorts(); err != nil && first == nil {
		first = err
	}
	if d.capture != nil {
		if err := d.capture.Close(); err != nil && first == nil {
			first = err
		}
		d.capture = nil
	}
	for i, h := range d.hosts {
		if d.LoopOf(i) == nil {
			break
		}
		st, sc, l := d.LoopOf(i).Stats(), h.Stack(), h.Link()
		d.Log.Info().Str("host", h.Addr().String()).Uint64("passes", st.Passes).Uint64("packets", st.Packets).
			Uint64("arp_requests", sc.ARPRequests).Uint64("echo_requests", sc.EchoRequests).
			Uint64("link_downs", l.Downs).Uint64("redials", l.Redials).Msg("stopped")
	}
	if g := dpdk.BurstGuardStats(); g.Waits > 0 {
		d.Log.Info().Uint64("waits", g.Waits).Uint64("timeouts", g.Timeouts).Msg("burst guard: unmappings that waited for a running burst")
	}
	return first
}

// Shards are every port's shards, in the Spec's order (one each for a
// port without ports[].lcores: Hosts()[i]).
func (d *Daemon) Shards() [][]*host.Host { return d.shards }
