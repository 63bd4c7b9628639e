package daemon

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"golang.org/x/sys/unix"
)

// A daemon whose memif peer is SIGKILLed mid-traffic and started again,
// over and over: the peer's memif teardown runs on the daemon's interrupt
// thread while its loop polls (the burst guard waits for a burst in
// flight), the loop stops polling the port while its link is down, a
// memif client redials, a killed server's socket file is removed by the
// next one. The daemon under test is the RPC client (tolerant: an RPC
// caught by a kill may fail), its peer the echo server.

// killedPeer is one daemon under test and its peer, restarted at will.
type killedPeer struct {
	t                    *testing.T
	sock                 string
	daemonRole, peerRole string // memif roles
	daemon, peer         *memifProc
	env                  []string // the peer's
}

func newKilledPeer(t *testing.T, daemonRole string, more ...string) *killedPeer {
	t.Helper()
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("two daemons need two CPUs")
	}
	k := &killedPeer{t: t, sock: filepath.Join(t.TempDir(), "memif.sock"), daemonRole: daemonRole, peerRole: "server"}
	if daemonRole == "server" {
		k.peerRole = "client"
	}
	start := func() {
		k.daemon = startDaemonChild(t, "", "client", "HOMA_TEST_SOCK="+k.sock, 1<<30, 0,
			append([]string{"HOMA_TEST_MEMIF_ROLE=" + daemonRole, "HOMA_TEST_TOLERANT=1", "HOMA_TEST_MAX_SIZE=100000"}, more...)...)
	}
	if daemonRole == "server" { // the memif server first: its socket must exist for the client's first dial
		start()
		k.waitSocket()
		k.startPeer()
	} else {
		k.startPeer()
		k.waitSocket()
		start()
	}
	k.daemon.expect(t, "up", 30*time.Second)
	k.peer.expect(t, "up", 30*time.Second)
	return k
}

func (k *killedPeer) waitSocket() {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(k.sock); err == nil {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatal("the memif server's socket did not appear within 20 s")
		}
	}
}

func (k *killedPeer) startPeer() {
	k.peer = startDaemonChild(k.t, "", "server", "HOMA_TEST_SOCK="+k.sock, 0, 0, "HOMA_TEST_MEMIF_ROLE="+k.peerRole)
}

// killPeer SIGKILLs the peer and checks that the daemon lives on.
func (k *killedPeer) killPeer() {
	k.t.Helper()
	pid := k.peer.cmd.Process.Pid
	k.peer.cmd.Process.Kill()
	k.peer.waitAll()
	// Without hugepages EAL keeps a runtime directory per file prefix.
	os.RemoveAll(fmt.Sprintf("/var/run/dpdk/homamemif%d", pid))
	k.daemon.alive(k.t)
}

// alive fails the test if the child has exited (a zombie, not reaped).
func (p *memifProc) alive(t *testing.T) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if i := strings.LastIndexByte(string(stat), ')'); err != nil || i < 0 || strings.HasPrefix(string(stat[i+1:]), " Z") {
		p.waitAll()
		t.Fatalf("the daemon died (%v); its stderr ends:\n%s", p.cmd.ProcessState, p.stderr.String())
	}
}

// count asks the RPC client for its counts; a response that differed from
// its request fails the test.
func (p *memifProc) count(t *testing.T) (ok, failed uint64) {
	t.Helper()
	p.stdin.Write([]byte("count\n"))
	for {
		l := p.expect(t, "", 20*time.Second)
		if !strings.HasPrefix(l, "count ") {
			continue
		}
		var errText string
		if _, err := fmt.Sscanf(l, "count ok=%d failed=%d err=%s", &ok, &failed, &errText); err != nil {
			t.Fatalf("count line %q: %v", l, err)
		}
		if errText != "<nil>" {
			t.Fatalf("the RPC client failed: %s", l)
		}
		return ok, failed
	}
}

