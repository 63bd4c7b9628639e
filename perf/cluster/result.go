package cluster

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Result is one run's figures.
type Result struct {
	Variant Variant `json:"variant"`
	// Simulator is what ran it: the engine on memnet's fabric (""), or
	// ns-3 (DCTCP, TCP).
	Simulator string  `json:"simulator,omitempty"`
	Workload  string  `json:"workload"`
	Load      float64 `json:"load"`
	Hosts     int     `json:"hosts"`

	Offered   int `json:"offered"`   // messages sent
	Delivered int `json:"delivered"` // requests delivered (exactly once each)
	Measured  int `json:"measured"`  // of them, sent in the measured window
	Responses int `json:"responses"`
	// Errors are conservation or RPC failures: a message lost, delivered
	// twice, with the wrong length or to the wrong host, an RPC that
	// failed. Any is a bug (the fabric is lossless unless BufferBytes is
	// set).
	Errors     int      `json:"errors"`
	ErrorLines []string `json:"error_lines,omitempty"`

	OfferedSimNs int64   `json:"offered_sim_ns"` // the arrivals' span
	SimNs        int64   `json:"sim_ns"`         // simulated time run
	WallSeconds  float64 `json:"wall_seconds"`
	Frames       uint64  `json:"frames"` // frames the network delivered
	FramesPerSec float64 `json:"frames_per_wall_second"`

	// OfferedGbps is the message bytes offered per simulated second per
	// host over the offered period (the arrivals' span). Carried is, over
	// the period's second half, the DATA frame bytes the network
	// delivered over those offered (requests and responses, headers
	// included).
	//
	// Backlog is the bytes of the requests sent and not yet delivered,
	// 200 times over the arrivals (every 10 µs at least), and BacklogGrowth the least-squares slope
	// of it over the period's second half as a share of the bytes offered
	// per unit time: where a variant keeps up its backlog is stationary
	// and the slope near 0; where it cannot, the backlog grows by what the
	// links do not carry, and the slope is that share. A run must be long
	// against its workload's longest messages for either to settle (a
	// 29 MB message of W5 takes 23 ms alone on an idle 10 Gb/s link):
	// the backlog plot shows whether it did. KeepsUp: BacklogGrowth <=
	// 1 - KeepUpFraction.
	OfferedGbps   float64        `json:"offered_gbps_per_host"`
	Carried       float64        `json:"carried"`
	Backlog       []BacklogPoint `json:"backlog"`
	BacklogGrowth float64        `json:"backlog_growth"`
	KeepsUp       bool           `json:"keeps_up"`
	DrainMs       float64        `json:"drain_ms"` // after the last arrival, until all was delivered

	// WastedBandwidth is the Homa paper simulator's receiver metric: over
	// the measured window, the share of the time a host had a message
	// begun and not finished arriving in which its downlink carried none
	// of it (1 − DATA wire bytes received / (that time × link rate)),
	// over all hosts. Scheduling that leaves senders without grants, or
	// grants that come late, waste it.
	WastedBandwidth float64 `json:"wasted_bandwidth"`

	Buckets []Bucket `json:"buckets"` // slowdown by message size
	Short   *Bucket  `json:"short"`   // messages of at most 1 KB
	// AllReduce and AllToAll are the AI mix's collectives (analyze).
	AllReduce *Collective `json:"allreduce,omitempty"`
	AllToAll  *Collective `json:"alltoall,omitempty"`
	Largest   *Bucket     `json:"largest"` // the largest size bucket
	Queues    Queues      `json:"queues"`  // peak queues
	Drops     uint64      `json:"drops"`   // frames the network dropped (BufferBytes; ns-3: its switches' queues)
	// Marks and Retransmits are ns-3's: packets its switches marked with
	// ECN (DCTCP), segments its TCP retransmitted; NS3 its settings as
	// it printed them.
	Marks       int64       `json:"ecn_marks,omitempty"`
	Retransmits int64       `json:"retransmits,omitempty"`
	NS3         [][2]string `json:"ns3,omitempty"`
	Resent      uint64      `json:"resent"` // DATA packets retransmitted
	// ResentBytes is the message bytes of those packets: waste on a
	// network that loses nothing (Drops 0), where it should be 0.
	ResentBytes uint64 `json:"resent_bytes"`
	// ResendsBusy counts RESENDs answered BUSY rather than with copies:
	// the bytes not sent yet, or (ResendsQueued of them) still waiting
	// in the sender's NIC queue (engine TxProgress).
	ResendsBusy   uint64 `json:"resends_busy"`
	ResendsQueued uint64 `json:"resends_queued"`
	// MaxOvercommit is how many messages the receivers granted to at once.
	MaxOvercommit int `json:"max_overcommit"`
	// Cutoffs are the unscheduled priority cutoffs the hosts used, bytes
	// by priority (0 where a priority takes no unscheduled bytes).
	Cutoffs [8]uint32 `json:"cutoffs"`
}

// KeepUpFraction is the least share of the offered bytes that a variant
// keeping up delivers (Result.BacklogGrowth).
const KeepUpFraction = 0.95

// BacklogPoint is the backlog at one moment.
type BacklogPoint struct {
	Ms    float64 `json:"ms"`
	Bytes int64   `json:"bytes"`
}

