// Package demo is the embedded demo of homa-dpdk: two Homa hosts in one
// process on virtual devices, exchanging RPCs from applications inside
// their polling loop (Run), or serving shared-memory workers
// (ServeWorkers) for the examples and the perf harness. It needs no NIC
// and no config file.
package demo

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/lcore"
)

// Config is the in-loop demo's: how long, which sizes, how many RPCs at
// once, and where to print.
type Config struct {
	Duration    time.Duration
	Sizes       []int
	Concurrency int // RPCs outstanding at once
	Capture     string
	CaptureLast int
	Out         io.Writer
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
	if ready, failed := d.h.PeerReady(d.dst.IP); failed {
		d.failed = fmt.Errorf("ARP: %v did not answer", d.dst.IP)
		return
	} else if !ready {
		return
	}
	for {
		m, ok := d.port.Receive()
		if !ok {
			break
		}
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
	}
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

// Run runs the demo: EAL must be up, with lcore 1 a worker lcore.
func Run(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	pool, err := dpdk.NewPktMbufPool("demo", 16384, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	defer pool.Free()
	var capture *dpdk.Capture
	if cfg.Capture != "" {
		if capture, err = dpdk.NewCapture(cfg.Capture, []string{"10.0.0.1", "10.0.0.2"}, 0, cfg.CaptureLast); err != nil {
			return err
		}
	}
	start, clock, wallOff := host.NewClock()
	rp, err := host.NewPair(host.PairConfig{Name: "demo", Pool: pool, TxQueues: 8, Capture: capture,
		Clock: clock, WallOff: wallOff, ARP: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer rp.Close()
	client, server := rp.Hosts[0], rp.Hosts[1]
	srv, err := server.Endpoint().Bind(99)
	if err != nil {
		return err
	}
	server.AddApp(host.AppFunc(func(int64) {
		for {
			m, ok := srv.Receive()
			if !ok {
				return
			}
			srv.Reply(m, m.Data)
		}
	}))
	cl, err := client.Endpoint().OpenClient()
	if err != nil {
		return err
	}
	d := &demoClient{cfg: cfg, h: client, port: cl, dst: engine.Addr{IP: server.IP(), Port: 99},
		started: map[uint64]rpcStart{}, stopAt: clock() + cfg.Duration.Nanoseconds()}
	for _, s := range cfg.Sizes {
		msg := make([]byte, s)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		d.msgs = append(d.msgs, msg)
		d.hist = append(d.hist, hdrhistogram.New(1, 60_000_000, 3))
	}
	client.AddApp(host.AppFunc(d.run))
	fmt.Fprintf(cfg.Out, "demo: Homa hosts 10.0.0.1 (client) and 10.0.0.2 (echo server) on a net_ring pair, 8 TX queues each, one polling loop on lcore 1; %d RPCs outstanding, sizes %v, %v\n",
		cfg.Concurrency, cfg.Sizes, cfg.Duration)
	loop, err := lcore.Launch(1, lcore.Config{Name: "demo", Pass: rp.Pass, Drain: rp.Drain})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.Duration + 30*time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if d.doneOrFailed() {
			break
		}
	}
	elapsed := time.Since(start)
	if err := loop.Stop(5 * time.Second); err != nil {
		return err
	}
	if capture != nil {
		if err := capture.Close(); err != nil {
			return err
		}
	}
	if d.failed != nil {
		return fmt.Errorf("demo: %w\n  %s\n  %s", d.failed, client.Summary(), server.Summary())
	}
	if !d.done {
		return fmt.Errorf("demo: %d RPCs still outstanding %v after the end", len(d.started), 30*time.Second)
	}
	d.report(elapsed)
	return nil
}

func (d *demoClient) doneOrFailed() bool { return d.finished.Load() }

func (d *demoClient) report(elapsed time.Duration) {
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
}
