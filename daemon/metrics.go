package daemon

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	hostpkg "github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Collector exports every host's counters, its worker hub's, its loop's
// and its port's DPDK statistics, by Prometheus' naming rules: one
// family per meaning (a sum over a family's labels means something),
// units in the names (_bytes, _seconds, _packets), _total on counters.
// Every family but the process-wide ones carries the labels host (the
// Homa address) and port (the DPDK port's name).
type Collector struct {
	Hosts []*hostpkg.Host
	// Shards are each port's shards (Shards[i][0] is Hosts[i]); a port
	// of several reports their counters summed. nil: one host a port.
	Shards [][]*hostpkg.Host
	Hubs   []*hub.Set    // per port (its shards' hubs), nil for none; may be shorter than Hosts
	Loops  []*lcore.Loop // per host (hosts sharing an lcore share its loop); may be shorter than Hosts (nil loop: none)

	mu       sync.Mutex // Readiness and Health's
	passes   []uint64   // per host: its loop's passes at passesAt (Readiness)
	passesAt []time.Time
}

var labels = []string{"host", "port"}

// family is a metric family's name, help and labels beyond host and port.
type family struct {
	name, help string
	extra      []string
	perHost    bool // carries host and port
}

// families are every family the collector exports, but the engine's
// scalar counters, which engine.CounterHelp describes (homa_NAME_total).
var families = []family{
	{"homa_packets_sent_total", "Homa packets sent, by type.", []string{"type"}, true},
	{"homa_packets_received_total", "Homa packets received, by type.", []string{"type"}, true},
	{"homa_drops_total", "Frames dropped before use, by where (host: before the engine; engine: its checks and bounds) and why.", []string{"stage", "reason"}, true},
	{"homa_rpc_round_trip_seconds", "Client RPCs completed, by the time from the application's send to the response's last byte (the engine's clock).", nil, true},
	{"homa_message_size_bytes", "Messages received whole (requests and responses), by length.", nil, true},
	{"homa_arp_packets_received_total", "ARP packets answered or learned from, by kind.", []string{"kind"}, true},
	{"homa_arp_entries_learned_total", "Neighbour entries learned from ARP.", nil, true},
	{"homa_icmp_echo_requests_total", "ICMP and ICMPv6 echo requests answered.", nil, true},
	{"homa_ndp_solicitations_total", "IPv6 neighbour solicitations for this host's address (each answered with an advertisement).", nil, true},
	{"homa_ndp_advertisements_total", "IPv6 neighbour advertisements learned from.", nil, true},
	{"homa_host_frames_ignored_total", "Frames the host stack did not handle, by reason.", []string{"reason"}, true},
	{"homa_tx_refused_total", "Buffers refused to the engine, by cause: no mbuf, or the TX queues backed up.", []string{"cause"}, true},
	{"homa_faults_injected_total", "Received packets the fault injector dropped, duplicated or reordered.", []string{"fault"}, true},
	{"homa_txq_enqueued_packets_total", "Packets given to a TX queue.", []string{"queue"}, true},
	{"homa_txq_sent_packets_total", "Packets a TX queue handed to the NIC.", []string{"queue"}, true},
	{"homa_txq_returned_packets_total", "Packets the NIC refused from a TX queue, kept and retried.", []string{"queue"}, true},
	{"homa_txq_dropped_packets_total", "Packets dropped because a TX queue was full.", []string{"queue"}, true},
	{"homa_txq_completions_total", "Packets a TX queue's device let go of (freed once sent, or received by a ring pair's peer), by how the completion counted: completed (in order), late (held past 10 ms: counted sent while the device still held it), untracked (no room to track it: counted sent when taken).", []string{"queue", "kind"}, true},
	{"homa_txq_in_device_packets", "Packets a TX queue's device (its hardware ring, or a ring pair's peer) holds now.", []string{"queue"}, true},
	{"homa_capture_dropped_packets_total", "Packets not captured: the writer was behind, or the capture stopped at capture.max_bytes.", nil, true},
	{"homa_rx_chained_frames_total", "Chained frames received, by how: parsed in place, or joined into one buffer (a copy).", []string{"how"}, true},
	{"homa_neighbour_requests_sent_total", "ARP requests and neighbour solicitations sent to resolve or probe a peer.", nil, true},
	{"homa_neighbour_resolution_failures_total", "Neighbour resolutions that gave up.", nil, true},
	{"homa_neighbour_entries_expired_total", "Neighbour entries aged out.", nil, true},
	{"homa_neighbour_table_full_total", "Neighbour entries refused at the table's bound: every entry held by a peer of the engine.", nil, true},
	{"homa_neighbour_entries_forgotten_total", "Neighbour entries dropped once unused.", nil, true},
	{"homa_neighbour_unsolicited_total", "ARP replies and neighbour advertisements for an address with no entry: discarded.", nil, true},
	{"homa_neighbour_override_refused_total", "Neighbour advertisements without Override whose MAC differed from a valid entry's: the MAC was kept.", nil, true},
	{"homa_neighbour_entries_evicted_total", "Neighbour entries heard from a request, unused, evicted to make room for a new one.", nil, true},
	{"homa_neighbour_entries_collected_total", "Neighbour entries heard from a request, unused, dropped an aging period after last heard.", nil, true},
	{"homa_port_link_events_total", "Link changes as the loop saw them: down, up, redials (restarts while down) and failed redials.", []string{"event"}, true},
	{"homa_port_link_down_dropped_packets_total", "Packets dropped because the link was down.", nil, true},
	{"homa_port_link_up", "1 while the port's link is up (at its loop's last check, every 10 ms).", nil, true},
	{"homa_worker_sessions_attached_total", "Worker sessions attached.", nil, true},
	{"homa_worker_sessions_detached_total", "Worker sessions detached.", nil, true},
	{"homa_worker_submissions_total", "Entries taken from workers' submission rings.", nil, true},
	{"homa_worker_bad_entries_total", "Submission entries refused as malformed (an error completion each).", nil, true},
	{"homa_worker_refusals_total", "Worker submissions refused, by cause: refused (the engine said no), limit (workers.max_outstanding), no_recv_space (the receive pool).", []string{"cause"}, true},
	{"homa_worker_connections_refused_total", "Connections to the worker socket refused before attaching, by cause: credentials (allow-lists) or session_limit (workers.max_sessions_per_uid).", []string{"cause"}, true},
	{"homa_worker_completions_total", "Completions written to workers' completion rings.", nil, true},
	{"homa_worker_completions_backlogged_total", "Completions that waited in the daemon for room in a completion ring.", nil, true},
	{"homa_worker_backlog_full_total", "Times a worker's backlog reached workers.max_backlog (its submission ring then waits unread).", nil, true},
	{"homa_worker_backlog_overflows_total", "Sessions ended: a completion owed to them found the backlog full.", nil, true},
	{"homa_worker_corrupt_rings_total", "Sessions ended because a ring index was corrupt.", nil, true},
	{"homa_worker_wakeups_total", "Eventfd writes that woke a sleeping worker.", nil, true},
	{"homa_worker_zero_copy_messages_total", "Messages sent from a worker's arena as external buffers (no copy).", nil, true},
	{"homa_worker_copied_messages_total", "Messages of workers whose payload was copied into the frames, by reason: short (under workers.zero_copy_min), off (workers.zero_copy_min 0), device (the port cannot send from memory).", []string{"reason"}, true},
	{"homa_worker_quiet_accepts_total", "Sends and replies accepted without an Accepted completion (the worker asked for none).", nil, true},
	{"homa_worker_priority_sends_total", "Sends that named the priority of their unscheduled packets (an NCCL trafficClass, say).", nil, true},
	{"homa_worker_pages_on_submit_total", "Runs of receive-pool pages given back on a send or reply instead of a ReturnPages entry.", nil, true},
	{"homa_worker_replies_after_close_total", "Replies taken from a worker's submission ring after it closed or died (they go out as the others).", nil, true},
	{"homa_worker_replies_lingered_total", "Replies still going when their worker closed or died, kept (with its session) until acked or workers.linger.", nil, true},
	{"homa_worker_replies_abandoned_total", "Replies of a closed worker ended unacked at workers.linger (their clients hear the port closed).", nil, true},
	{"homa_worker_lingering_sessions", "Sessions whose workers left while their replies still go out.", nil, true},
	{"homa_worker_sessions", "Worker sessions attached now.", nil, true},
	{"homa_worker_outstanding_rpcs", "Workers' RPCs outstanding now (client RPCs in flight and requests not yet answered).", nil, true},
	{"homa_worker_pool_pages", "Receive-pool pages of the workers, by state: held (by messages) or free.", []string{"state"}, true},
	{"homa_worker_backlogged_completions", "Completions waiting in the daemon for room in a completion ring now.", nil, true},
	{"homa_loop_passes_total", "Passes of the polling loop.", nil, true},
	{"homa_loop_doorbell_wakeups_total", "Idle sleeps of the loop ended early by a worker's doorbell (a submission to a sleeping loop), or an attach or detach.", nil, true},
	{"homa_loop_sleeps_refrained_total", "Idle sleeps not taken: arming the doorbell found a submission waiting.", nil, true},
	{"homa_loop_busy_passes_total", "Passes of the polling loop that found work.", nil, true},
	{"homa_loop_packets_total", "Packets the polling loop received.", nil, true},
	{"homa_loop_sleeps_total", "Times the idle polling loop slept.", nil, true},
	{"homa_loop_max_pass_gap_seconds", "Longest time between the starts of two passes of the polling loop, idle sleeps excluded (stalls: GC, scheduler).", nil, true},
	{"homa_port_received_packets_total", "Packets the port received (rte_eth_stats ipackets).", nil, true},
	{"homa_port_sent_packets_total", "Packets the port sent (opackets).", nil, true},
	{"homa_port_received_bytes_total", "Bytes the port received (ibytes).", nil, true},
	{"homa_port_sent_bytes_total", "Bytes the port sent (obytes).", nil, true},
	{"homa_port_rx_missed_packets_total", "Packets the NIC dropped for want of RX descriptors (imissed).", nil, true},
	{"homa_port_rx_errors_total", "Erroneous packets received (ierrors).", nil, true},
	{"homa_port_tx_errors_total", "Packets the NIC failed to send (oerrors).", nil, true},
	{"homa_port_rx_nombuf_total", "RX mbuf allocation failures (rx_nombuf).", nil, true},
	{"homa_port_not_started_packets_total", "Packets not sent or received because the port was stopped, by direction.", []string{"direction"}, true},
	{"homa_port_xstats_total", "DPDK extended port statistics, by the driver's name for each (counters).", []string{"name"}, true},
	{"homa_burst_guard_waits_total", "Unmappings that waited for running bursts (the process's).", nil, false},
	{"homa_burst_guard_timeouts_total", "Bursts still running a second after an unmapping began (the process's).", nil, false},
	{"homa_intr_repairs_total", "Interrupt callbacks a driver left registered on a freed handle, unregistered (the process's).", nil, false},
	{"homa_intr_repair_overflows_total", "Interrupt registrations the repair could not record (the process's).", nil, false},
	{"homa_build_info", "The build: version, VCS commit, Go and DPDK versions (always 1).", []string{"version", "commit", "go", "dpdk"}, false},
}

