package daemon

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	hostpkg "github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/hub"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Collector exports every host's counters, its worker hub's, its loop's
// and its port's DPDK statistics.
type Collector struct {
	Hosts []*hostpkg.Host
	Hubs  []*hub.Hub    // per host, nil for none; may be shorter than Hosts
	Loops []*lcore.Loop // per host (hosts sharing an lcore share its loop); may be shorter than Hosts (nil loop: none)
}

var (
	labels = []string{"host", "port"}
	descs  = struct {
		engine, drops, stack, tx, faults, queue, loop, port, xstat, capture, neigh, workers, workerGauge, loopGap *prometheus.Desc
		link, linkUp, guard, chained, intrFix                                                                     *prometheus.Desc
	}{
		link:        prometheus.NewDesc("homa_port_link_total", "The port's link as its loop saw it: downs, ups, redials (restarts while down) and those that failed, packets dropped while down.", append(labels, "event"), nil),
		linkUp:      prometheus.NewDesc("homa_port_link_up", "1 while the port's link is up (at its loop's last check, every 10 ms).", labels, nil),
		guard:       prometheus.NewDesc("homa_burst_guard_total", "Unmappings that waited for running bursts, and bursts still running after a second (the process's).", []string{"event"}, nil),
		loopGap:     prometheus.NewDesc("homa_loop_max_pass_gap_seconds", "Longest time between the starts of two passes of the polling loop, idle sleeps excluded (stalls: GC, scheduler).", labels, nil),
		workers:     prometheus.NewDesc("homa_workers_total", "Worker interface counters: sessions, submissions, refusals by cause, completions, wake-ups.", append(labels, "counter"), nil),
		workerGauge: prometheus.NewDesc("homa_workers", "Worker interface gauges: sessions, outstanding RPCs, receive-pool pages held and free.", append(labels, "gauge"), nil),
		engine:      prometheus.NewDesc("homa_engine_total", "Homa engine counters, named as kernel Homa's /proc/net/homa_metrics where the concept matches.", append(labels, "counter"), nil),
		drops:       prometheus.NewDesc("homa_rx_drops_total", "Frames the host dropped before the engine, by cause.", append(labels, "cause"), nil),
		stack:       prometheus.NewDesc("homa_host_stack_total", "ARP and ICMP handled by the host.", append(labels, "counter"), nil),
		tx:          prometheus.NewDesc("homa_tx_refused_total", "Buffers refused to the engine: no mbuf, or TX queues backed up.", append(labels, "cause"), nil),
		faults:      prometheus.NewDesc("homa_faults_injected_total", "Received packets the fault injector dropped, duplicated or reordered.", append(labels, "fault"), nil),
		queue:       prometheus.NewDesc("homa_txq_packets_total", "Per TX queue: packets enqueued, sent, returned (refused by the NIC, retried), dropped (queue full).", append(labels, "queue", "event"), nil),
		loop:        prometheus.NewDesc("homa_loop_total", "Polling loop counters.", append(labels, "counter"), nil),
		port:        prometheus.NewDesc("homa_port_total", "DPDK port statistics (rte_eth_stats).", append(labels, "counter"), nil),
		xstat:       prometheus.NewDesc("homa_port_xstat", "DPDK extended port statistics.", append(labels, "name"), nil),
		intrFix:     prometheus.NewDesc("homa_intr_repair_total", "Interrupt callbacks a driver left registered on a freed handle (memif's accept of a client that left at once), unregistered; registrations the repair could not record (the process's).", []string{"event"}, nil),
		chained:     prometheus.NewDesc("homa_rx_chained_total", "Chained frames received (a payload sent from a worker's memory by a host in this process): parsed in place, or joined into one buffer first (a copy).", append(labels, "how"), nil),
		capture:     prometheus.NewDesc("homa_capture_dropped_total", "Packets the capture writer could not keep up with.", labels, nil),
		neigh:       prometheus.NewDesc("homa_neighbours_total", "Neighbour table: ARP requests sent, failed resolutions, aged entries, entries refused at the bound, entries dropped once unused.", append(labels, "counter"), nil),
	}
)

