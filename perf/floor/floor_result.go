package floor

import (
	"fmt"
	"slices"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Run is one trial of one frame size: a fresh pair of testpmds.
type Run struct {
	FrameSize
	Trial   int     `json:"trial"`
	Seconds float64 `json:"seconds"` // the measuring window
	Frames  uint64  `json:"frames"`  // received in the window
	Gbps    float64 `json:"gbps"`    // frame bits received per second / 1e9
	Mpps    float64 `json:"mpps"`
	// CPU over the window, seconds: each process's utime+stime.
	SenderCPU   float64 `json:"sender_cpu_s"`
	ReceiverCPU float64 `json:"receiver_cpu_s"`
	CPUPerGB    float64 `json:"cpu_s_per_gb"` // (sender + receiver) CPU per GB of frames
	// testpmd's busy cycles per packet over its whole run, in ns
	// (--record-core-cycles; 0 where it printed none). The sender's
	// count the bursts the full ring refused too.
	SenderNsPerFrame   float64 `json:"sender_ns_per_frame"`
	ReceiverNsPerFrame float64 `json:"receiver_ns_per_frame"`
	// The sender's frames over its whole run: sent, and refused by the
	// full ring (freed; many: the receiver sets the pace).
	SenderSent    uint64 `json:"sender_sent_frames"`
	SenderRefused uint64 `json:"sender_refused_frames"`
}

// RefusedShare is the share of the sender's frames the ring refused.
func (r Run) RefusedShare() float64 {
	if r.SenderSent+r.SenderRefused == 0 {
		return 0
	}
	return float64(r.SenderRefused) / float64(r.SenderSent+r.SenderRefused)
}

// Figure is the floor at one frame size: the medians over trials.
type Figure struct {
	FrameSize
	Trials   int     `json:"trials"`
	Gbps     float64 `json:"gbps"` // of frames
	Mpps     float64 `json:"mpps"`
	CPUPerGB float64 `json:"cpu_s_per_gb"` // per GB of frames
	// The same in Homa payload: Gbps times PayloadShare, CPU per GB of it.
	PayloadShare    float64 `json:"homa_payload_share"`
	PayloadGbps     float64 `json:"payload_gbps"`
	PayloadCPUPerGB float64 `json:"payload_cpu_s_per_gb"`
	// The copies' own cost: testpmd's busy ns per frame, each side (the
	// sender's a bound: FloorRun), and both copies per GB of frames at the
	// receiver's cost of one (seconds).
	SenderNsPerFrame   float64 `json:"sender_ns_per_frame"`
	ReceiverNsPerFrame float64 `json:"receiver_ns_per_frame"`
	CopySPerGB         float64 `json:"copies_s_per_gb"`
	RefusedShare       float64 `json:"sender_refused_share"` // of the sender's frames, refused by the full ring
}

// Ratio is one homa-memif throughput run over the floor at its MTU.
type Ratio struct {
	Homa      string  `json:"homa"` // the run's transport: homa-memif, homa-memif-mtu9000
	MTU       int     `json:"mtu"`
	Size      int     `json:"size_bytes"` // message bytes
	HomaGbps  float64 `json:"homa_gbps"`  // message bits per second / 1e9
	FloorGbps float64 `json:"floor_payload_gbps"`
	Gbps      float64 `json:"homa_over_floor_gbps"` // 1 would be the link's own rate
	// CPU seconds per GB of messages, Homa's and the floor's (of payload),
	// and Homa's over the floor's (1: no more than the copies' pollers).
	HomaCPUPerGB  float64 `json:"homa_cpu_s_per_gb"`
	FloorCPUPerGB float64 `json:"floor_payload_cpu_s_per_gb"`
	CPUPerGB      float64 `json:"homa_over_floor_cpu_s_per_gb"`
}

// Result is the floor scenario's result.
type Result struct {
	Method      string   `json:"method"`
	Distortions string   `json:"distortions"`
	Smoke       bool     `json:"smoke"`
	Runs        []Run    `json:"runs"`   // per trial, per frame size
	Floors      []Figure `json:"floors"` // per frame size
	// Homa are the homa-memif throughput runs this scenario measured (its
	// HomaMTUs); Ratios cover those and the ones passed in (Compare).
	Homa   []perf.StreamRun `json:"homa,omitempty"`
	Ratios []Ratio          `json:"ratios"`
	Loops  []perf.LoopStats `json:"loops,omitempty"`
}

// PayloadShare is the share of a full Homa DATA frame that is message
// bytes at an IP MTU over IPv4: 1424/1514 at 1500, 8924/9014 at 9000.
func PayloadShare(mtu int) float64 {
	return float64(wire.PayloadPerPacket(mtu, wire.IPv4MinHeaderLen)) / float64(mtu+wire.EthernetHeaderLen)
}

// floorFigures are the medians over trials of the runs of each frame.
func floorFigures(frames []FrameSize, runs []Run) []Figure {
	var out []Figure
	for _, f := range frames {
		var gbps, mpps, cpu, snd, rcv, ref []float64
		for _, r := range runs {
			if r.FrameSize == f {
				gbps, mpps, cpu = append(gbps, r.Gbps), append(mpps, r.Mpps), append(cpu, r.CPUPerGB)
				snd, rcv, ref = append(snd, r.SenderNsPerFrame), append(rcv, r.ReceiverNsPerFrame), append(ref, r.RefusedShare())
			}
		}
		if len(gbps) == 0 {
			continue
		}
		fig := Figure{FrameSize: f, Trials: len(gbps), Gbps: perf.Median(gbps), Mpps: perf.Median(mpps), CPUPerGB: perf.Median(cpu),
			PayloadShare: PayloadShare(f.MTU), SenderNsPerFrame: perf.Median(snd), ReceiverNsPerFrame: perf.Median(rcv), RefusedShare: perf.Median(ref)}
		fig.PayloadGbps = fig.Gbps * fig.PayloadShare
		if fig.PayloadShare > 0 {
			fig.PayloadCPUPerGB = fig.CPUPerGB / fig.PayloadShare
		}
		fig.CopySPerGB = 2 * fig.ReceiverNsPerFrame / float64(f.Frame) // ns per byte = s per GB
		out = append(out, fig)
	}
	return out
}

// Ratios are, for each homa-memif run of homa (any MTU; 0 is 1500;
// other links are left out, for the floor is memif's), its figures over
// the floor at its MTU; runs at an MTU without a floor have none.
func Ratios(floors []Figure, homa []perf.StreamRun) []Ratio {
	var out []Ratio
	for _, h := range homa {
		mtu := h.MTU
		if mtu == 0 {
			mtu = 1500
		}
		if h.Skipped != "" || (h.Transport != perf.HomaSeries("memif") && h.Transport != perf.HomaMTUSeries("memif", mtu)) {
			continue
		}
		i := slices.IndexFunc(floors, func(f Figure) bool { return f.MTU == mtu })
		if i < 0 || floors[i].PayloadGbps == 0 {
			continue
		}
		f := floors[i]
		r := Ratio{Homa: h.Transport, MTU: mtu, Size: h.Size, HomaGbps: h.Gbps, FloorGbps: f.PayloadGbps, Gbps: h.Gbps / f.PayloadGbps,
			HomaCPUPerGB: h.CPUPerGB, FloorCPUPerGB: f.PayloadCPUPerGB}
		if f.PayloadCPUPerGB > 0 {
			r.CPUPerGB = h.CPUPerGB / f.PayloadCPUPerGB
		}
		out = append(out, r)
	}
	return out
}

// floorLink names the floor's link in every table, beside Homa's.
const floorLink = "floor: net_memif alone (testpmd txonly → rxonly)"

// Table is the floor per frame size.
func (r *Result) Table() perf.Table {
	t := perf.Table{Header: []string{"link", "MTU", "frame B", "bsize", "Gbps (frames)", "Mpps", "CPU s/GB (frames)",
		"Gbps (Homa payload)", "CPU s/GB (payload)", "recv busy ns/frame", "send busy ns/frame (bound)", "refused", "copies s/GB (2 × recv)", "trials"}}
	for _, f := range r.Floors {
		t.Rows = append(t.Rows, []string{floorLink, fmt.Sprint(f.MTU), fmt.Sprint(f.Frame), fmt.Sprint(f.Bsize),
			fmt.Sprintf("%.2f", f.Gbps), fmt.Sprintf("%.3f", f.Mpps), fmt.Sprintf("%.3f", f.CPUPerGB),
			fmt.Sprintf("%.2f", f.PayloadGbps), fmt.Sprintf("%.3f", f.PayloadCPUPerGB),
			fmt.Sprintf("%.0f", f.ReceiverNsPerFrame), fmt.Sprintf("%.0f", f.SenderNsPerFrame), fmt.Sprintf("%.0f%%", 100*f.RefusedShare),
			fmt.Sprintf("%.3f", f.CopySPerGB), fmt.Sprint(f.Trials)})
	}
	return t
}

// RatioTable is Homa beside the floor: one row per homa-memif run.
func (r *Result) RatioTable() perf.Table {
	t := perf.Table{Header: []string{"Homa run (link: the daemon's memif pair)", "MTU", "message", "Homa Gbps", "floor Gbps (payload)",
		"Homa / floor Gbps", "Homa CPU s/GB", "floor CPU s/GB (payload)", "Homa / floor CPU s/GB"}}
	for _, x := range r.Ratios {
		t.Rows = append(t.Rows, []string{x.Homa, fmt.Sprint(x.MTU), perf.SizeName(x.Size), fmt.Sprintf("%.2f", x.HomaGbps),
			fmt.Sprintf("%.2f", x.FloorGbps), fmt.Sprintf("%.3f", x.Gbps), fmt.Sprintf("%.3f", x.HomaCPUPerGB),
			fmt.Sprintf("%.3f", x.FloorCPUPerGB), fmt.Sprintf("%.2f", x.CPUPerGB)})
	}
	return t
}

// floorRatiosNote says how to read the ratios.
const floorRatiosNote = `Homa / floor Gbps: the share of the memif link's own rate (in Homa payload) that Homa's ` +
	`workers reach through the daemon (1 would be the link's rate); Homa / floor CPU s/GB above 1: Homa spends that ` +
	`many times the CPU per GB the two copies' pollers do. homa-memif is Homa at MTU 1500 (in perf all, the throughput ` +
	`scenario's runs of the same invocation); homa-memif-mtu9000 at 9000 (demo --workers --link memif --mtu 9000).`

// Title is the report's heading of the floor scenario.
const Title = "floor: the memif link's own rate and copy cost (dpdk-testpmd), and how close Homa on memif gets"

// Report is the floor scenario's report.
func (r *Result) Report() perf.Report {
	rep := perf.Report{Name: "floor", Title: Title, Method: r.Method, Distortions: r.Distortions,
		Heading: "floor: the memif link's own rate and cost (dpdk-testpmd), medians over trials",
		Tables:  []perf.Table{r.Table()}, Loops: r.Loops, JSON: "floor.json", Result: r}
	if len(r.Ratios) > 0 {
		rep.Tables = append(rep.Tables, r.RatioTable())
		rep.Notes = append(rep.Notes, floorRatiosNote)
	}
	rep.Notes = append(rep.Notes, "Link of each figure: rows of the first table are "+floorLink+
		", two testpmd processes and one memif link; rows of the second are Homa workers through the daemon's two hosts "+
		"on a net_memif pair (homa-memif), message bytes only.")
	return rep
}

// Goals are the rows of issue 33 on the floor: Homa's 1 MB messages on
// memif against the link's own rate and CPU per GB, at MTU 1500 and 9000,
// and issue 42's lower one at 9000 (r nil: it did not run).
func Goals(r *Result) []perf.Goal {
	row := func(what string, mtu int, f func(g *perf.Goal, x Ratio)) perf.Goal {
		g := perf.Goal{Goal: what, Source: fmt.Sprintf("floor homa-memif MTU %d, 1 MB", mtu), Absent: "no floor ratio for it in this run"}
		if r != nil {
			for _, x := range r.Ratios {
				if x.MTU == mtu && x.Size == 1_000_000 && x.Gbps > 0 {
					f(&g, x)
					g.Absent = ""
				}
			}
		}
		return g
	}
	return []perf.Goal{
		row("Homa on memif over the link's own rate, MTU 1500", 1500, func(g *perf.Goal, x Ratio) { perf.AtLeast(g, x.Gbps, 0.4) }),
		row("Homa on memif CPU per GB over the link's, MTU 1500", 1500, func(g *perf.Goal, x Ratio) { perf.AtMost(g, x.CPUPerGB, 3.0) }),
		row("Homa on memif over the link's own rate, MTU 9000", 9000, func(g *perf.Goal, x Ratio) { perf.AtLeast(g, x.Gbps, 0.8) }),
		row("Homa on memif over the link's own rate, MTU 9000 (issue 42)", 9000, func(g *perf.Goal, x Ratio) { perf.AtLeast(g, x.Gbps, 0.5) }),
	}
}