// waitRPCs waits until the daemon has completed n more RPCs than base.
func (k *killedPeer) waitRPCs(base, n uint64, what string) uint64 {
	k.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ok, failed := k.daemon.count(k.t)
		if ok >= base+n {
			return ok
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s: %d RPCs completed (%d failed), want %d more than %d within 30 s; the daemon's stderr ends:\n%s",
				what, ok, failed, n, base, k.daemon.stderr.String())
		}
	}
}

// terminate sends SIGTERM and wants the process to exit within limit, with
// status 0; it returns the time from the signal to the exit. The exit is
// the kernel's: the process's pidfd turns readable once all its threads
// are gone. cmd.Wait, which reaps it, and the end of its stderr are
// waited for too and told apart: in one slow run /proc no longer had the
// process 10 ms after the signal — it was reaped — while cmd.Wait
// returned 11.5 s later, a delay in this process, not the daemon's.
func (p *memifProc) terminate(t *testing.T, who string, limit time.Duration) time.Duration {
	t.Helper()
	pid := p.cmd.Process.Pid
	gone := make(chan time.Duration, 1)
	start := time.Now()
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		go func() {
			defer unix.Close(fd)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, -1); err != unix.EINTR {
					break
				}
			}
			gone <- time.Since(start)
		}()
	} else {
		t.Logf("%s: pidfd_open: %v; its exit is timed by cmd.Wait", who, err)
	}
	stolen := stealTime()
	t.Logf("%s: SIGTERM at %s", who, start.Format("15:04:05.000000"))
	p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	exited := make(chan struct{})
	var waited time.Duration
	go func() { err = p.cmd.Wait(); waited = time.Since(start); close(exited) }()
	watched := make(chan struct{})
	go func() { p.watchExit(t, who, start, exited); close(watched) }()
	defer func() { <-watched }()
	var took time.Duration
	select {
	case took = <-gone:
	case <-exited:
		took = waited
	case <-time.After(limit):
		p.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines' stacks, to stderr
		<-exited
		p.waitAll()
		t.Fatalf("%s did not stop within %v of SIGTERM; its stderr ends:\n%s", who, limit, p.stderr.String())
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s exited %v after SIGTERM, but cmd.Wait had not returned 30 s later", who, took.Round(time.Millisecond))
	}
	select {
	case <-p.stderrDone:
	case <-time.After(500 * time.Millisecond):
		t.Logf("%s: exited %v after SIGTERM, its stderr still open 500 ms after cmd.Wait; held by %v", who,
			took.Round(time.Millisecond), pipeHolders(p.stderrPipe))
		p.waitAll()
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Logf("%s: exited %v after SIGTERM (its pidfd), cmd.Wait returned at %v, its stderr ended at %v; CPU time the machine's hypervisor took meanwhile (steal), per CPU: %v",
			who, took.Round(time.Millisecond), waited.Round(time.Millisecond), el.Round(time.Millisecond), stealSince(stolen))
	}
	if err != nil {
		t.Errorf("%s: exit after SIGTERM: %v; its stderr ends:\n%s", who, err, p.stderr.String())
	}
	return took
}

// watchExit records, until the process is reaped, what /proc shows of
// it every 2 ms — the leader's state, the threads the kernel still counts
// (status "Threads:"), each task's state — as a timeline of changes, and
// at 1 s every task's kernel stack; for a slow exit (over 500 ms) it logs
// them. Each read runs on a goroutine of its own: a read of /proc that
// blocks (on the exiting process's memory, say) is itself recorded, with
// how long it took, and does not stop the timeline.
func (p *memifProc) watchExit(t *testing.T, who string, start time.Time, exited <-chan struct{}) {
	pid := p.cmd.Process.Pid
	var timeline []string
	last := ""
	note := func(what string) {
		timeline = append(timeline, fmt.Sprintf("%8.1f ms %s", float64(time.Since(start).Microseconds())/1000, what))
	}
	dumped := false
	for {
		select {
		case <-exited:
			if el := time.Since(start); el > 500*time.Millisecond {
				note("reaped")
				t.Logf("%s: exit timeline (from SIGTERM):\n  %s", who, strings.Join(timeline, "\n  "))
			}
			return
		case <-time.After(2 * time.Millisecond):
		}
		begin := time.Now()
		got := make(chan string, 1)
		go func() { got <- procSnapshot(pid) }()
		var snap string
		select {
		case snap = <-got:
		case <-exited:
			continue // reaped meanwhile: the next turn logs
		case <-time.After(50 * time.Millisecond):
			note("a read of /proc blocks")
			select {
			case snap = <-got:
			case <-exited:
				note(fmt.Sprintf("reaped while a read of /proc was blocked for %v", time.Since(begin).Round(time.Millisecond)))
				continue
			}
			note(fmt.Sprintf("the read returned after %v", time.Since(begin).Round(time.Millisecond)))
		}
		if snap != last {
			note(snap)
			last = snap
		}
		if !dumped && time.Since(start) > time.Second {
			dumped = true
			report := make(chan string, 1)
			go func() { report <- threadReport(pid) }()
			select {
			case r := <-report:
				note("tasks at 1 s:\n" + r)
			case <-time.After(time.Second):
				note("the tasks' report at 1 s blocked for 1 s")
			}
		}
	}
}

