// Package demo is the embedded demo of homa-dpdk: two Homa hosts in one
// process on virtual devices, exchanging RPCs from applications inside
// their polling loop (Run), or serving shared-memory workers
// (ServeWorkers) for the examples and the perf harness. It needs no NIC
// and no config file.
package demo

import (
	_ "embed"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/rs/zerolog"
)

// Config is the in-loop demo's: how long, which sizes, how many RPCs at
// once, and where to print.
type Config struct {
	Duration    time.Duration
	Sizes       []int
	Concurrency int // RPCs outstanding at once
	Capture     string
	CaptureLast int
	// CaptureSnaplen is the bytes kept per captured packet (0: the
	// config's capture.snaplen, 128).
	CaptureSnaplen int
	// Drop is the fraction of received packets each host drops
	// (faults.drop), so that RESENDs show in the figures and a capture.
	Drop float64
	// Shards runs each host as this many shards (--shards;
	// ports[].lcores), shard s of both on the s-th EAL worker lcore
	// (shared when there are fewer), each client shard keeping its share
	// of Concurrency outstanding (0 or 1: one loop on lcore 1 runs both
	// hosts).
	Shards int
	// Copier gives each host (each shard) a copier thread pinned to
	// CopierCPU for its receive copies (ports[].copier_cpus); without
	// it the loop copies.
	Copier    bool
	CopierCPU int
	// Metrics is the daemon's metrics.address, host:port ("": none),
	// over HOMA_METRICS_ADDRESS, as a flag is (homa-dpdk demo passes
	// 127.0.0.1:9464, where homa-dpdk stats reads, or the environment's
	// when --metrics is not given). The default address in use (another
	// daemon's) leaves the demo without an endpoint, not failed.
	Metrics string
	Out     io.Writer
}

// Validate checks c, naming the flag of each bad field.
func (c Config) Validate() error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("--seconds %v: want a positive duration", c.Duration.Seconds())
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency %d: want at least 1", c.Concurrency)
	case len(c.Sizes) == 0:
		return fmt.Errorf("--sizes: want at least one size")
	case c.CaptureSnaplen != 0 && (c.CaptureSnaplen < 64 || c.CaptureSnaplen > 65535):
		return fmt.Errorf("--capture-snaplen %d: want 64..65535", c.CaptureSnaplen)
	case c.Drop < 0 || c.Drop >= 1:
		return fmt.Errorf("--drop %v: want a fraction in [0, 1)", c.Drop)
	case c.Shards < 0 || c.Shards > 16:
		return fmt.Errorf("--shards %d: want 1..16", c.Shards)
	case c.Copier && (c.CopierCPU < 0 || c.CopierCPU >= runtime.NumCPU()):
		return fmt.Errorf("--copier-cpu %d: want a CPU below %d (or -1: none)", c.CopierCPU, runtime.NumCPU())
	}
	return checkMetrics(c.Metrics)
}

// checkMetrics checks a --metrics address.
func checkMetrics(addr string) error {
	if _, _, err := net.SplitHostPort(addr); addr != "" && err != nil {
		return fmt.Errorf("--metrics %q: want host:port (e.g. 127.0.0.1:9464), or \"\" for none", addr)
	}
	return nil
}

// metricsNote is what the demo's start line says of its metrics
// endpoint: where homa-dpdk stats reads it, or why there is none ("":
// none was asked for).
func metricsNote(dm *daemon.Daemon, asked string) string {
	switch addr := dm.MetricsAddress(); {
	case addr != "":
		stats := "homa-dpdk stats"
		if addr != defaultMetrics {
			stats += " --metrics " + addr
		}
		return fmt.Sprintf("; metrics on http://%s/metrics (%s)", addr, stats)
	case asked != "":
		return fmt.Sprintf("; no metrics: %s is in use (--metrics ADDR picks another)", asked)
	}
	return ""
}

// defaultMetrics is where homa-dpdk stats reads by default: the demo's
// default --metrics.
const defaultMetrics = "127.0.0.1:9464"

// shardLcores are the lcores of a host's n shards: shard s on the s-th
// EAL worker lcore, shared when there are fewer.
func shardLcores(n int) ([]uint, error) {
	workers := dpdk.WorkerLcores()
	if len(workers) == 0 {
		return nil, fmt.Errorf("demo: no EAL worker lcore for its loops")
	}
	ls := make([]uint, n)
	for s := range ls {
		ls[s] = workers[s%len(workers)]
	}
	return ls, nil
}

