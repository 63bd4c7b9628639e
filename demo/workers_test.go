package demo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/host/hosttest"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/rtt"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

func TestMain(m *testing.M) { dpdktest.Main(m) }

// workerPair makes a host pair (on rings, or on a memif pair when memif;
// at mtu, 0 for 1500) with a worker socket per host, polled on a goroutine
// until the test ends; it returns the hosts, their hubs and the sockets'
// directory.
func workerPair(t *testing.T, memif bool, mtu int) (*host.Pair, []*hub.Hub, string) {
	t.Helper()
	pc := host.PairConfig{TxQueues: 2, MTU: mtu}
	if memif {
		pc.MemifSocket = filepath.Join(t.TempDir(), "memif.sock")
	}
	p := hosttest.Pair(t, pc)
	for _, h := range p.Hosts {
		h.PublishSnapshots()
	}
	dir := t.TempDir()
	lim := hub.Config{MaxOutstanding: 64, Params: shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: 4 << 20, PoolPages: 64}}
	hubs, err := ServeOnPair(p, dir, lim)
	if err != nil {
		closeHubs(hubs)
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			p.Pass()
		}
		p.Drain()
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	t.Cleanup(func() { closeHubs(hubs) }) // first: workers detach while the loop runs
	return p, hubs, dir
}

// echoWorkers runs Go workers on both hosts, an echo server on
// 10.0.0.2:99 and a client, over messages of 100 B to 1 MB, byte-exact.
func echoWorkers(t *testing.T, p *host.Pair, dir string) {
	t.Helper()
	echoWorkersTo(t, p, dir, p.Hosts[1].Addr())
}

// echoWorkersTo is echoWorkers with the client's RPCs to the server's
// address ip (its IPv4 or IPv6 one).
func echoWorkersTo(t *testing.T, p *host.Pair, dir string, ip netip.Addr) {
	t.Helper()
	sock := func(h *host.Host) string { return filepath.Join(dir, h.Addr().String()+".sock") }
	srv, err := client.Dial(sock(p.Hosts[1]), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bind(99); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	defer func() { // the server's goroutine ends before its client closes
		stop.Store(true)
		wg.Wait()
		srv.Close()
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			m, err := srv.Receive(20 * time.Millisecond)
			if errors.Is(err, client.ErrWaitTimeout) {
				continue
			}
			if err != nil {
				done <- err
				return
			}
			err = srv.Reply(m, m.Data)
			m.Release()
			if err != nil {
				done <- err
				return
			}
		}
	}()
	cli, err := client.Dial(sock(p.Hosts[0]), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	dst := client.Addr{IP: ip, Port: 99}
	for _, size := range []int{100, 5000, 100_000, 1_000_000} {
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = byte(i*7 + size)
		}
		resp, err := cli.Call(dst, msg, 10*time.Second)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(resp.Data, msg) {
			t.Fatalf("%d bytes: the response differs from the request", size)
		}
		resp.Release()
	}
	select {
	case err := <-done:
		t.Fatalf("echo server: %v", err)
	default:
	}
}

// checkZeroCopy checks that both hosts (on ports that send chained mbufs)
// sent the workers' payloads from their arenas.
func checkZeroCopy(t *testing.T, p *host.Pair, hubs []*hub.Hub) {
	t.Helper()
	time.Sleep(time.Duration(host.PublishEvery) + 50*time.Millisecond) // the hubs publish their counters
	for i, h := range p.Hosts {
		if !h.Offloads().MultiSeg {
			t.Errorf("%s: the port does not send chained mbufs", h.Addr())
		}
		if n, pk := hubs[i].Snapshot().ZeroCopyMessages, h.Snapshot().Engine.ZeroCopyPackets; n == 0 || pk == 0 {
			t.Errorf("%s: %d zero-copy messages, %d zero-copy DATA packets; want some", h.Addr(), n, pk)
		}
	}
}

func TestWorkers_echoOverRingPair(t *testing.T) {
	p, hubs, dir := workerPair(t, false, 0)
	echoWorkers(t, p, dir)
	checkZeroCopy(t, p, hubs)
	checkChainedInPlace(t, p)
}

