package perf

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/homa-dpdk/homa-dpdk/client"
	"golang.org/x/sys/unix"
)

// Scenario-wide settings shared by rtt and throughput.

// DefaultSizes are the message sizes of the rtt scenario, in bytes: 100 B
// to 64 MB, decimal (8 MB is 8,000,000 bytes, 64 MB 64,000,000: sizeName).
// The two above kernel Homa's 1,000,000 need the daemon's long-message
// config (demo/workers.yaml: messages up to 64 MiB between its hosts).
var DefaultSizes = []int{100, 1000, 10_000, 100_000, 1_000_000, 8_000_000, 64_000_000}

// SmokeSizes are rtt's sizes with --smoke: up to 1 MB.
var SmokeSizes = []int{100, 1000, 10_000, 100_000, 1_000_000}

// HomaLinks are the links rtt and throughput measure Homa on, one after
// the other, each with a daemon of its own (`demo --workers DIR --link
// LINK`) and a series of its own (homaSeries): memif, a net_memif pair,
// which copies every byte into and out of its shared rings; and ring, a
// net_ring pair, whose mbufs change hands with no copy in the link (the
// analogue of a NIC's DMA), possible only because both hosts are in the
// daemon's one process.
var HomaLinks = []string{"memif", "ring"}

// HomaLinkMTU is the IP MTU of each link's ports (`demo --mtu`): jumbo
// frames on the ring, as a datacenter NIC for ML traffic runs them;
// memif at 1500, the frames the floor scenario compares it with (it also
// runs Homa on memif at 9000: net_memif takes jumbo frames when its
// buffers hold a whole frame, host.MemifDevargs). Kernel
// TCP's peers keep their own: 65,536 on loopback and 1500 on the veth
// pair, both with 64 KB segments (GSO/GRO).
var HomaLinkMTU = map[string]int{"memif": 1500, "ring": 9000}

// HomaSeries is the name of Homa's series on link: homa-memif, homa-ring.
func HomaSeries(link string) string { return "homa-" + link }

// HomaMTUSeries is the name of Homa's series on link with its ports at an
// MTU other than 1500: homa-memif-mtu9000.
func HomaMTUSeries(link string, mtu int) string { return HomaSeries(link) + "-mtu" + strconv.Itoa(mtu) }

// IsHoma says whether a series or run is one of Homa's (homaSeries).
func IsHoma(transport string) bool { return strings.HasPrefix(transport, "homa-") }

// LinksFor are the links a scenario measures Homa on: links (nil:
// HomaLinks), or memif alone when the hosts are joined through
// dpdk-testpmd, which forwards between memif ports.
func LinksFor(links []string, testpmd string) []string {
	switch {
	case testpmd != "":
		return []string{"memif"}
	case links == nil:
		return HomaLinks
	}
	return links
}

// LoopStats is what the daemon's polling loop says when it stops: its
// passes and the longest gap between two passes (a garbage-collector or
// scheduler stall of the loop shows up here).
type LoopStats struct {
	Loop        string  `json:"loop"`
	Passes      int64   `json:"passes"`
	MaxGapUs    float64 `json:"max_gap_us"`
	MaxGapFound bool    `json:"reported"` // false: the daemon did not print its loop line
}

// Daemon is `homa-dpdk demo --workers DIR` run as a child process: two
// Homa hosts (10.0.0.1 and 10.0.0.2) on a net_memif pair (or what its
// --link or --memif-peers says), one busy-polling loop on lcore 1, worker
// sockets DIR/10.0.0.1.sock and DIR/10.0.0.2.sock.
type Daemon struct {
	Dir  string
	Link string // the link named in its loop's statistics ("": not named)
	cmd  *exec.Cmd
	log  *os.File
	mu   sync.Mutex
	loop string // the "loop: ..." line
	up   chan struct{}
	done chan error
}

// StartDaemon starts self (the homa-dpdk executable) as the demo daemon
// serving workers in dir, logging to logPath, and waits until it is up.
func StartDaemon(self, dir, logPath string, extra ...string) (*Daemon, error) {
	return StartDaemonEnv(self, dir, logPath, nil, extra...)
}

