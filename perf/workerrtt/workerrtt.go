// Package workerrtt is the worker RTT measurement of the perf harness
// (perf worker-rtt): the round trip of one RPC issued by a worker process
// over shared memory, beside the same RPC issued from inside the daemon's
// polling loop, in the same run, on the same hosts, alternating round by
// round.
package workerrtt

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/demo"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"golang.org/x/sys/unix"
)

// Config sizes a measurement.
type Config struct {
	Size     int // message bytes, request and response
	Rounds   int // rounds; each runs both paths
	PerRound int // RPCs per path per round
	Warmup   int // RPCs per path before measuring
	Out      io.Writer
}

// DefaultConfig is perf worker-rtt's default.
func DefaultConfig() Config { return Config{Size: 100, Rounds: 5, PerRound: 20000, Warmup: 2000} }

// Validate checks c, naming the flag of each bad field.
func (c Config) Validate() error {
	if c.Size < 1 || c.Size > 1_000_000 {
		return fmt.Errorf("--size %d: want 1..1000000", c.Size)
	}
	if c.Rounds < 1 || c.PerRound < 1 || c.Warmup < 0 {
		return fmt.Errorf("--rounds and --rpcs must be positive, --warmup not negative")
	}
	return nil
}

// loopPinger issues RPCs one at a time from inside the polling loop and
// times them. The measuring goroutine asks for a number (want) and waits
// for done to reach it; the histogram is read only then.
type loopPinger struct {
	h       *host.Host
	port    *engine.Port
	dst     engine.Addr
	msg     []byte
	clock   func() int64
	want    atomic.Int64
	done    atomic.Int64
	issued  int64
	pending uint64
	sentAt  int64
	hist    *hdrhistogram.Histogram
	record  bool
	failed  atomic.Value // error
}

func (p *loopPinger) run(int64) {
	for {
		m, ok := p.port.Receive()
		if !ok {
			break
		}
		if m.ID != p.pending {
			continue
		}
		if m.Err != nil {
			p.failed.Store(m.Err)
		} else if p.record {
			p.hist.RecordValue(p.clock() - p.sentAt)
		}
		p.pending = 0
		p.done.Add(1)
	}
	if p.pending != 0 || p.issued >= p.want.Load() {
		return
	}
	p.sentAt = p.clock()
	id, err := p.port.Send(p.dst, p.msg)
	if err != nil {
		p.failed.Store(err)
		return
	}
	p.pending = id
	p.issued++
}

