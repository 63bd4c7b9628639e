package slowdown

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/internal/child"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/tcppeer"
)

// daemon is one homa-dpdk run process in a host namespace.
type daemon struct {
	ns     string
	ip     string
	socket string
	log    string
	cmd    *exec.Cmd
	done   chan error
}

const metricsAddr = "127.0.0.1:9464"

// startDaemon runs `homa-dpdk run` in ns on its eth0.
func startDaemon(bin, dir, ns, ip, linkSpeed, eal, protocol, runtime string) (*daemon, error) {
	d := &daemon{ns: ns, ip: ip, socket: filepath.Join(dir, ns+".sock"), log: filepath.Join(dir, ns+".log")}
	cfg := fmt.Sprintf(`eal: [%s, "--no-pci", "--no-huge", "-m", "256", "--file-prefix", "%s", "--vdev", "net_af_packet0,iface=eth0"]
lcores: [1]
ports:
  - device: net_af_packet0
    address: %s/24
    link_speed: %s
metrics:
  address: %s
log:
  level: warn
protocol:
%sruntime:
  idle: adaptive
%sworkers:
  socket: %s
  max_bytes: 67108864
  pool_bytes: 536870912
  max_outstanding: 4096
  max_backlog: 8192
`, eal, ns, ip, linkSpeed, metricsAddr, protocol, runtime, d.socket)
	path := filepath.Join(dir, ns+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	out, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	d.cmd = exec.Command("ip", "netns", "exec", ns, bin, "run", "--config", path)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	done, err := child.Start(d.cmd, syscall.SIGKILL) // no daemon outlives the harness
	if err != nil {
		out.Close()
		return nil, err
	}
	d.done = make(chan error, 1)
	go func() { d.done <- <-done; out.Close() }()
	return d, nil
}

// dial attaches a worker, waiting for the daemon to come up.
func (d *daemon) dial(spin time.Duration) (*client.Client, error) {
	end := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(d.socket, client.Options{Spin: spin})
		if err == nil {
			return c, nil
		}
		select {
		case e := <-d.done:
			d.done <- e
			return nil, fmt.Errorf("daemon in %s exited (%v): %s", d.ns, e, perf.Tail(d.log, 2000))
		default:
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("worker socket of %s: %w; log: %s", d.ns, err, perf.Tail(d.log, 2000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop interrupts the daemon and waits for it (kills it after 10 s).
func (d *daemon) stop() {
	if d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case e := <-d.done:
		d.done <- e
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// counterLabels are the labels that name a sample within its family
// (all but host and port).
var counterLabels = []string{"type", "reason", "cause", "event", "fault", "kind", "how", "direction", "queue"}

// metrics reads the daemon's /metrics (in its namespace): the longest gap
// between two passes of its loop since it started
// (homa_loop_max_pass_gap_seconds) and its counters that are not 0 (the
// homa_*_total families, summed over ports), each named as the family
// without homa_ and _total, then its labels' values in their names'
// order: packets_sent_DATA, drops_duplicate_data, rpc_timeouts.
func (d *daemon) metrics() (gap float64, counters map[string]float64, err error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		Dial:              func(_, addr string) (net.Conn, error) { return tcppeer.Dial(d.ns, addr) },
	}}
	resp, err := hc.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	samples, err := homapeer.ParseMetrics(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	gap, counters = -1.0, map[string]float64{}
	for _, s := range samples {
		family, counter := strings.CutSuffix(strings.TrimPrefix(s.Name, "homa_"), "_total")
		switch {
		case s.Name == "homa_loop_max_pass_gap_seconds":
			gap = max(gap, s.Value)
		case counter && s.Value != 0:
			for _, l := range slices.Sorted(maps.Keys(s.Labels)) {
				if slices.Contains(counterLabels, l) {
					family += "_" + s.Labels[l]
				}
			}
			counters[family] += s.Value
		}
	}
	if gap < 0 {
		return 0, counters, errors.New("no homa_loop_max_pass_gap_seconds in /metrics")
	}
	return gap, counters, nil
}