// checkChainedInPlace checks that the ring handed the chained packets
// over as they are: each arrived as headers and payload in two segments,
// parsed in place, never joined (copied) first.
func checkChainedInPlace(t *testing.T, p *host.Pair) {
	t.Helper()
	for _, h := range p.Hosts {
		if s := h.Snapshot(); s.RxChainedInPlace == 0 || s.RxChainedJoined != 0 {
			t.Errorf("%s: %d chained frames parsed in place, %d joined; want some, 0", h.Addr(), s.RxChainedInPlace, s.RxChainedJoined)
		}
	}
}

func TestWorkers_echoOverMemifPair(t *testing.T) {
	p, hubs, dir := workerPair(t, true, 0)
	echoWorkers(t, p, dir)
	checkZeroCopy(t, p, hubs)
}

// Over IPv6 too the ring hands the workers' chained packets over as they
// are, and each is parsed in its two pieces, never joined.
func TestWorkers_echoOverRingPairIPv6(t *testing.T) {
	p, hubs, dir := workerPair(t, false, 0)
	echoWorkersTo(t, p, dir, p.Hosts[1].Addr6())
	checkZeroCopy(t, p, hubs)
	checkChainedInPlace(t, p)
}

// The workers' RPCs over IPv6: the client sends to the server host's
// IPv6 address (fd00::2, resolved by neighbour discovery), and the
// server's worker answers the client's IPv6 address it was given.
func TestWorkers_echoOverIPv6(t *testing.T) {
	p, _, dir := workerPair(t, true, 0)
	echoWorkersTo(t, p, dir, p.Hosts[1].Addr6())
	time.Sleep(time.Duration(host.PublishEvery) + 50*time.Millisecond) // the hosts publish their counters
	if s := p.Hosts[0].Snapshot(); s.Stack.NeighborAdverts == 0 {
		t.Errorf("the client's host learned nothing by neighbour discovery: %+v", s.Stack)
	}
}

// demo --workers --link memif --mtu 9000: the workers' messages cross a
// memif pair in 9,014-byte frames (ethdev refuses the MTU on net_memif,
// which carries them in buffers of the bsize host.MemifDevargs gives),
// byte-exact, their payloads still sent from the arenas.
func TestWorkers_echoOverMemifPairJumbo(t *testing.T) {
	p, hubs, dir := workerPair(t, true, 9000)
	for _, h := range p.Hosts { // a worker learns its host: the port's addresses, MTU and speed (memif: 100 Gb/s)
		checkHostInfo(t, filepath.Join(dir, h.Addr().String()+".sock"), h.Addr(), h.Addr6(), 100000, 9000)
	}
	echoWorkers(t, p, dir)
	checkZeroCopy(t, p, hubs)
	// The client's requests, 100 B to 1 MB, are 127 DATA packets of up to
	// 8,924 bytes (779 at MTU 1500); a few resent ones are allowed.
	if got := p.Hosts[0].Snapshot().Engine.PacketsSent[0]; got < 127 || got > 200 {
		t.Errorf("the client sent %d DATA packets, want 127 (8,924 bytes each but the last of a message)", got)
	}
}

