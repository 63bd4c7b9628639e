package rate

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
)

// What the rate scenario reads of the daemon besides its CPU time: its
// memory (/proc/PID/status) and, from its Prometheus endpoint, the
// counters of what its bounds refused; and the bounds it raises for the
// run that holds 10,000 RPCs outstanding.

// ProcMemory is a process's memory from /proc/PID/status, in KiB.
type ProcMemory struct {
	VmRSSKB    int64 `json:"vm_rss_kib"`   // resident: RssAnon + RssFile + RssShmem
	VmHWMKB    int64 `json:"vm_hwm_kib"`   // the most VmRSS has been since the process started
	RssAnonKB  int64 `json:"rss_anon_kib"` // private memory: the Go heap and stacks, DPDK's memory under --no-huge
	RssFileKB  int64 `json:"rss_file_kib"` // mapped files: the program and its libraries
	RssShmemKB int64 `json:"rss_shmem_kib"`
	// HugetlbKB is the hugetlb pages mapped (DPDK's memory and the worker
	// regions placed on hugepages), not counted in VmRSS.
	HugetlbKB int64 `json:"hugetlb_kib"`
}

// readProcMemory reads pid's ProcMemory.
func readProcMemory(pid int) (ProcMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcMemory{}, err
	}
	return parseProcStatus(string(b))
}

// parseProcStatus reads the memory lines of a /proc/PID/status text
// ("VmRSS:\t  12345 kB"); VmRSS and VmHWM must be there.
func parseProcStatus(s string) (ProcMemory, error) {
	var m ProcMemory
	fields := map[string]*int64{"VmRSS": &m.VmRSSKB, "VmHWM": &m.VmHWMKB, "RssAnon": &m.RssAnonKB,
		"RssFile": &m.RssFileKB, "RssShmem": &m.RssShmemKB, "HugetlbPages": &m.HugetlbKB}
	seen := 0
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, ":")
		p := fields[k]
		if !ok || p == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("/proc status: %q", l)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc status: %q: %w", l, err)
		}
		*p = n
		if k == "VmRSS" || k == "VmHWM" {
			seen++
		}
	}
	if seen != 2 {
		return m, fmt.Errorf("/proc status without VmRSS and VmHWM")
	}
	return m, nil
}

// daemonMetrics reads a daemon's counters and keeps the last reading, so
// that each stretch of a run gets the refusals since the one before.
type daemonMetrics struct {
	addr string
	last []homapeer.Sample
}

// refusalsSince reads the counters once the loop has published them
// (homapeer.MetricsSettle) and returns what the daemon's bounds refused since the
// last reading.
func (m *daemonMetrics) refusalsSince() ([]Refusal, error) {
	time.Sleep(homapeer.MetricsSettle)
	s, err := homapeer.ScrapeMetrics(m.addr)
	if err != nil {
		return nil, err
	}
	r := refusals(m.last, s)
	m.last = s
	return r, nil
}

// refusalCounter is a daemon counter of what one of its bounds refused
// (or of RPCs that failed), with the config key of the bound.
type refusalCounter struct {
	metric       string // the family
	label, value string // the sample of the family that counts it ("" label: the family has one per host)
	counter      string // its name in the report
	key          string
}

// refusalCounters are the counters the rate scenario reports: every
// bound that could stop RPCs from being outstanding, and the RPCs that
// failed for silence.
var refusalCounters = []refusalCounter{
	{"homa_worker_refusals_total", "cause", "limit", "limit_refusals", "workers.max_outstanding (Sends refused, requests dropped)"},
	{"homa_worker_backlog_full_total", "", "", "backlog_full", "workers.max_backlog"},
	{"homa_worker_refusals_total", "cause", "no_recv_space", "no_recv_space", "workers.pool_bytes"},
	{"homa_worker_connections_refused_total", "cause", "session_limit", "session_limit_refusals", "workers.max_sessions_per_uid"},
	{"homa_drops_total", "reason", "peer_rpc_limit", "drops_peer_rpc_limit", "protocol.max_server_rpcs_per_peer"},
	{"homa_drops_total", "reason", "server_rpc_limit", "drops_server_rpc_limit", "protocol.max_server_rpcs"},
	{"homa_drops_total", "reason", "rx_staging_full", "drops_rx_staging_full", "protocol.max_staging_bytes"},
	{"homa_drops_total", "reason", "rx_no_space", "drops_rx_no_space", "workers.pool_bytes"},
	{"homa_tx_refused_total", "cause", "no_mbuf", "no_mbuf", "mempool.mbufs"},
	{"homa_rpc_timeouts_total", "", "", "rpc_timeouts", "(no bound: client RPCs failed for silence)"},
}

// Refusal is how often one of the daemon's bounds refused something on
// one host over a stretch of the run (refusalCounters).
type Refusal struct {
	Host    string  `json:"host"`
	Counter string  `json:"counter"` // as the daemon's metrics name it
	Key     string  `json:"key"`     // the config key of the bound
	Count   float64 `json:"count"`
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s %s %.0f (%s)", r.Host, r.Counter, r.Count, r.Key)
}