// descs are every family's Desc, by name: those of families, and one per
// engine counter of engine.CounterHelp (homa_NAME_total).
var descs = func() map[string]*prometheus.Desc {
	m := map[string]*prometheus.Desc{}
	for _, f := range families {
		var l []string
		if f.perHost {
			l = append(l, labels...)
		}
		m[f.name] = prometheus.NewDesc(f.name, f.help, append(l, f.extra...), nil)
	}
	for k, help := range engine.CounterHelp {
		n := "homa_" + k + "_total"
		m[n] = prometheus.NewDesc(n, help, labels, nil)
	}
	return m
}()

// desc is the family's Desc.
func desc(name string) *prometheus.Desc {
	d := descs[name]
	if d == nil {
		panic("daemon: no metric family " + name)
	}
	return d
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	emit := func(name string, t prometheus.ValueType, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(desc(name), t, v, lv...)
	}
	counter := func(name string, v uint64, lv ...string) { emit(name, prometheus.CounterValue, float64(v), lv...) }
	gauge := func(name string, v float64, lv ...string) { emit(name, prometheus.GaugeValue, v, lv...) }
	b := BuildInfo()
	gauge("homa_build_info", 1, b.Version, b.Commit, b.Go, b.DPDK)
	g := dpdk.BurstGuardStats()
	counter("homa_burst_guard_waits_total", g.Waits)
	counter("homa_burst_guard_timeouts_total", g.Timeouts)
	ifx := dpdk.IntrFix()
	counter("homa_intr_repairs_total", ifx.Unregistered)
	counter("homa_intr_repair_overflows_total", ifx.Overflow)
	for i, h := range c.Hosts {
		host, port := h.Addr().String(), h.Port().Name
		hc := func(name string, v uint64, extra ...string) {
			counter(name, v, append([]string{host, port}, extra...)...)
		}
		hg := func(name string, v float64, extra ...string) {
			gauge(name, v, append([]string{host, port}, extra...)...)
		}
		s := h.Snapshot()
		if i < len(c.Shards) {
			for _, o := range c.Shards[i][1:] {
				os := o.Snapshot()
				s.Add(&os)
			}
		}
		c.collectEngine(ch, &s.Engine, host, port)
		for cause, v := range s.RxDrops {
			hc("homa_drops_total", v, "host", hostpkg.RxDropNames[cause])
		}
		st := s.Stack
		hc("homa_arp_packets_received_total", st.ARPRequests, "request")
		hc("homa_arp_packets_received_total", st.ARPReplies, "reply")
		hc("homa_arp_entries_learned_total", st.ARPLearned)
		hc("homa_icmp_echo_requests_total", st.EchoRequests)
		hc("homa_ndp_solicitations_total", st.NeighborSolicits)
		hc("homa_ndp_advertisements_total", st.NeighborAdverts)
		hc("homa_host_frames_ignored_total", st.NotForUs, "not_for_us")
		hc("homa_host_frames_ignored_total", st.Malformed, "malformed")
		hc("homa_host_frames_ignored_total", st.Unsupported, "unsupported")
		hc("homa_tx_refused_total", s.NoBuffer, "no_mbuf")
		hc("homa_tx_refused_total", s.Busy, "txq_backed_up")
		for k, name := range []string{"drop", "duplicate", "reorder"} {
			hc("homa_faults_injected_total", s.Faults[k], name)
		}
		for q, qs := range s.Queues {
			qn := strconv.Itoa(q)
			hc("homa_txq_enqueued_packets_total", qs.Enqueued, qn)
			hc("homa_txq_sent_packets_total", qs.Sent, qn)
			hc("homa_txq_returned_packets_total", qs.Returned, qn)
			hc("homa_txq_dropped_packets_total", qs.Dropped, qn)
			hc("homa_txq_completions_total", qs.Completed, qn, "completed")
			hc("homa_txq_completions_total", qs.Late, qn, "late")
			hc("homa_txq_completions_total", qs.Untracked, qn, "untracked")
			hg("homa_txq_in_device_packets", float64(qs.InDevice), qn)
		}
		hc("homa_capture_dropped_packets_total", s.CapDropped)
		hc("homa_rx_chained_frames_total", s.RxChainedInPlace, "in_place")
		hc("homa_rx_chained_frames_total", s.RxChainedJoined, "joined")
		nb := s.Neighbours
		hc("homa_neighbour_requests_sent_total", nb.Requests)
		hc("homa_neighbour_resolution_failures_total", nb.Failures)
		hc("homa_neighbour_entries_expired_total", nb.Expired)
		hc("homa_neighbour_table_full_total", nb.Full)
		hc("homa_neighbour_entries_forgotten_total", nb.Forgotten)
		hc("homa_neighbour_unsolicited_total", nb.Unsolicited)
		hc("homa_neighbour_override_refused_total", nb.NoOverride)
		hc("homa_neighbour_entries_evicted_total", nb.Evicted)
		hc("homa_neighbour_entries_collected_total", nb.Collected)
		l := s.Link
		hc("homa_port_link_events_total", l.Downs, "down")
		hc("homa_port_link_events_total", l.Ups, "up")
		hc("homa_port_link_events_total", l.Redials, "redial")
		hc("homa_port_link_events_total", l.RedialFailures, "redial_failed")
		hc("homa_port_link_down_dropped_packets_total", l.TxDropped)
		up := 0.0
		if l.Up {
			up = 1
		}
		hg("homa_port_link_up", up)
		if i < len(c.Hubs) && c.Hubs[i] != nil {
			w := c.Hubs[i].Snapshot()
			hc("homa_worker_sessions_attached_total", w.Attached)
			hc("homa_worker_sessions_detached_total", w.Detached)
			hc("homa_worker_submissions_total", w.Submissions)
			hc("homa_worker_bad_entries_total", w.BadEntries)
			hc("homa_worker_refusals_total", w.Refused, "refused")
			hc("homa_worker_refusals_total", w.LimitRefusals, "limit")
			hc("homa_worker_refusals_total", w.NoRecvSpace, "no_recv_space")
			hc("homa_worker_connections_refused_total", w.CredentialRefusals, "credentials")
			hc("homa_worker_connections_refused_total", w.SessionLimitRefusals, "session_limit")
			hc("homa_worker_completions_total", w.Completions)
			hc("homa_worker_completions_backlogged_total", w.CQBacklogged)
			hc("homa_worker_backlog_full_total", w.BacklogFull)
			hc("homa_worker_backlog_overflows_total", w.BacklogOverflows)
			hc("homa_worker_corrupt_rings_total", w.CorruptRings)
			hc("homa_worker_wakeups_total", w.Wakeups)
			hc("homa_worker_zero_copy_messages_total", w.ZeroCopyMessages)
			hc("homa_worker_copied_messages_total", w.CopiedShort, "short")
			hc("homa_worker_copied_messages_total", w.CopiedOff, "off")
			hc("homa_worker_copied_messages_total", w.CopiedDevice, "device")
			hc("homa_worker_quiet_accepts_total", w.QuietAccepts)
			hc("homa_worker_priority_sends_total", w.PrioritySends)
			hc("homa_worker_pages_on_submit_total", w.PagesOnSubmit)
			hc("homa_worker_replies_after_close_total", w.RepliesAfterClose)
			hc("homa_worker_replies_lingered_total", w.LingeredReplies)
			hc("homa_worker_replies_abandoned_total", w.AbandonedReplies)
			hg("homa_worker_lingering_sessions", float64(w.LingeringSessions))
			hg("homa_worker_sessions", float64(w.ActiveSessions))
			hg("homa_worker_outstanding_rpcs", float64(w.OutstandingRPCs))
			hg("homa_worker_pool_pages", float64(w.HeldPages), "held")
			hg("homa_worker_pool_pages", float64(w.FreePages), "free")
			hg("homa_worker_backlogged_completions", float64(w.Backlogged))
		}
		if i < len(c.Loops) && c.Loops[i] != nil {
			ls := c.Loops[i].Stats()
			hc("homa_loop_passes_total", ls.Passes)
			hc("homa_loop_busy_passes_total", ls.BusyPasses)
			hc("homa_loop_packets_total", ls.Packets)
			hc("homa_loop_sleeps_total", ls.Sleeps)
			hc("homa_loop_doorbell_wakeups_total", ls.Rung)
			hc("homa_loop_sleeps_refrained_total", ls.Refrained)
			hg("homa_loop_max_pass_gap_seconds", ls.MaxGap.Seconds())
		}
		if ps, err := h.Port().Stats(); err == nil {
			hc("homa_port_received_packets_total", ps.IPackets)
			hc("homa_port_sent_packets_total", ps.OPackets)
			hc("homa_port_received_bytes_total", ps.IBytes)
			hc("homa_port_sent_bytes_total", ps.OBytes)
			hc("homa_port_rx_missed_packets_total", ps.IMissed)
			hc("homa_port_rx_errors_total", ps.IErrors)
			hc("homa_port_tx_errors_total", ps.OErrors)
			hc("homa_port_rx_nombuf_total", ps.RxNoMbuf)
			hc("homa_port_not_started_packets_total", ps.TxNotStarted, "tx")
			hc("homa_port_not_started_packets_total", ps.RxNotStarted, "rx")
		}
		if xs, err := h.Port().XStats(); err == nil {
			seen := map[string]bool{}
			for _, x := range xs {
				if !seen[x.Name] { // a driver may repeat a name; a family may not
					seen[x.Name] = true
					hc("homa_port_xstats_total", x.Value, x.Name)
				}
			}
		}
	}
}