// StartDaemonEnv is StartDaemon with env ("HOMA_KEY=value") added to the
// daemon's environment, where HOMA_* variables override the demo config's
// keys (HOMA_WORKERS_MAX_OUTSTANDING is workers.max_outstanding).
func StartDaemonEnv(self, dir, logPath string, env []string, extra ...string) (*Daemon, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	d := &Daemon{Dir: dir, log: log, up: make(chan struct{}), done: make(chan error, 1)}
	d.cmd = exec.Command(self, append([]string{"demo", "--workers", dir}, extra...)...)
	if len(env) > 0 {
		d.cmd.Env = append(os.Environ(), env...)
	}
	d.cmd.Stderr = log
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	if err := d.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start the daemon %s: %w", self, err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		upSeen := false
		for sc.Scan() {
			l := sc.Text()
			fmt.Fprintln(log, l)
			if !upSeen && strings.HasPrefix(l, "demo: Homa hosts") {
				upSeen = true
				close(d.up)
			}
			if strings.HasPrefix(l, "loop: ") {
				d.mu.Lock()
				d.loop = l
				d.mu.Unlock()
			}
		}
	}()
	go func() {
		<-scanned
		d.done <- d.cmd.Wait()
	}()
	select {
	case <-d.up:
	case err := <-d.done:
		d.done <- err
		log.Close()
		return nil, fmt.Errorf("the daemon exited before it was up (%v); its log: %s\n%s", err, logPath, Tail(logPath, 2000))
	case <-time.After(60 * time.Second):
		d.Stop()
		return nil, fmt.Errorf("the daemon was not up within 60 s; its log: %s", logPath)
	}
	for _, s := range []string{"10.0.0.1.sock", "10.0.0.2.sock"} {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			d.Stop()
			return nil, fmt.Errorf("the daemon is up but has no worker socket: %w", err)
		}
	}
	return d, nil
}

func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// CPU is the daemon's user and system CPU time so far (/proc/PID/stat,
// all its threads; resolution one clock tick, 10 ms).
func (d *Daemon) CPU() (time.Duration, error) { return ProcCPU(d.Pid()) }

// Counters reads the daemon's /proc/PID/stat.
func (d *Daemon) Counters() (ProcCounters, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.Pid()))
	if err != nil {
		return ProcCounters{}, err
	}
	return ParseProcStat(b)
}

// Stop sends SIGTERM, waits for the daemon to exit and returns its
// polling loop's statistics.
func (d *Daemon) Stop() (LoopStats, error) {
	st := LoopStats{Loop: "daemon (both hosts, lcore 1)"}
	if d == nil {
		return st, nil
	}
	if d.Link != "" {
		st.Loop = "daemon on " + d.Link + " (both hosts, lcore 1)"
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-d.done:
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		err = fmt.Errorf("the daemon did not stop within 20 s of SIGTERM: killed")
		<-d.done
	}
	d.log.Close()
	d.mu.Lock()
	line := d.loop
	d.mu.Unlock()
	if line != "" {
		st.Passes, st.MaxGapUs, st.MaxGapFound = parseLoopLine(line)
	}
	return st, err
}

// parseLoopLine reads "loop: N passes, longest gap between passes X".
func parseLoopLine(l string) (passes int64, gapUs float64, ok bool) {
	var gap string
	if _, err := fmt.Sscanf(l, "loop: %d passes, longest gap between passes %s", &passes, &gap); err != nil {
		return 0, 0, false
	}
	d, err := time.ParseDuration(gap)
	if err != nil {
		return passes, 0, false
	}
	return passes, float64(d.Nanoseconds()) / 1e3, true
}

// OnPinnedThread runs f on a goroutine locked to a thread pinned to cpu,
// inside network namespace netns when it is not "". The thread is never
// unlocked, so it exits with the goroutine instead of going back to the
// runtime pinned (or in another namespace).
func OnPinnedThread(cpu int, netns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if netns != "" {
			if err := enterNetns(netns); err != nil {
				errc <- err
				return
			}
		}
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errc <- fmt.Errorf("pin a thread to CPU %d: %w", cpu, err)
				return
			}
		}
		errc <- f()
	}()
	return <-errc
}

func enterNetns(name string) error {
	fd, err := unix.Open("/var/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", name, err)
	}
	return nil
}

// WorkerPair is the client worker on 10.0.0.1 and the server worker,
// bound to port 99, on 10.0.0.2, both to be used from one goroutine.
type WorkerPair struct {
	cli, srv *client.Client
	dst      client.Addr
}

// DialPair attaches both workers and checks that their regions take what
// the scenario will send: messages of maxSize bytes (the region's
// MaxMessage, from the daemon's protocol.max_message), inFlight bytes of
// them at once in the client's transmit arena (workers.max_bytes) and one
// in the server's. The receive
// pool (workers.pool_bytes) is not visible to a worker: demo/workers.yaml
// sizes it as the arena.
func DialPair(dir string, maxSize, inFlight int) (*WorkerPair, error) {
	return DialPairPort(dir, 99, maxSize, inFlight)
}