// refusals are the counters of refusalCounters that grew from before to
// after, by host.
func refusals(before, after []homapeer.Sample) []Refusal {
	at := func(samples []homapeer.Sample, rc refusalCounter, host string) float64 {
		v := 0.0
		for _, s := range samples {
			if s.Name == rc.metric && s.Labels["host"] == host && (rc.label == "" || s.Labels[rc.label] == rc.value) {
				v += s.Value
			}
		}
		return v
	}
	var hosts []string
	for _, s := range after {
		if h := s.Labels["host"]; h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	var out []Refusal
	for _, h := range hosts {
		for _, rc := range refusalCounters {
			if d := at(after, rc, h) - at(before, rc, h); d > 0 {
				out = append(out, Refusal{Host: h, Counter: rc.counter, Key: rc.key, Count: d})
			}
		}
	}
	return out
}

// gauge is the value of the daemon's gauge metric on host (0 when
// absent).
func gauge(samples []homapeer.Sample, metric, host string) float64 {
	for _, s := range samples {
		if s.Name == metric && s.Labels["host"] == host {
			return s.Value
		}
	}
	return 0
}

// The demo's worker config (demo/workers.go over the config defaults)
// where it bounds the RPCs that can be outstanding between its hosts, or
// how long they may stay silent.
const (
	demoMaxOutstanding       = 1024 // workers.max_outstanding, per worker session
	demoMaxBacklog           = 4096 // workers.max_backlog
	demoRingEntries          = 1024 // workers.ring_entries
	demoMaxServerRPCs        = 8192 // protocol.max_server_rpcs, per host
	demoMaxServerRPCsPerPeer = 1024 // protocol.max_server_rpcs_per_peer, per client address
	demoMaxSessionsPerUID    = 8    // workers.max_sessions_per_uid, per host (demo/workers.go)
	demoResendTicks          = 5    // protocol.resend_ticks (ticks of 1 ms)
	demoResendInterval       = 5    // protocol.resend_interval
	demoTimeoutTicks         = 100  // protocol.timeout_ticks
	maxResendTicks           = 1000 // the most protocol.resend_ticks and resend_interval take
)

// ConfigKey is a key of the daemon's config that a run sets apart from
// the demo's value, and why.
type ConfigKey struct {
	Key  string `json:"key"`
	Demo int    `json:"demo"` // the demo's value
	Run  int    `json:"run"`  // this run's
	Why  string `json:"why"`
}

// Env is the key's HOMA_* variable, which overrides the demo config.
func (k ConfigKey) Env() string {
	return "HOMA_" + strings.ToUpper(strings.ReplaceAll(k.Key, ".", "_")) + "=" + strconv.Itoa(k.Run)
}

// heldKeys are the keys set apart from the demo's so that workers
// sessions can hold held RPCs outstanding at once, each worker a share of
// them towards its own server worker, all from one client host to the
// other, for up to holdFor. The bounds get the least values that take
// them, with room for the server RPCs of the warm-up just before (unacked
// of them: its answered RPCs not yet acknowledged, at most as many as it
// had outstanding). The timers keep the held RPCs from asking (RESEND)
// and timing out while they wait.
func heldKeys(held, workers, unacked int, holdFor time.Duration) []ConfigKey {
	share := (held + workers - 1) / workers
	out := max(demoMaxOutstanding, share)
	perPeer := max(demoMaxServerRPCsPerPeer, held+unacked)
	timeout := max(demoTimeoutTicks, maxResendTicks+1, int(3*holdFor/time.Millisecond))
	return []ConfigKey{
		{Key: "workers.max_outstanding", Demo: demoMaxOutstanding, Run: out,
			Why: fmt.Sprintf("each of the %d client workers keeps %d RPCs outstanding and each server worker holds as many requests unanswered", workers, share)},
		{Key: "workers.max_backlog", Demo: demoMaxBacklog, Run: max(demoMaxBacklog, 2*out+demoRingEntries),
			Why: "at least 2 x workers.max_outstanding (the config refuses less); here the hub's default formula, 2 x max_outstanding + ring_entries"},
		{Key: "protocol.max_server_rpcs_per_peer", Demo: demoMaxServerRPCsPerPeer, Run: perPeer,
			Why: fmt.Sprintf("all %d requests come from one client address; %d more for the warm-up's answered RPCs not yet acknowledged", held, unacked)},
		{Key: "protocol.max_server_rpcs", Demo: demoMaxServerRPCs, Run: max(demoMaxServerRPCs, perPeer),
			Why: "at least protocol.max_server_rpcs_per_peer (the config refuses less)"},
		{Key: "protocol.resend_ticks", Demo: demoResendTicks, Run: maxResendTicks,
			Why: "a held RPC hears nothing until all are held and answered; with 5 ticks each asks with a RESEND every resend_interval " +
				"and its server answers BUSY, two packets per held RPC per 5 ms, which in the runs made while writing this scenario " +
				"overflowed the ports' TX queues (drops_tx_no_buffer): the BUSYs were lost and most held RPCs timed out. 1 s, the most " +
				"the config takes: no RESEND while they are held"},
		{Key: "protocol.resend_interval", Demo: demoResendInterval, Run: maxResendTicks,
			Why: "one RESEND a second per held RPC, should a hold last longer than resend_ticks"},
		{Key: "protocol.timeout_ticks", Demo: demoTimeoutTicks, Run: timeout,
			Why: fmt.Sprintf("a held RPC is silent for the whole hold, which may last up to %v: three times that (more than resend_ticks, as the config wants)", holdFor)},
	}
}

// keysText names keys and their values: "workers.max_outstanding 1024 -> 2500, ...".
func keysText(keys []ConfigKey) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d -> %d", k.Key, k.Demo, k.Run))
	}
	return strings.Join(parts, ", ")
}