// procSnapshot is one line of what /proc shows of process pid: its
// leader's state, the threads its status counts, and each task's state.
func procSnapshot(pid int) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "no /proc entry (" + err.Error() + ")"
	}
	var state, threads string
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			state = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			threads = strings.TrimSpace(v)
		}
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var states []string
	for _, task := range tasks {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+3 <= len(stat) {
			states = append(states, task.Name()+":"+string(stat[i+2:i+3]))
		} else {
			states = append(states, task.Name()+":?")
		}
	}
	return fmt.Sprintf("leader %s, Threads: %s, tasks %v", state, threads, states)
}

// threadReport is each thread of pid: its name, state, wait channel and
// kernel stack (as root).
func threadReport(pid int) string {
	var b strings.Builder
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		comm, _ := os.ReadFile(dir + "comm")
		stat, _ := os.ReadFile(dir + "stat")
		state := ""
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+3 <= len(stat) {
			state = string(stat[i+2 : i+3])
		}
		wchan, _ := os.ReadFile(dir + "wchan")
		stack, _ := os.ReadFile(dir + "stack")
		// schedstat: ns on a CPU, ns runnable waiting for one, timeslices.
		sched, _ := os.ReadFile(dir + "schedstat")
		fmt.Fprintf(&b, "  %s %s %s wchan=%s schedstat=%s\n%s", task.Name(), strings.TrimSpace(string(comm)), state, wchan,
			strings.TrimSpace(string(sched)), stack)
	}
	return b.String()
}

// stealTime is each CPU's steal time from /proc/stat (in clock ticks):
// time its hypervisor ran something else while the CPU had work. A
// thread pinned to a CPU that is stolen stops for as long.
func stealTime() []uint64 {
	data, _ := os.ReadFile("/proc/stat")
	var steal []uint64
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 8 && strings.HasPrefix(f[0], "cpu") && f[0] != "cpu" {
			var v uint64
			fmt.Sscan(f[8], &v)
			steal = append(steal, v)
		}
	}
	return steal
}

// stealSince is the steal time per CPU since before (at 100 ticks a
// second).
func stealSince(before []uint64) []time.Duration {
	now := stealTime()
	d := make([]time.Duration, len(now))
	for i := range now {
		if i < len(before) {
			d[i] = time.Duration(now[i]-before[i]) * 10 * time.Millisecond
		}
	}
	return d
}

func runPeerKills(t *testing.T, daemonRole string, kills int) {
	k := newKilledPeer(t, daemonRole)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	ok := k.waitRPCs(0, 10, "before the first kill")
	start := time.Now()
	for i := range kills {
		time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond) // mid-traffic, at a different moment each time
		k.killPeer()
		k.startPeer()
		k.peer.expect(t, "up", 30*time.Second)
		ok = k.waitRPCs(ok, 5, fmt.Sprintf("after restart %d", i+1))
	}
	ok, failed := k.daemon.count(t)
	t.Logf("%d kills of the memif %s peer in %v: %d RPCs completed, %d failed", kills, k.peerRole,
		time.Since(start).Round(time.Millisecond), ok, failed)
	if d := k.daemon.terminate(t, "the daemon", 5*time.Second); d > 2*time.Second {
		t.Errorf("the daemon took %v to stop", d)
	}
	k.peer.terminate(t, "the peer", 5*time.Second)
}