// DialPairPort is dialPair with the server worker bound to port (the
// rate scenario's workers each have a server port of their own).
func DialPairPort(dir string, port uint16, maxSize, inFlight int) (*WorkerPair, error) {
	// Spin for the whole wait, never sleep: a latency-critical worker
	// does, and it keeps the eventfd sleep path out of the figures.
	opt := client.Options{Spin: time.Hour}
	cli, err := client.Dial(filepath.Join(dir, "10.0.0.1.sock"), opt)
	if err != nil {
		return nil, err
	}
	srv, err := client.Dial(filepath.Join(dir, "10.0.0.2.sock"), opt)
	if err != nil {
		cli.Close()
		return nil, err
	}
	w := &WorkerPair{cli: cli, srv: srv, dst: client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: port}}
	if err := checkRegion(cli, maxSize, inFlight); err != nil {
		w.Close()
		return nil, err
	}
	if err := checkRegion(srv, maxSize, maxSize); err != nil {
		w.Close()
		return nil, err
	}
	if err := srv.Bind(port); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// checkRegion says whether c's region takes messages of maxSize bytes
// and has inFlight bytes of transmit arena.
func checkRegion(c *client.Client, maxSize, inFlight int) error {
	if m := c.MaxMessage(); m < maxSize {
		return fmt.Errorf("the daemon's worker regions take messages of up to %d bytes, the scenario sends %d (protocol.max_message, demo/workers.yaml)", m, maxSize)
	}
	if a := c.Stats().ArenaFree; a < uint64(inFlight) {
		return fmt.Errorf("the daemon's worker regions have %d bytes of transmit arena, the scenario keeps %d in flight (workers.max_bytes, demo/workers.yaml)", a, inFlight)
	}
	return nil
}

func (w *WorkerPair) Close() {
	w.cli.Close()
	w.srv.Close()
}

// RPC is one echo RPC of msg, one at a time on this goroutine: Send, the
// server worker's Receive and Reply with the same bytes, the client's
// Wait. It returns the response's length.
func (w *WorkerPair) RPC(msg []byte) (int, error) {
	id, err := w.cli.Send(w.dst, msg)
	if err != nil {
		return 0, err
	}
	req, err := w.srv.Receive(10 * time.Second)
	if err != nil {
		return 0, fmt.Errorf("server worker: %w", err)
	}
	if req.Err != nil || !req.Request {
		return 0, fmt.Errorf("server worker received %+v", req)
	}
	err = w.srv.Reply(req, req.Data)
	req.Release()
	if err != nil {
		return 0, err
	}
	resp, err := w.cli.Wait(id, 10*time.Second)
	if err != nil {
		return 0, err
	}
	n := len(resp.Data)
	resp.Release()
	return n, nil
}

// CPUSelf is this process's user+system CPU time (getrusage).
func CPUSelf() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Measure times rt warmup times unrecorded (for at most maxTime/4 after
// the first minWarmup), then up to count times (at least min(count,
// minRecorded), at most for maxTime) into a histogram. The time limits are
// checked after every round trip: a 64 MB one takes tens of milliseconds,
// so a size's point takes at most about 1.25 maxTime plus minWarmup +
// minRecorded of its round trips.
func Measure(rt func() error, warmup, count int, maxTime time.Duration, prog *Progress) (*hdrhistogram.Histogram, error) {
	w0 := time.Now()
	for i := range warmup {
		if err := rt(); err != nil {
			return nil, fmt.Errorf("warm-up round trip %d: %w", i, err)
		}
		if i+1 >= MinWarmup && time.Since(w0) > maxTime/4 {
			break
		}
	}
	h := hdrhistogram.New(1, 60_000_000_000, 3)
	start := time.Now()
	for i := range count {
		t0 := time.Now()
		if err := rt(); err != nil {
			return nil, fmt.Errorf("round trip %d: %w", i, err)
		}
		t1 := time.Now()
		h.RecordValue(t1.Sub(t0).Nanoseconds())
		el := t1.Sub(start)
		over := el > maxTime
		if i%64 == 0 || over {
			prog.Set(max(float64(i)/float64(count), float64(el)/float64(maxTime)))
		}
		if over && i+1 >= MinRecorded {
			break
		}
	}
	return h, nil
}

// The fewest round trips measure makes of a size before its time limits
// stop it: warm-up (the first waits for ARP, the first of a size touches
// its arena and pool pages), and recorded.
const MinWarmup, MinRecorded = 3, 10