// checkHostInfo dials the worker socket sock and checks what its header
// says of the host (client.Client.Host).
func checkHostInfo(t *testing.T, sock string, v4, v6 netip.Addr, mbps, mtu uint32) {
	t.Helper()
	c, err := client.Dial(sock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := client.HostInfo{IPv4: v4, IPv6: v6, LinkMbps: mbps, MTU: mtu}
	if got, said := c.Host(); !said || got != want {
		t.Errorf("%s: Host() = %+v, %v; want %+v", sock, got, said, want)
	}
}

// The config of demo --workers takes 64 MiB messages between its two
// hosts, in regions that hold what the perf harness keeps in flight
// (rtt's largest message each way, throughput's windows), 256 MiB and
// its rings each, at most 8 a uid. It needs no EAL.
func TestWorkersSpec_longMessages(t *testing.T) {
	spec, err := workersSpec([]string{"net_memif_demo0", "net_memif_demo1"}, []string{"/tmp/a.sock", "/tmp/b.sock"}, 2, 1500, 0, false, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	pr, ws := spec.Protocol, spec.Workers
	if pr.MaxMessage != 64<<20 || !pr.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 1})) || !pr.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 2})) ||
		pr.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 3})) {
		t.Errorf("max_message %d, long-message peers %v: want 64 MiB between 10.0.0.1 and 10.0.0.2 alone", pr.MaxMessage, pr.LongMessagePeers)
	}
	pages := ws.PoolBytes / shm.PageSize
	need := func(size int) int { return (size + shm.PageSize - 1) / shm.PageSize }
	for _, size := range rtt.DefaultSizes {
		if size > pr.MaxMessage || 2*size > ws.MaxBytes || need(size) > pages {
			t.Errorf("rtt's %d bytes: max_message %d, arena %d (a request and a reply awaiting its ACK), %d pool pages", size, pr.MaxMessage, ws.MaxBytes, pages)
		}
	}
	for _, z := range perf.StreamSizes {
		if z.Size > pr.MaxMessage || z.Window*z.Size > ws.MaxBytes || z.Window*need(z.Size) > pages {
			t.Errorf("throughput's %+v: max_message %d, arena %d, %d pool pages", z, pr.MaxMessage, ws.MaxBytes, pages)
		}
	}
	l, err := shm.NewLayout(shm.Params{SQEntries: uint64(ws.RingEntries), CQEntries: uint64(ws.RingEntries),
		ArenaSize: uint64(ws.MaxBytes), PoolPages: uint64(pages), MaxMessage: uint32(pr.MaxMessage), RegionAlign: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if l.RegionSize > 258<<20 || ws.MaxSessionsPerUID != 8 {
		t.Errorf("a region of %d bytes, %d a uid: the demo's config says 256 MiB and its rings, 8", l.RegionSize, ws.MaxSessionsPerUID)
	}
	t.Logf("region %d bytes (%.1f MiB) on hugepages", l.RegionSize, float64(l.RegionSize)/(1<<20))
}

// The config demo --workers builds in Go is the one the YAML template
// it replaced (filled in) made: here for two hosts of two shards
// on ring ports with MACs of their own, jumbo frames, copier CPUs. It
// needs no EAL.
func TestWorkersSpec_isWhatTheTemplateMade(t *testing.T) {
	got, err := workersSpec([]string{"net_ring_demo0", "net_ring_demo1"}, []string{"/tmp/a.sock", "/tmp/b.sock"}, 8, 9000, ringLinkRate, true,
		[]uint{1, 2}, []uint{0, 0}, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.Load(config.Source{YAML: `
lcores: [1, 1]
ports:
  - device: "net_ring_demo0"
    address: 10.0.0.1/24
    address6: fd00::1/64
    tx_queues: 8
    mtu: 9000
    link_speed: 100G
    workers_socket: "/tmp/a.sock"
    mac: "02:00:0a:00:00:01"
    lcores: [1, 2]
    copier_cpus: [0, 0]
  - device: "net_ring_demo1"
    address: 10.0.0.2/24
    address6: fd00::2/64
    tx_queues: 8
    mtu: 9000
    link_speed: 100G
    workers_socket: "/tmp/b.sock"
    mac: "02:00:0a:00:00:02"
    lcores: [1, 2]
    copier_cpus: [0, 0]
protocol:
  max_message: 67108864
  long_message_peers: [10.0.0.1/32, fd00::1/128, 10.0.0.2/32, fd00::2/128]
arp:
  timeout: 100ms
runtime:
  idle: busy
metrics:
  address: ""
workers:
  enabled: true
  socket: "/tmp/a.sock"
  max_sessions_per_uid: 8
  max_bytes: 134217728
  pool_bytes: 134217728
log:
  level: warn
`})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("built in Go\n%+v\nthe template's\n%+v", got, want)
	}
}

// demo --workers DIR --hosts 4: four hosts on a ring switch, an echo
// worker on each; a worker on every host then calls every other host,
// byte-exact, through the daemon. (A Go client is used by one goroutine
// at a time: each echo server has its own, and the callers come one host
// at a time, five sessions at most.)
func TestServeWorkers_fourHostsAllPairs(t *testing.T) {
	serveWorkersAllPairs(t, WorkersConfig{Hosts: 4}, "10.0.0.4 on a ring switch")
}

// demo --workers --shards 2: each host two shards on a memif pair; the
// echo server's session lives on one shard, the caller's on the other
// (the least loaded), so its requests reach the other host on the shard
// their ids name and are steered to the port's home there. Its metrics
// (--metrics, here on a port of its own choosing) count the calls.
func TestServeWorkers_twoShardsAHost(t *testing.T) {
	serveWorkersAllPairs(t, WorkersConfig{Shards: 2, Metrics: "127.0.0.1:0"}, "2 shards a host")
}

// demo --workers --copier-cpu 0: the receive copies into the workers'
// pools on a copier thread; every call byte-exact.
func TestServeWorkers_copier(t *testing.T) {
	serveWorkersAllPairs(t, WorkersConfig{Copier: true, CopierCPU: 0}, "receive copies on a copier thread on CPU 0")
}

// serveWorkersAllPairs runs ServeWorkers with cfg (its Dir, Stop and Out
// set here: the demo lives until the calls are done, or the test's end)
// and calls every host from every other through workers; the demo's
// output must contain want.
func serveWorkersAllPairs(t *testing.T, cfg WorkersConfig, want string) {
	dpdktest.Need(t)
	dir := t.TempDir()
	var out lockedBuilder // the demo writes it while a failure reads it
	done, ended := make(chan struct{}), make(chan struct{})
	var serveErr error
	cfg.Dir, cfg.Stop, cfg.Out = dir, done, &out
	go func() { serveErr = ServeWorkers(cfg); close(ended) }()
	stopDemo := sync.OnceValue(func() error { close(done); <-ended; return serveErr })
	t.Cleanup(func() { stopDemo() })
	n := max(cfg.Hosts, 2)
	sock := func(i int) string { return filepath.Join(dir, fmt.Sprintf("10.0.0.%d.sock", i+1)) }
	dial := func(i int) *client.Client {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			c, err := client.Dial(sock(i), client.Options{})
			if err == nil {
				return c
			}
			select {
			case <-ended:
				t.Fatalf("the demo ended before host %d took workers: %v\n%s", i, serveErr, out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("host %d: %v", i, err)
			}
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(func() { stop.Store(true); wg.Wait() }) // first: the servers leave before the demo stops
	for i := range n {                                // each socket's workers learn their host: ports[i]'s addresses, mtu and link speed
		v4, v6 := netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), netip.AddrFrom16([16]byte{0xfd, 15: byte(i + 1)})
		dial(i).Close()                                 // the socket is up
		checkHostInfo(t, sock(i), v4, v6, 100000, 1500) // 100G: the ring switch's link_speed, or what memif reports under auto
	}
	for i := range n {
		srv := dial(i)
		if err := srv.Bind(99); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer srv.Close()
			for !stop.Load() {
				m, err := srv.Receive(20 * time.Millisecond)
				if err != nil {
					continue
				}
				srv.Reply(m, m.Data)
				m.Release()
			}
		}()
	}
	for i := range n {
		cli := dial(i)
		for j := range n {
			if i == j {
				continue
			}
			msg := []byte(fmt.Sprintf("%d to %d: %s", i, j, strings.Repeat("x", 20_000*(j+1))))
			resp, err := cli.Call(client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(j + 1)}), Port: 99}, msg, 10*time.Second)
			if err != nil {
				t.Fatalf("%d to %d: %v\n%s", i, j, err, out.String())
			}
			if !bytes.Equal(resp.Data, msg) {
				t.Fatalf("%d to %d: the response differs", i, j)
			}
			resp.Release()
		}
		cli.Close()
	}
	if cfg.Metrics != "" {
		readDemoMetrics(t, out.String())
	}
	stop.Store(true)
	wg.Wait()
	if err := stopDemo(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), want) {
		t.Errorf("demo printed:\n%s", out.String())
	}
}