// waitFor waits (sleeping, so as not to disturb the loop's CPU) until
// the pinger has finished n RPCs in all.
func (p *loopPinger) waitFor(n int64) error {
	deadline := time.Now().Add(time.Duration(n-p.done.Load())*time.Millisecond + 10*time.Second)
	for p.done.Load() < n {
		if err, _ := p.failed.Load().(error); err != nil {
			return fmt.Errorf("in-daemon RPC: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("in-daemon RPCs: %d of %d done before the deadline", p.done.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Run measures; EAL must be up with lcore 1 a worker lcore, and the
// machine needs two CPUs (the loop on CPU 1, the workers on CPU 0).
func Run(cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pool, err := dpdk.NewPktMbufPool("wrtt", 16384, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return nil, err
	}
	defer pool.Free()
	dir, err := os.MkdirTemp("", "homa-worker-rtt")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	_, clock, wallOff := host.NewClock()
	hp, err := host.NewPair(host.PairConfig{Name: "wrtt", Pool: pool, TxQueues: 2, Clock: clock, WallOff: wallOff,
		ARP: 100 * time.Millisecond, MemifSocket: filepath.Join(dir, "memif.sock")})
	if err != nil {
		return nil, err
	}
	defer hp.Close()
	a, b := hp.Hosts[0], hp.Hosts[1]
	lim := hub.Config{MaxOutstanding: 64, Params: shm.Params{SQEntries: 256, CQEntries: 256,
		ArenaSize: 4 << 20, PoolPages: 64}}
	hubs, err := demo.ServeOnPair(hp, dir, lim)
	closeHubs := func() {
		for _, hb := range hubs {
			hb.Close()
		}
	}
	if err != nil {
		closeHubs()
		return nil, err
	}
	// In-daemon echo on 10.0.0.2:98 and the pinger on 10.0.0.1.
	echo, err := b.Endpoint().Bind(98)
	if err != nil {
		return nil, err
	}
	b.AddApp(host.AppFunc(func(int64) {
		for m, ok := echo.Receive(); ok; m, ok = echo.Receive() {
			echo.Reply(m, m.Data)
		}
	}))
	cport, err := a.Endpoint().OpenClient()
	if err != nil {
		return nil, err
	}
	msg := make([]byte, cfg.Size)
	for i := range msg {
		msg[i] = byte(i*13 + 1)
	}
	pinger := &loopPinger{h: a, port: cport, dst: engine.Addr{IP: netip.AddrFrom4(b.IP()), Port: 98}, msg: msg, clock: clock,
		hist: hdrhistogram.New(1, 10_000_000_000, 3)}
	a.AddApp(host.AppFunc(pinger.run))

	loop, err := lcore.Launch(1, lcore.Config{Name: "worker-rtt", Pass: hp.Pass, Drain: hp.Drain,
		Idle: lcore.Idle{Kind: lcore.BusyPoll}})
	if err != nil {
		return nil, err
	}
	hk := lcore.StartHousekeeping([]*lcore.Loop{loop}, time.Second) // other threads off the loop's CPU
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		hk.Stop()
		closeHubs() // workers detach while the loop runs
		return loop.Stop(10 * time.Second)
	}
	defer stop()

	// The workers run on this goroutine, locked to a thread pinned to the
	// CPU the loop does not use: left free, the kernel would sometimes
	// move the thread onto the loop's CPU, where the two time-share.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pin the workers' thread to CPU 0: %w", err)
	}
	// The workers spin on their rings for the whole wait (Spin of an hour):
	// a latency-critical worker does, and it keeps the sleep path out.
	opt := client.Options{Spin: time.Hour}
	cli, err := client.Dial(filepath.Join(dir, a.Addr().String()+".sock"), opt)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	srv, err := client.Dial(filepath.Join(dir, b.Addr().String()+".sock"), opt)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if err := srv.Bind(99); err != nil {
		return nil, err
	}
	dst := client.Addr{IP: netip.AddrFrom4(b.IP()), Port: 99}
	whist, wTotal := hdrhistogram.New(1, 10_000_000_000, 3), hdrhistogram.New(1, 10_000_000_000, 3)
	workerRPC := func(record bool) error {
		t0 := time.Now()
		id, err := cli.Send(dst, msg)
		if err != nil {
			return err
		}
		req, err := srv.Receive(10 * time.Second)
		if err != nil {
			return err
		}
		if req.Err != nil || !req.Request {
			return fmt.Errorf("server worker received %+v", req)
		}
		err = srv.Reply(req, req.Data)
		req.Release()
		if err != nil {
			return err
		}
		resp, err := cli.Wait(id, 10*time.Second)
		if err != nil {
			return err
		}
		rtt := time.Since(t0)
		if !bytes.Equal(resp.Data, msg) {
			resp.Release()
			return fmt.Errorf("worker RPC %d: response differs from the request", id)
		}
		resp.Release()
		if record {
			whist.RecordValue(rtt.Nanoseconds())
		}
		return nil
	}

	fmt.Fprintf(cfg.Out, "worker-rtt: %d-byte RPCs, one at a time, %d rounds of %d per path after %d warm-up; hosts 10.0.0.1 and 10.0.0.2 on a net_memif pair, one busy-polling loop on lcore 1, workers on CPU 0 (pinned)\n",
		cfg.Size, cfg.Rounds, cfg.PerRound, cfg.Warmup)
	for range cfg.Warmup {
		if err := workerRPC(false); err != nil {
			return nil, fmt.Errorf("worker warm-up: %w", err)
		}
	}
	var target int64 = int64(cfg.Warmup)
	pinger.want.Store(target)
	if err := pinger.waitFor(target); err != nil {
		return nil, err
	}
	res := &Result{Method: Method, Size: cfg.Size, Rounds: cfg.Rounds, PerRound: cfg.PerRound}
	dTotal := hdrhistogram.New(1, 10_000_000_000, 3)
	measureStart, passesBefore := time.Now(), loop.Stats().Passes
	for r := 1; r <= cfg.Rounds; r++ {
		whist = hdrhistogram.New(1, 10_000_000_000, 3)
		for range cfg.PerRound {
			if err := workerRPC(true); err != nil {
				return nil, fmt.Errorf("round %d, worker path: %w", r, err)
			}
		}
		wTotal.Merge(whist)
		// The pinger is idle (done == want): its histogram and flag are
		// set before want, which the loop loads before it issues.
		pinger.hist, pinger.record = hdrhistogram.New(1, 10_000_000_000, 3), true
		target += int64(cfg.PerRound)
		pinger.want.Store(target)
		if err := pinger.waitFor(target); err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		dTotal.Merge(pinger.hist)
		added := float64(whist.ValueAtQuantile(50)-pinger.hist.ValueAtQuantile(50)) / 1e3
		res.AddedPerRoundUs = append(res.AddedPerRoundUs, added)
		fmt.Fprintf(cfg.Out, "  round %d: worker P50 %.2f µs, in-daemon P50 %.2f µs, added %.2f µs\n", r,
			float64(whist.ValueAtQuantile(50))/1e3, float64(pinger.hist.ValueAtQuantile(50))/1e3, added)
	}
	ls := loop.Stats()
	if err := stop(); err != nil {
		return nil, err
	}
	res.PassNs = float64(time.Since(measureStart).Nanoseconds()) / float64(ls.Passes-passesBefore)
	res.MaxGapUs = float64(ls.MaxGap.Nanoseconds()) / 1e3
	res.Paths = []Summary{summarize("in-daemon", dTotal), summarize("worker (shm)", wTotal)}
	res.AddedMedianUs = res.Paths[1].P50Us - res.Paths[0].P50Us
	return res, nil
}

func summarize(path string, h *hdrhistogram.Histogram) Summary {
	us := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }
	return Summary{Path: path, RPCs: h.TotalCount(), P50Us: us(50), P99Us: us(99), P999Us: us(99.9),
		MaxUs: float64(h.Max()) / 1e3}
}