// collectEngine exports one endpoint's counters and histograms.
func (c *Collector) collectEngine(ch chan<- prometheus.Metric, m *engine.Metrics, host, port string) {
	counter := func(name string, v uint64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(desc(name), prometheus.CounterValue, float64(v), append([]string{host, port}, extra...)...)
	}
	for i, v := range m.PacketsSent {
		counter("homa_packets_sent_total", v, (wire.TypeData + wire.PacketType(i)).String())
	}
	for i, v := range m.PacketsRcvd {
		counter("homa_packets_received_total", v, (wire.TypeData + wire.PacketType(i)).String())
	}
	for cause := range engine.NumDropCauses {
		if cause == 0 {
			continue // DropNone
		}
		counter("homa_drops_total", m.Drops[cause], "engine", cause.String())
	}
	m.Each(func(name string, v uint64) {
		if _, ok := engine.CounterHelp[name]; ok {
			counter("homa_"+name+"_total", v)
		}
	})
	ch <- histogram(desc("homa_rpc_round_trip_seconds"), &m.RoundTrips, engine.RoundTripBoundsNs[:], 1e-9, host, port)
	ch <- histogram(desc("homa_message_size_bytes"), &m.MessageSizes, engine.MessageSizeBounds[:], 1, host, port)
}

// histogram is a Prometheus histogram of h, whose buckets end at bounds,
// the bounds and the sum scaled by unit (ns to seconds: 1e-9).
func histogram(d *prometheus.Desc, h *engine.Histogram, bounds []int64, unit float64, lv ...string) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum, n uint64
	for i, b := range bounds {
		cum += h.Counts[i]
		buckets[float64(b)*unit] = cum
	}
	for _, v := range h.Counts {
		n += v
	}
	return prometheus.MustNewConstHistogram(d, n, float64(h.Sum)*unit, buckets, lv...)
}