// lingerNs is how long the demo keeps polling after the last response, so
// that the server's NEED_ACK and the client's ACK end the last RPCs and no
// RPC state is left behind (request_ack_ticks is 2 ms).
const lingerNs = int64(20 * time.Millisecond)

// demoClient is the in-loop application of the client host.
type demoClient struct {
	cfg     Config
	h       *host.Host
	port    *engine.Port
	dst     engine.Addr
	msgs    [][]byte            // one message per size, reused
	started map[uint64]rpcStart // outstanding RPCs
	bufs    bufPool             // the responses' buffers
	results []engine.Message    // delivered since the last pass
	hist    []*hdrhistogram.Histogram
	bytes   int64
	next    int
	failed  error
	stopAt  int64
	done    bool
	doneAt  int64 // when the last response arrived
	// finished is set, for the goroutine waiting on the demo, once the
	// loop has seen the last response or a failure.
	finished atomic.Bool
}

type rpcStart struct {
	size int // index into cfg.Sizes
	at   int64
}

func (d *demoClient) run(now int64) {
	if d.failed != nil || (d.done && now >= d.doneAt+lingerNs) {
		d.finished.Store(true)
		return
	}
	if d.done {
		return // lingering: the last RPCs' NEED_ACK and ACK go out
	}
	for i, m := range d.results {
		d.results[i] = engine.Message{}
		s, known := d.started[m.ID]
		delete(d.started, m.ID)
		if m.Err != nil || !known {
			d.failed = fmt.Errorf("RPC %d: %v", m.ID, m.Err)
			return
		}
		if len(m.Data) != d.cfg.Sizes[s.size] {
			d.failed = fmt.Errorf("RPC %d: %d bytes back for %d sent", m.ID, len(m.Data), d.cfg.Sizes[s.size])
			return
		}
		d.hist[s.size].RecordValue((now - s.at) / 1000) // µs
		d.bytes += 2 * int64(len(m.Data))
		d.bufs.put(m.Data)
	}
	d.results = d.results[:0]
	if now >= d.stopAt {
		if d.done = len(d.started) == 0; d.done {
			d.doneAt = now
		}
		return
	}
	for len(d.started) < d.cfg.Concurrency {
		i := d.next % len(d.cfg.Sizes)
		d.next++
		id, err := d.port.Send(d.dst, d.msgs[i])
		if err != nil {
			d.failed = err
			return
		}
		d.started[id] = rpcStart{size: i, at: now}
	}
}

// DefaultYAML is the daemon config the demo runs with (demo.yaml): the
// README's first command needs no config file.
//
//go:embed demo.yaml
var DefaultYAML string

// ringName names the demo's ring ports, as DefaultYAML's devices do.
const ringName = "demo" // rte_eth_from_rings names its ports net_ring_demo0 and net_ring_demo1

// runSeq numbers the demos a process runs (Run).
var runSeq atomic.Int64