// growth is the least-squares slope of the points from half the period
// on, in bytes per ns, over rate (bytes per ns); false with fewer than 3
// (too short a run to tell).
func growth(points []BacklogPoint, periodMs, rate float64) (float64, bool) {
	var n, sx, sy, sxx, sxy float64
	for _, p := range points {
		if p.Ms < periodMs/2 {
			continue
		}
		x, y := p.Ms*1e6, float64(p.Bytes)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 3 || rate <= 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx) / rate, true
}

// Bucket is the slowdown of one size range.
type Bucket struct {
	MinSize int     `json:"min_size"`
	MaxSize int     `json:"max_size"`
	Count   int     `json:"count"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	// IdleUs is the median message's idle time, µs.
	IdleUs float64 `json:"idle_us"`
}

// Queues are peak occupancies in bytes.
type Queues struct {
	HostEgress int `json:"tor_to_host"` // a ToR's port toward a host
	Uplink     int `json:"tor_to_core"`
	Downlink   int `json:"core_to_tor"`
	NIC        int `json:"nic"` // a host's NIC queue
}

// Max is the largest switch queue.
func (q Queues) Max() int { return max(q.HostEgress, q.Uplink, q.Downlink) }

// quantile is the p-quantile of sorted xs (nearest rank).
func quantile(xs []float64, p float64) float64 {
	return xs[max(int(math.Ceil(p*float64(len(xs))))-1, 0)]
}

func summarize(g []Sample) Bucket {
	sd := make([]float64, len(g))
	sizes := make([]int, len(g))
	idle := make([]int64, len(g))
	for i, s := range g {
		sd[i], sizes[i], idle[i] = s.Slowdown(), s.Size, s.IdleNs
	}
	slices.Sort(sd)
	slices.Sort(sizes)
	slices.Sort(idle)
	return Bucket{MinSize: sizes[0], MaxSize: sizes[len(sizes)-1], Count: len(g), P50: quantile(sd, 0.5), P99: quantile(sd, 0.99),
		IdleUs: float64(idle[(len(idle)-1)/2]) / 1e3}
}

// Buckets groups samples by size, 4 buckets per decade (as perf
// slowdown's).
func Buckets(samples []Sample) []Bucket {
	var out []Bucket
	for _, g := range workload.BySize(samples, func(s Sample) int { return s.Size }) {
		out = append(out, summarize(g))
	}
	return out
}

func (s *sim) result(cfg Config, wl *workload.Workload, end int64, wall time.Duration) *Result {
	st := s.net.Stats()
	r := &Result{Variant: cfg.Variant, Workload: wl.Name, Load: cfg.Load, Hosts: cfg.Hosts(),
		Offered: s.offered, Delivered: s.delivered, Responses: s.responses,
		Errors: s.nerrs + len(s.inflight), ErrorLines: s.errs,
		OfferedSimNs: end, SimNs: s.net.Now(), WallSeconds: wall.Seconds(), Frames: st.Delivered,
		Drops: st.TotalDropped()}
	if len(s.inflight) > 0 {
		r.ErrorLines = append(r.ErrorLines, "messages never delivered: "+strconv.Itoa(len(s.inflight)))
	}
	if wall > 0 {
		r.FramesPerSec = float64(st.Delivered) / wall.Seconds()
	}
	if end > 0 {
		// bytes over the period → Gb/s per host
		gbps := func(b int64) float64 { return float64(b) * 8 / (float64(end) * float64(cfg.Hosts())) }
		r.OfferedGbps = gbps(s.offeredBytes)
		if s.offeredFrames > 0 {
			r.Carried = float64(s.dataCarried) / float64(s.offeredFrames)
		}
	}
	r.DrainMs = float64(s.net.Now()-end) / 1e6
	r.MaxOvercommit = s.overcommit
	analyze(r, cfg, s.msgs, s.startAt, s.doneAt, end)
	for _, p := range st.Ports {
		r.Queues.HostEgress = max(r.Queues.HostEgress, p.MaxQueueBytes)
		r.Queues.NIC = max(r.Queues.NIC, p.NICMaxQueueBytes)
	}
	fs := s.net.FabricStats()
	r.Queues.Uplink, r.Queues.Downlink = maxOf(fs.Up), maxOf(fs.Down)
	for _, h := range s.hosts {
		m := h.e.Metrics()
		r.Resent += m.ResentPackets
		r.ResentBytes += m.ResentBytes
		r.ResendsBusy += m.ResendsBusy
		r.ResendsQueued += m.ResendsQueued
	}
	r.Cutoffs = s.cutoffs
	var activeNs, activeBytes int64
	lo, hi := window(end)
	for _, h := range s.hosts {
		activeNs += h.activeNs
		activeBytes += h.activeBytes
		if len(h.active) > 0 { // a busy period still open: it counts up to the window's end
			if a, b := max(h.activeSince, lo), min(s.net.Now(), hi); b > a {
				activeNs += b - a
			}
		}
	}
	if activeNs > 0 {
		r.WastedBandwidth = 1 - float64(activeBytes)*8/(float64(activeNs)*cfg.LinkBps/1e9)
	}
	return r
}

func maxOf(m [][]int) int {
	v := 0
	for _, row := range m {
		for _, x := range row {
			v = max(v, x)
		}
	}
	return v
}