// ServeMetrics serves /metrics on addr until the returned server is
// closed, with the Go runtime's and the process's collectors beside c,
// and the probes /healthz and /readyz: 200, or 503 with what healthy or
// ready says is wrong ("" when nothing is). It fails at once when addr
// cannot be bound. The server's Addr is the address it listens on (its
// port chosen where addr gave 0).
func ServeMetrics(addr string, c *Collector, healthy, ready func() string) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	for _, col := range []prometheus.Collector{c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	probe := func(check func() string, ok, notOK string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if why := check(); why != "" {
				http.Error(w, notOK+": "+why, http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, ok)
		}
	}
	mux.HandleFunc("/healthz", probe(healthy, "ok", "unhealthy"))
	mux.HandleFunc("/readyz", probe(ready, "ready", "not ready"))
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, nil
}

// Readiness says why the daemon is not ready to carry traffic ("" when it
// is): a port whose link is down, or a polling loop that has ended or
// made no pass in the last second (a loop that sleeps when idle still
// passes every idle_max_sleep_us). /readyz.
func (c *Collector) Readiness() string { return c.check(true, time.Second) }

// Health says why the daemon is broken ("" when it is not): a polling
// loop that has ended or made no pass in 10 s. A link that is down is not
// a fault of the daemon's (Readiness reports it). /healthz.
func (c *Collector) Health() string { return c.check(false, 10*time.Second) }