// Run runs the demo: EAL must be up, with lcore 1 a worker lcore. The
// two hosts start through the daemon's phases (daemon.Start with
// DefaultYAML) on ring ports the demo makes first.
func Run(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	spec, err := config.Load(config.Source{YAML: DefaultYAML})
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	spec.Capture.File, spec.Capture.Last = cfg.Capture, cfg.CaptureLast
	spec.Faults.Drop = cfg.Drop
	spec.Metrics.Address = cfg.Metrics
	if cfg.CaptureSnaplen > 0 {
		spec.Capture.Snaplen = cfg.CaptureSnaplen
	}
	n := max(cfg.Shards, 1)
	if n > 1 {
		ls, err := shardLcores(n)
		if err != nil {
			return err
		}
		for i := range spec.Ports {
			spec.Ports[i].Lcores = ls
		}
	}
	if cfg.Copier {
		for i := range spec.Ports {
			spec.Ports[i].CopierCPUs = slices.Repeat([]uint{uint(cfg.CopierCPU)}, n)
		}
	}
	// A ring per shard and direction: shard s's packets reach shard s's
	// RX queue, as a NIC's flow rules would steer them.
	// The process's first demo has DefaultYAML's ports; a later one (the
	// tests run several) names its own: ethdev keeps a closed port's name.
	name := ringName
	if k := runSeq.Add(1); k > 1 {
		name = fmt.Sprintf("%s%dr", ringName, k)
		for i := range spec.Ports {
			spec.Ports[i].Device = fmt.Sprintf("net_ring_%s%d", name, i)
		}
	}
	ports, rings, err := host.NewShardRingPorts(name, spec.Ports[0].TxQueues, n)
	defer host.CloseShardRingPorts(ports, rings)
	if err != nil {
		return err
	}
	for i := range spec.Ports {
		spec.Ports[i].RxQueues = n
	}
	var clients []*demoClient
	var start time.Time
	prepare := func(shards [][]*host.Host) error {
		for s := range n {
			if err := serveEcho(shards[1][s]); err != nil {
				return err
			}
		}
		start = time.Now()
		dst := engine.Addr{IP: netip.AddrFrom4(shards[1][0].IP()), Port: 99}
		for s := range n {
			client := shards[0][s]
			cl, err := client.Endpoint().OpenClient()
			if err != nil {
				return err
			}
			c := cfg
			c.Concurrency = max(1, (cfg.Concurrency+n-1-s)/n) // this shard's share
			d := newDemoClient(c, client, cl, dst, client.Clock()+cfg.Duration.Nanoseconds())
			cl.SetHooks(d.bufs.hooks(func(m engine.Message) { d.results = append(d.results, m) }))
			client.AddApp(host.AppFunc(d.run))
			clients = append(clients, d)
		}
		return nil
	}
	dm, err := daemon.Start(spec, demoLog(), daemon.Options{PrepareShards: prepare, SkipEAL: true, MetricsOptional: true})
	if err != nil {
		return err
	}
	loops := "one polling loop on lcore 1"
	if n > 1 {
		loops = fmt.Sprintf("%d shards each, shard s of both on lcore %v[s]", n, spec.Ports[0].Lcores)
	}
	fmt.Fprintf(cfg.Out, "demo: Homa hosts 10.0.0.1 (client) and 10.0.0.2 (echo server) on a net_ring pair, %d TX queues each, %s; %d RPCs outstanding, sizes %v, %v%s\n",
		spec.Ports[0].TxQueues, loops, cfg.Concurrency, cfg.Sizes, cfg.Duration, metricsNote(dm, cfg.Metrics))
	deadline := time.Now().Add(cfg.Duration + 30*time.Second)
	for time.Now().Before(deadline) && !allDoneOrFailed(clients) {
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := dm.Stop(); err != nil {
		return err
	}
	for _, d := range clients {
		if d.failed != nil {
			hosts := dm.Hosts()
			return fmt.Errorf("demo: %w\n  %s\n  %s", d.failed, hosts[0].Summary(), hosts[1].Summary())
		}
		if !d.done {
			return fmt.Errorf("demo: %d RPCs still outstanding %v after the end", len(d.started), 30*time.Second)
		}
	}
	loopCount := 1
	if n > 1 {
		loopCount = len(slices.Compact(slices.Sorted(slices.Values(spec.Ports[0].Lcores))))
	}
	report(cfg, clients, elapsed, dm.Shards(), loopCount)
	return nil
}

// serveEcho makes server an echo server on port 99: requests arrive in
// buffers of its pool and are echoed from them; the engine gives each
// back when its response is acknowledged.
func serveEcho(server *host.Host) error {
	srv, err := server.Endpoint().Bind(99)
	if err != nil {
		return err
	}
	srvBufs := bufPool{}
	var reqs []engine.Message
	sh := srvBufs.hooks(func(m engine.Message) { reqs = append(reqs, m) })
	sh.OutDone = func(_ uint64, _ engine.Addr, resp []byte) { srvBufs.put(resp) }
	srv.SetHooks(sh)
	server.AddApp(host.AppFunc(func(int64) {
		for _, m := range reqs {
			if srv.Reply(m, m.Data) != nil {
				srvBufs.put(m.Data)
			}
		}
		clear(reqs)
		reqs = reqs[:0]
	}))
	return nil
}

func allDoneOrFailed(clients []*demoClient) bool {
	for _, d := range clients {
		if !d.doneOrFailed() {
			return false
		}
	}
	return len(clients) > 0
}

// demoLog is the daemon's log in the demo: warnings and errors, to
// stderr.
func demoLog() zerolog.Logger {
	return daemon.NewLogger(os.Stderr, "console", "warn")
}

func newDemoClient(cfg Config, h *host.Host, port *engine.Port, dst engine.Addr, stopAt int64) *demoClient {
	d := &demoClient{cfg: cfg, h: h, port: port, dst: dst, started: map[uint64]rpcStart{}, stopAt: stopAt, bufs: bufPool{}}
	for _, s := range cfg.Sizes {
		msg := make([]byte, s)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		d.msgs = append(d.msgs, msg)
		d.hist = append(d.hist, hdrhistogram.New(1, 60_000_000, 3))
	}
	return d
}

func (d *demoClient) doneOrFailed() bool { return d.finished.Load() }

// report prints the clients' round trips, merged, and the hosts'
// counters: every shard's, summed.
func report(cfg Config, clients []*demoClient, elapsed time.Duration, shards [][]*host.Host, loops int) {
	w := cfg.Out
	fmt.Fprintf(w, "\n%10s %8s %10s %10s %10s %10s\n", "size (B)", "RPCs", "P50 µs", "P99 µs", "P99.9 µs", "max µs")
	total, bytes := int64(0), int64(0)
	for i := range cfg.Sizes {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for _, d := range clients {
			h.Merge(d.hist[i])
		}
		total += h.TotalCount()
		fmt.Fprintf(w, "%10d %8d %10d %10d %10d %10d\n", cfg.Sizes[i], h.TotalCount(),
			h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(99.9), h.Max())
	}
	for _, d := range clients {
		bytes += d.bytes
	}
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "\n%d RPCs in %.1f s: %.0f RPCs/s, %.2f Gbps of messages (requests + responses)\n",
		total, secs, float64(total)/secs, float64(bytes)*8/secs/1e9)
	sums := map[string]uint64{}
	for _, c := range shards[0] {
		m := c.Endpoint().Metrics()
		m.Each(func(name string, v uint64) { sums[name] += v })
	}
	var parts []string
	for _, name := range []string{"packets_sent_DATA", "packets_sent_GRANT", "packets_sent_NEED_ACK", "packets_sent_ACK", "resent_packets", "rpc_timeouts"} {
		parts = append(parts, fmt.Sprintf("%s=%d", name, sums[name]))
	}
	fmt.Fprintf(w, "client counters: %s\n", strings.Join(parts, " "))
	// The loops run the shards of both hosts (one loop: both hosts),
	// busy: a loop's core's time per packet event (a packet sent or
	// received by either host, control packets too).
	events := uint64(0)
	for _, hs := range shards {
		for _, h := range hs {
			events += packetEvents(h.Endpoint().Metrics())
		}
	}
	fmt.Fprintf(w, "packet events: %d (sent or received, both hosts, %d loops): %.0f ns each on a loop's core\n",
		events, loops, float64(elapsed.Nanoseconds())*float64(loops)/float64(max(events, 1)))
}

