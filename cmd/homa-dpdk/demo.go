package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	perfpmd "github.com/homa-dpdk/homa-dpdk/perf/pmd"
	"github.com/spf13/cobra"
)

// demoConfig is the embedded default of `homa-dpdk demo`.
type demoConfig struct {
	duration    time.Duration
	sizes       []int
	concurrency int // RPCs outstanding at once
	capture     string
	captureLast int
	workers     string // serve workers on sockets in this directory instead of the demo's own RPCs
	memifPeers  string // with workers: "SOCK0,SOCK1", memif servers to join the hosts through
	out         io.Writer
}

// demoCmd runs two Homa hosts on virtual devices, with no NIC and no
// config file: the README's first command.
func demoCmd() *cobra.Command {
	cfg := demoConfig{duration: 10 * time.Second, concurrency: 8}
	var sizes string
	var seconds float64
	var pmd bool
	c := &cobra.Command{
		Use:   "demo [flags] [-- EAL arguments]",
		Short: "Two Homa hosts on virtual devices exchanging RPCs (no NIC, no config file)",
		Long: `demo runs two Homa hosts, 10.0.0.1 and 10.0.0.2, in this process on two net_ring
ports joined back to back (every TX queue of one feeds the other's RX queue), driven by
one polling loop on lcore 1 — the daemon's own data path: the engine writes frames into
mbufs, each priority goes to its TX queue, ARP resolves the peer. The client keeps a
number of RPCs outstanding, each echoing a message of a size drawn from the mix, and the
demo prints the round-trip time percentiles per size and the throughput.

demo --workers DIR serves shared-memory workers instead: the same two hosts, joined
by a net_memif pair, open worker control sockets DIR/10.0.0.1.sock and
DIR/10.0.0.2.sock and run until interrupted (or for --seconds, when given). Workers
(examples/echo, python/examples) attach there and exchange RPCs through the daemon.

demo --pmd runs the forwarding benchmark (perf pmd), short, instead: our Go polling
loop and dpdk-testpmd on net_null, net_memif and net_ring.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pmd {
				pc := perfpmd.DefaultConfig()
				pc.Measure, pc.Warmup, pc.Trials = 2*time.Second, time.Second, 1
				return runPMD(cmd, args, pc, "")
			}
			var err error
			if cfg.sizes, err = parseSizes(sizes); err != nil {
				return err
			}
			cfg.duration = time.Duration(seconds * float64(time.Second))
			if cfg.workers != "" && !cmd.Flags().Changed("seconds") {
				cfg.duration = 0 // until interrupted
			}
			cfg.out = cmd.OutOrStdout()
			mem := dpdk.ProbeMemory()
			if _, err := dpdk.Init(ealArgs(cmd, args, "0,1", mem)); err != nil {
				return err
			}
			defer dpdk.Cleanup()
			if cfg.workers != "" {
				return serveDemoWorkers(cfg)
			}
			return runDemo(cfg)
		},
	}
	f := c.Flags()
	f.Float64Var(&seconds, "seconds", cfg.duration.Seconds(), "how long to exchange RPCs")
	f.StringVar(&sizes, "sizes", "100,1000,10000,100000,1000000", "message sizes in bytes, drawn in turn")
	f.IntVar(&cfg.concurrency, "concurrency", cfg.concurrency, "RPCs outstanding at once")
	f.StringVar(&cfg.capture, "capture", "", "write a pcapng capture of both hosts to this file")
	f.IntVar(&cfg.captureLast, "capture-last", 0, "keep only the last N packets in the capture")
	f.BoolVar(&pmd, "pmd", false, "run the forwarding benchmark instead")
	f.StringVar(&cfg.workers, "workers", "", "serve shared-memory workers on sockets in this directory until interrupted, instead of the demo's RPCs")
	f.StringVar(&cfg.memifPeers, "memif-peers", "", "with --workers: SOCK0,SOCK1 — join the hosts through these memif servers (e.g. dpdk-testpmd forwarding between them) instead of a memif pair")
	return c
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--sizes: %q is not a message size in 1..1000000", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// lingerNs is how long the demo keeps polling after the last response, so
// that the server's NEED_ACK and the client's ACK end the last RPCs and no
// RPC state is left behind (request_ack_ticks is 2 ms).
const lingerNs = int64(20 * time.Millisecond)

// demoClient is the in-loop application of the client host.
type demoClient struct {
	cfg     demoConfig
	h       *hostLoop
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
	size int // index into cfg.sizes
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
	if ready, failed := d.h.peerReady(d.dst.IP); failed {
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
		if len(m.Data) != d.cfg.sizes[s.size] {
			d.failed = fmt.Errorf("RPC %d: %d bytes back for %d sent", m.ID, len(m.Data), d.cfg.sizes[s.size])
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
	for len(d.started) < d.cfg.concurrency {
		i := d.next % len(d.cfg.sizes)
		d.next++
		id, err := d.port.Send(d.dst, d.msgs[i])
		if err != nil {
			d.failed = err
			return
		}
		d.started[id] = rpcStart{size: i, at: now}
	}
}

func runDemo(cfg demoConfig) error {
	pool, err := dpdk.NewPktMbufPool("demo", 16384, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	defer pool.Free()
	var capture *dpdk.Capture
	if cfg.capture != "" {
		if capture, err = dpdk.NewCapture(cfg.capture, []string{"10.0.0.1", "10.0.0.2"}, 0, cfg.captureLast); err != nil {
			return err
		}
	}
	start, clock, wallOff := newClock()
	rp, err := newHostPair(hostPairConfig{name: "demo", pool: pool, txQueues: 8, capture: capture,
		clock: clock, wallOff: wallOff, arp: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer rp.close()
	client, server := rp.hosts[0], rp.hosts[1]
	srv, err := server.ep.Bind(99)
	if err != nil {
		return err
	}
	server.app = func(int64) {
		for {
			m, ok := srv.Receive()
			if !ok {
				return
			}
			srv.Reply(m, m.Data)
		}
	}
	cl, err := client.ep.OpenClient()
	if err != nil {
		return err
	}
	d := &demoClient{cfg: cfg, h: client, port: cl, dst: engine.Addr{IP: server.me.ip, Port: 99},
		started: map[uint64]rpcStart{}, stopAt: clock() + cfg.duration.Nanoseconds()}
	for _, s := range cfg.sizes {
		msg := make([]byte, s)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		d.msgs = append(d.msgs, msg)
		d.hist = append(d.hist, hdrhistogram.New(1, 60_000_000, 3))
	}
	client.app = d.run
	fmt.Fprintf(cfg.out, "demo: Homa hosts 10.0.0.1 (client) and 10.0.0.2 (echo server) on a net_ring pair, 8 TX queues each, one polling loop on lcore 1; %d RPCs outstanding, sizes %v, %v\n",
		cfg.concurrency, cfg.sizes, cfg.duration)
	loop, err := lcore.Launch(1, lcore.Config{Name: "demo", Pass: rp.pass, Drain: rp.drain})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.duration + 30*time.Second)
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
		return fmt.Errorf("demo: %w\n  %s\n  %s", d.failed, client.summary(), server.summary())
	}
	if !d.done {
		return fmt.Errorf("demo: %d RPCs still outstanding %v after the end", len(d.started), 30*time.Second)
	}
	d.report(elapsed)
	return nil
}

func (d *demoClient) doneOrFailed() bool { return d.finished.Load() }

func (d *demoClient) report(elapsed time.Duration) {
	w := d.cfg.out
	fmt.Fprintf(w, "\n%10s %8s %10s %10s %10s %10s\n", "size (B)", "RPCs", "P50 µs", "P99 µs", "P99.9 µs", "max µs")
	total := int64(0)
	for i, h := range d.hist {
		total += h.TotalCount()
		fmt.Fprintf(w, "%10d %8d %10d %10d %10d %10d\n", d.cfg.sizes[i], h.TotalCount(),
			h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(99.9), h.Max())
	}
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "\n%d RPCs in %.1f s: %.0f RPCs/s, %.2f Gbps of messages (requests + responses)\n",
		total, secs, float64(total)/secs, float64(d.bytes)*8/secs/1e9)
	m := d.h.ep.Metrics()
	var parts []string
	m.Each(func(name string, v uint64) {
		switch name {
		case "packets_sent_DATA", "packets_sent_GRANT", "packets_sent_ACK", "packets_sent_NEED_ACK", "resent_packets", "rpc_timeouts":
			parts = append(parts, fmt.Sprintf("%s=%d", name, v))
		}
	})
	fmt.Fprintf(w, "client counters: %s\n", strings.Join(parts, " "))
}