// check is Readiness and Health: the links when links is set, and each
// loop's passes, which must have moved within stall. The first call
// notes each loop's passes; a loop stalls when a later call, stall or
// more after the count last moved, finds it the same.
func (c *Collector) check(links bool, stall time.Duration) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passes == nil {
		c.passes, c.passesAt = make([]uint64, len(c.Hosts)), make([]time.Time, len(c.Hosts))
	}
	var why []string
	now := time.Now()
	for i, h := range c.Hosts {
		if links && !h.Snapshot().Link.Up {
			why = append(why, fmt.Sprintf("the link of %s (%s) is down", h.Port().Name, h.Addr()))
		}
		if i >= len(c.Loops) || c.Loops[i] == nil {
			continue
		}
		select {
		case <-c.Loops[i].Done():
			why = append(why, fmt.Sprintf("the polling loop of %s has ended", h.Addr()))
			continue
		default:
		}
		p := c.Loops[i].Stats().Passes
		if p != c.passes[i] || c.passesAt[i].IsZero() {
			c.passes[i], c.passesAt[i] = p, now
		} else if d := now.Sub(c.passesAt[i]); d >= stall {
			why = append(why, fmt.Sprintf("the polling loop of %s made no pass in %v", h.Addr(), d.Round(time.Millisecond)))
		}
	}
	return strings.Join(why, "; ")
}