// The daemon is a memif client: its server is killed and started again
// 100 times; the daemon redials each time.
func TestMemifPeerKilled_serverHundredTimes(t *testing.T) { runPeerKills(t, "client", 100) }

// The daemon is a memif server: its client is killed and started again
// 20 times.
func TestMemifPeerKilled_clientTwentyTimes(t *testing.T) { runPeerKills(t, "server", 20) }

// A daemon serving a worker whose RPCs go to a peer that is killed (the
// worker's zero-copy payloads wait in the TX queues of a port whose link
// is down) stops at once on SIGTERM: once after the peer came back, and
// with the peer gone.
func TestMemifPeerKilled_workersDaemonStopsAtOnce(t *testing.T) {
	wsock := filepath.Join(t.TempDir(), "workers.sock")
	k := newKilledPeer(t, "client", "HOMA_TEST_WORKERS="+wsock)
	cli, err := client.Dial(wsock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var ok, failed atomic.Uint64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // the worker: RPCs of 1 B to 100 KB to the peer's echo, 8 outstanding
		dst := client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}
		rng := rand.New(rand.NewPCG(3, 4))
		var ids []uint64
		for {
			select {
			case <-stop:
				close(stopped)
				return
			default:
			}
			for len(ids) < 8 {
				msg := make([]byte, 1+rng.IntN(100_000))
				id, err := cli.Send(dst, msg)
				if err != nil { // a limit, or the session gone
					failed.Add(1)
					time.Sleep(time.Millisecond)
					break
				}
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				continue
			}
			// A short wait: with the peer gone, new RPCs keep coming,
			// their payloads waiting in the daemon.
			resp, err := cli.Wait(ids[0], 20*time.Millisecond)
			ids = ids[1:]
			if err != nil { // timed out or failed
				failed.Add(1)
				continue
			}
			resp.Release()
			ok.Add(1)
		}
	}()
	waitWorker := func(n uint64, what string) {
		defer func(start time.Time) { t.Logf("%s: %d RPCs in %v", what, n, time.Since(start).Round(time.Millisecond)) }(time.Now())
		base := ok.Load()
		for deadline := time.Now().Add(30 * time.Second); ok.Load() < base+n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the worker completed %d RPCs (%d failed) in 30 s", what, ok.Load()-base, failed.Load())
			}
		}
	}
	waitWorker(20, "before the kill")
	k.killPeer()
	k.startPeer()
	k.peer.expect(t, "up", 30*time.Second)
	waitWorker(20, "after the peer came back")
	k.killPeer() // gone for good: the daemon's link stays down
	time.Sleep(300 * time.Millisecond)
	close(stop) // still attached, its RPCs to the gone peer outstanding
	begin := time.Now()
	<-stopped
	t.Logf("the worker stopped in %v", time.Since(begin).Round(time.Millisecond))
	d := k.daemon.terminate(t, "the daemon", 5*time.Second)
	t.Logf("the daemon stopped in %v", d.Round(time.Millisecond))
	if d > 2*time.Second {
		t.Errorf("the daemon took %v to stop", d)
	}
	t.Logf("worker: %d RPCs completed, %d failed", ok.Load(), failed.Load())
}

// A memif server stopped by SIGTERM once it is up (its client connected,
// RPCs flowing) removes its socket file, as a stop during start-up does:
// net_memif deletes it only when its port is closed, and a daemon that
// only stopped the port left it for the next start to find stale.
func TestStop_memifServerRemovesItsSocket(t *testing.T) {
	k := newKilledPeer(t, "server")
	k.waitRPCs(0, 10, "before the stop")
	k.daemon.terminate(t, "the daemon", 5*time.Second)
	if _, err := os.Lstat(k.sock); err == nil {
		t.Errorf("the memif server's socket %s is left after its stop", k.sock)
	}
	k.peer.terminate(t, "the peer", 5*time.Second)
}