// readDemoMetrics finds where the demo's start line (in out) says its
// metrics are, and reads the packets its host 10.0.0.1 sent there.
func readDemoMetrics(t *testing.T, out string) {
	t.Helper()
	line := regexp.MustCompile(`; metrics on http://(127\.0\.0\.1:[0-9]+)/metrics \(homa-dpdk stats --metrics (127\.0\.0\.1:[0-9]+)\)\n`)
	m := line.FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Errorf("no start line like %s:\n%s", line, out)
		return
	}
	// The hosts publish their counters every few milliseconds.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Error(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sent := regexp.MustCompile(`(?m)^homa_packets_sent_total\{host="10\.0\.0\.1",[^}]*type="DATA"\} [1-9]`)
		if sent.Match(body) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("/metrics at %s has no DATA sent by 10.0.0.1:\n%.3000s", m[1], body)
			return
		}
	}
}

// On a loop that sleeps when idle (adaptive, up to 300 ms a sleep here),
// a worker's submission rings the loop's doorbell instead of waiting out
// the sleep: idle pauses between RPCs put the loop to sleep, and every
// RPC still completes, the workers having rung.
func TestWorkers_doorbellWakesASleepingLoop(t *testing.T) {
	pc := host.PairConfig{TxQueues: 2}
	p := hosttest.Pair(t, pc)
	dir := t.TempDir()
	lim := hub.Config{MaxOutstanding: 64, Params: shm.Params{SQEntries: 64, CQEntries: 64, ArenaSize: 4 << 20, PoolPages: 64},
		Doorbell: true}
	hubs, err := ServeOnPair(p, dir, lim)
	if err != nil {
		closeHubs(hubs)
		t.Fatal(err)
	}
	bell := p.Doorbell()
	if bell == nil || len(bell.FDs) != 2 {
		closeHubs(hubs)
		t.Fatalf("doorbell %+v: want one per hub", bell)
	}
	cpu := runtime.NumCPU() - 1
	loop, err := lcore.Go(cpu, lcore.Config{Name: "pair", Pass: p.Pass, Flush: p.Flush, Drain: p.Drain, Doorbell: bell,
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 1000, MinSleep: 300 * time.Millisecond, MaxSleep: 300 * time.Millisecond}})
	if err != nil {
		closeHubs(hubs)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := loop.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { closeHubs(hubs) }) // first: workers detach while the loop runs
	sock := func(h *host.Host) string { return filepath.Join(dir, h.Addr().String()+".sock") }
	srv, err := client.Dial(sock(p.Hosts[1]), client.Options{Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Bind(99); err != nil {
		t.Fatal(err)
	}
	cli, err := client.Dial(sock(p.Hosts[0]), client.Options{Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	dst := client.Addr{IP: p.Hosts[1].Addr(), Port: 99}
	const rpcs = 5
	for i := range rpcs {
		waitSleeps(t, loop, loop.Stats().Sleeps+1) // the loop is asleep, or has slept since the last RPC
		id, err := cli.Send(dst, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		req, err := srv.Receive(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Reply(req, req.Data); err != nil {
			t.Fatal(err)
		}
		req.Release()
		resp, err := cli.Wait(id, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		resp.Release()
	}
	st := loop.Stats()
	if rung := cli.Stats().Doorbells + srv.Stats().Doorbells; rung == 0 || st.Rung == 0 {
		t.Errorf("workers rang %d times, the loop woke %d times by its doorbell (%+v); want both", rung, st.Rung, st)
	}
}

// waitSleeps waits until the loop has slept at least n times.
func waitSleeps(t *testing.T, l *lcore.Loop, n uint64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); l.Stats().Sleeps < n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the loop did not sleep: %+v", l.Stats())
		}
	}
}
