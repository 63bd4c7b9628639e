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
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/daemon"
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
	Out  io.Writer
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
	}
	return nil
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
	if cfg.CaptureSnaplen > 0 {
		spec.Capture.Snaplen = cfg.CaptureSnaplen
	}
	ports, rings, err := host.NewRingPorts(ringName, spec.Ports[0].TxQueues)
	defer host.CloseRingPorts(ports, rings)
	if err != nil {
		return err
	}
	var d *demoClient
	var start time.Time
	prepare := func(hosts []*host.Host) error {
		client, server := hosts[0], hosts[1]
		srv, err := server.Endpoint().Bind(99)
		if err != nil {
			return err
		}
		// Requests arrive in buffers of the server's pool and are echoed
		// from them; the engine gives each back when its response is
		// acknowledged.
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
		cl, err := client.Endpoint().OpenClient()
		if err != nil {
			return err
		}
		start = time.Now()
		d = newDemoClient(cfg, client, cl, engine.Addr{IP: netip.AddrFrom4(server.IP()), Port: 99}, client.Clock()+cfg.Duration.Nanoseconds())
		cl.SetHooks(d.bufs.hooks(func(m engine.Message) { d.results = append(d.results, m) }))
		client.AddApp(host.AppFunc(d.run))
		return nil
	}
	dm, err := daemon.Start(spec, demoLog(), daemon.Options{Prepare: prepare, SkipEAL: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "demo: Homa hosts 10.0.0.1 (client) and 10.0.0.2 (echo server) on a net_ring pair, %d TX queues each, one polling loop on lcore 1; %d RPCs outstanding, sizes %v, %v\n",
		spec.Ports[0].TxQueues, cfg.Concurrency, cfg.Sizes, cfg.Duration)
	deadline := time.Now().Add(cfg.Duration + 30*time.Second)
	for time.Now().Before(deadline) && !d.doneOrFailed() {
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := dm.Stop(); err != nil {
		return err
	}
	if d.failed != nil {
		hosts := dm.Hosts()
		return fmt.Errorf("demo: %w\n  %s\n  %s", d.failed, hosts[0].Summary(), hosts[1].Summary())
	}
	if !d.done {
		return fmt.Errorf("demo: %d RPCs still outstanding %v after the end", len(d.started), 30*time.Second)
	}
	d.report(elapsed, dm.Hosts())
	return nil
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

func (d *demoClient) report(elapsed time.Duration, hosts []*host.Host) {
	w := d.cfg.Out
	fmt.Fprintf(w, "\n%10s %8s %10s %10s %10s %10s\n", "size (B)", "RPCs", "P50 µs", "P99 µs", "P99.9 µs", "max µs")
	total := int64(0)
	for i, h := range d.hist {
		total += h.TotalCount()
		fmt.Fprintf(w, "%10d %8d %10d %10d %10d %10d\n", d.cfg.Sizes[i], h.TotalCount(),
			h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(99.9), h.Max())
	}
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "\n%d RPCs in %.1f s: %.0f RPCs/s, %.2f Gbps of messages (requests + responses)\n",
		total, secs, float64(total)/secs, float64(d.bytes)*8/secs/1e9)
	m := d.h.Endpoint().Metrics()
	var parts []string
	m.Each(func(name string, v uint64) {
		switch name {
		case "packets_sent_DATA", "packets_sent_GRANT", "packets_sent_ACK", "packets_sent_NEED_ACK", "resent_packets", "rpc_timeouts":
			parts = append(parts, fmt.Sprintf("%s=%d", name, v))
		}
	})
	fmt.Fprintf(w, "client counters: %s\n", strings.Join(parts, " "))
	// One loop runs both hosts, busy: its core's time per packet event
	// (a packet sent or received by either host, control packets too).
	events := uint64(0)
	for _, h := range hosts {
		events += packetEvents(h.Endpoint().Metrics())
	}
	fmt.Fprintf(w, "packet events: %d (sent or received, both hosts): %.0f ns each on the loop's core\n",
		events, float64(elapsed.Nanoseconds())/float64(max(events, 1)))
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