func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	g := dpdk.BurstGuardStats()
	counter(descs.guard, g.Waits, "wait")
	counter(descs.guard, g.Timeouts, "timeout")
	ifx := dpdk.IntrFix()
	counter(descs.intrFix, ifx.Unregistered, "unregistered")
	counter(descs.intrFix, ifx.Overflow, "overflow")
	for i, h := range c.Hosts {
		host, port := h.Addr().String(), h.Port().Name
		s := h.Snapshot()
		s.Engine.Each(func(name string, v uint64) { counter(descs.engine, v, host, port, name) })
		for cause, v := range s.RxDrops {
			counter(descs.drops, v, host, port, hostpkg.RxDropNames[cause])
		}
		st := s.Stack
		for name, v := range map[string]uint64{
			"arp_requests": st.ARPRequests, "arp_replies": st.ARPReplies, "arp_learned": st.ARPLearned,
			"echo_requests": st.EchoRequests, "not_for_us": st.NotForUs, "malformed": st.Malformed, "unsupported": st.Unsupported,
		} {
			counter(descs.stack, v, host, port, name)
		}
		counter(descs.tx, s.NoBuffer, host, port, "no_mbuf")
		counter(descs.tx, s.Busy, host, port, "txq_backed_up")
		for k, name := range []string{"drop", "duplicate", "reorder"} {
			counter(descs.faults, s.Faults[k], host, port, name)
		}
		for q, qs := range s.Queues {
			qn := strconv.Itoa(q)
			counter(descs.queue, qs.Enqueued, host, port, qn, "enqueued")
			counter(descs.queue, qs.Sent, host, port, qn, "sent")
			counter(descs.queue, qs.Returned, host, port, qn, "returned")
			counter(descs.queue, qs.Dropped, host, port, qn, "dropped")
		}
		counter(descs.capture, s.CapDropped, host, port)
		counter(descs.chained, s.RxChainedInPlace, host, port, "in_place")
		counter(descs.chained, s.RxChainedJoined, host, port, "joined")
		nb := s.Neighbours
		for name, v := range map[string]uint64{"arp_requests_sent": nb.Requests, "failures": nb.Failures,
			"expired": nb.Expired, "table_full": nb.Full, "forgotten": nb.Forgotten} {
			counter(descs.neigh, v, host, port, name)
		}
		l := s.Link
		for name, v := range map[string]uint64{
			"down": l.Downs, "up": l.Ups, "redial": l.Redials, "redial_failed": l.RedialFailures, "tx_dropped": l.TxDropped,
		} {
			counter(descs.link, v, host, port, name)
		}
		up := 0.0
		if l.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descs.linkUp, prometheus.GaugeValue, up, host, port)
		if i < len(c.Hubs) && c.Hubs[i] != nil {
			w := c.Hubs[i].Snapshot()
			for name, v := range map[string]uint64{
				"attached": w.Attached, "detached": w.Detached, "submissions": w.Submissions,
				"bad_entries": w.BadEntries, "refused": w.Refused, "limit_refusals": w.LimitRefusals,
				"no_recv_space": w.NoRecvSpace, "completions": w.Completions, "cq_backlogged": w.CQBacklogged,
				"wakeups": w.Wakeups, "corrupt_rings": w.CorruptRings,
				"zero_copy_messages": w.ZeroCopyMessages, "backlog_full": w.BacklogFull,
				"backlog_overflows": w.BacklogOverflows, "credential_refusals": w.CredentialRefusals,
				"session_limit_refusals": w.SessionLimitRefusals,
			} {
				counter(descs.workers, v, host, port, name)
			}
			for name, v := range map[string]uint64{
				"sessions": w.ActiveSessions, "outstanding_rpcs": w.OutstandingRPCs,
				"held_pages": w.HeldPages, "free_pages": w.FreePages, "backlogged": w.Backlogged,
			} {
				ch <- prometheus.MustNewConstMetric(descs.workerGauge, prometheus.GaugeValue, float64(v), host, port, name)
			}
		}
		if i < len(c.Loops) && c.Loops[i] != nil {
			ls := c.Loops[i].Stats()
			counter(descs.loop, ls.Passes, host, port, "passes")
			counter(descs.loop, ls.BusyPasses, host, port, "busy_passes")
			counter(descs.loop, ls.Packets, host, port, "packets")
			counter(descs.loop, ls.Sleeps, host, port, "sleeps")
			ch <- prometheus.MustNewConstMetric(descs.loopGap, prometheus.GaugeValue, ls.MaxGap.Seconds(), host, port)
		}
		if ps, err := h.Port().Stats(); err == nil {
			for name, v := range map[string]uint64{
				"ipackets": ps.IPackets, "opackets": ps.OPackets, "ibytes": ps.IBytes, "obytes": ps.OBytes,
				"imissed": ps.IMissed, "ierrors": ps.IErrors, "oerrors": ps.OErrors, "rx_nombuf": ps.RxNoMbuf,
				"tx_not_started": ps.TxNotStarted, "rx_not_started": ps.RxNotStarted,
			} {
				counter(descs.port, v, host, port, name)
			}
		}
		if xs, err := h.Port().XStats(); err == nil {
			for _, x := range xs {
				ch <- prometheus.MustNewConstMetric(descs.xstat, prometheus.UntypedValue, float64(x.Value), host, port, x.Name)
			}
		}
	}
}

// ServeMetrics serves /metrics on addr until the returned server is
// closed. It fails at once when addr cannot be bound.
func ServeMetrics(addr string, c *Collector) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, nil
}