// packetEvents is every packet an endpoint sent or received.
func packetEvents(m engine.Metrics) uint64 {
	n := uint64(0)
	for i := range m.PacketsSent {
		n += m.PacketsSent[i] + m.PacketsRcvd[i]
	}
	return n
}

// bufPool lends message buffers by length and takes them back, so that
// the demo's hosts reassemble messages into memory they reuse, as a
// worker's receive pool is, instead of a new heap slice per message: the
// garbage collector would otherwise clear and sweep a megabyte per
// message on the other core, which is the demo's cost, not the data
// path's. Both hosts run on one loop; each has its own pool.
type bufPool map[int][][]byte

func (p bufPool) get(n int) []byte {
	l := p[n]
	if k := len(l); k > 0 {
		b := l[k-1]
		p[n] = l[:k-1]
		return b
	}
	return make([]byte, n)
}

func (p bufPool) put(b []byte) { p[len(b)] = append(p[len(b)], b) }

// hooks are a port's hooks that take its messages' buffers from p and
// hand each message to deliver; a message that ends undelivered gives its
// buffer back.
func (p bufPool) hooks(deliver func(engine.Message)) engine.PortHooks {
	return engine.PortHooks{
		Deliver:     deliver,
		RecvBuf:     func(n int) ([]byte, bool) { return p.get(n), true },
		FreeRecvBuf: p.put,
	}
}
