package homapeer

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
)

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

	// Metrics is its metrics endpoint, host:port, where the harness gave
	// it one (HOMA_METRICS_ADDRESS); "": none.
	Metrics string
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
		return nil, fmt.Errorf("the daemon exited before it was up (%v); its log: %s\n%s", err, logPath, perf.Tail(logPath, 2000))
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

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// CPU is the daemon's user and system CPU time so far (/proc/PID/stat,
// all its threads; resolution one clock tick, 10 ms).
func (d *Daemon) CPU() (time.Duration, error) { return procstat.CPU(d.Pid()) }

// Counters reads the daemon's /proc/PID/stat.
func (d *Daemon) Counters() (procstat.Counters, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.Pid()))
	if err != nil {
		return procstat.Counters{}, err
	}
	return procstat.ParseStat(b)
}

// Stop sends SIGTERM, waits for the daemon to exit and returns its
// polling loop's statistics.
func (d *Daemon) Stop() (perf.LoopStats, error) {
	st := perf.LoopStats{Loop: "daemon (both hosts, lcore 1)"}
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

// Pinned runs fn on a thread of the harness pinned to cpu (its workers'
// side, perf.OnPinnedThread), then stops the daemon: its loop's
// statistics, and fn's error or the stop's, which names the daemon's log.
func (d *Daemon) Pinned(cpu int, fn func() error) (perf.LoopStats, error) {
	err := perf.OnPinnedThread(cpu, "", fn)
	loop, stopErr := d.Stop()
	if err = cmp.Or(err, stopErr); err != nil {
		err = fmt.Errorf("%w (daemon log: %s)", err, d.log.Name())
	}
	return loop, err
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
