package perf

import "fmt"

// Goals are issue 14's targets, checked against one perf all run's
// figures: each row names its figure, where it comes from, the goal and
// whether this run met it. A row whose scenario failed or did not run
// says so instead of a figure.

// WorkerRTTGoalUs is the most the worker path may add to the in-daemon
// round trip's median (issue 29).
const WorkerRTTGoalUs = 0.5

// Goal is one row of the goals table.
type Goal struct {
	Goal   string  `json:"goal"`
	Source string  `json:"source"` // the scenario and series the figure comes from
	Figure float64 `json:"figure"`
	Want   string  `json:"want"` // e.g. ">= 1.00"
	Met    bool    `json:"met"`
	Absent string  `json:"absent,omitempty"` // why there is no figure
}

// GoalInputs are the results a goals table reads; any may be nil.
type GoalInputs struct {
	RTT        *RTTResult
	Throughput *ThroughputResult
	Cost       *CostResult
	Starts     *StartsResult
	WorkerRTT  *WorkerRTTResult
	// Collectives are perf collectives' jobs (nil: it did not run; its
	// rows then have no figures).
	Collectives []CollectivesFigures
}

func AtLeast(g *Goal, v, want float64) {
	g.Figure, g.Met, g.Want = v, v >= want, fmt.Sprintf(">= %.2f", want)
}
func AtMost(g *Goal, v, want float64) {
	g.Figure, g.Met, g.Want = v, v <= want, fmt.Sprintf("<= %.2f", want)
}

// goalLink is the link the goals are set on: a net_ring pair, which
// copies nothing, as kernel TCP's skbs change hands.
const goalLink = "homa-ring"

// Goals computes the goals table from in.
func Goals(in GoalInputs) []Goal {
	var gs []Goal
	// 1 MB streaming: Gbps and CPU per GB against TCP over veth.
	tp := func(what string, f func(ThroughputRatio) (float64, func(*Goal, float64, float64), float64)) {
		g := Goal{Goal: what, Source: "throughput " + goalLink + " / tcp-veth, 1 MB"}
		found := false
		if in.Throughput != nil {
			for _, r := range in.Throughput.Ratios {
				if r.Homa == goalLink && r.TCP == "tcp-veth" && r.Size == 1_000_000 {
					v, cmp, want := f(r)
					cmp(&g, v, want)
					found = true
				}
			}
		}
		if !found {
			g.Absent = "no throughput ratio for it in this run"
		}
		gs = append(gs, g)
	}
	tp("1 MB streaming throughput, Homa over TCP", func(r ThroughputRatio) (float64, func(*Goal, float64, float64), float64) {
		return r.Gbps, AtLeast, 1.0
	})
	tp("1 MB streaming CPU per GB, Homa over TCP", func(r ThroughputRatio) (float64, func(*Goal, float64, float64), float64) {
		return r.CPUPerGB, AtMost, 1.5
	})
	// RTT P50 at each size against TCP over veth.
	for _, s := range []struct {
		size int
		want float64
	}{{100, 3.5}, {1000, 3.5}, {10_000, 1}, {100_000, 1}, {1_000_000, 1}} {
		g := Goal{Goal: "RTT P50 at " + SizeName(s.size) + ", TCP over Homa", Source: "rtt tcp-veth / " + goalLink}
		found := false
		if in.RTT != nil {
			for _, r := range in.RTT.Ratios {
				if r.Homa == goalLink && r.Size == s.size && r.VethP50 > 0 {
					AtLeast(&g, r.VethP50, s.want)
					found = true
				}
			}
		}
		if !found {
			g.Absent = "no rtt ratio for it in this run"
		}
		gs = append(gs, g)
	}
	// The data path's cost per packet event, and small RPCs per core.
	eng := Goal{Goal: "ns per packet event, engine alone (1 MB streaming; small RPCs in the cost section)", Source: "cost engine stream1MB"}
	demo1 := Goal{Goal: "ns per packet event, demo pair (1 MB echoes)", Source: "cost demo pair 1MB"}
	demoS := Goal{Goal: "ns per packet event, demo pair (100 B RPCs)", Source: "cost demo pair small"}
	rate := Goal{Goal: fmt.Sprintf("small RPCs per core over the %dk RPCs/s before", CostBaselineRPCs/1000), Source: "cost demo pair small"}
	for _, g := range []*Goal{&eng, &demo1, &demoS, &rate} {
		g.Absent = "the cost scenario did not run"
	}
	if in.Cost != nil {
		for _, e := range in.Cost.Engine {
			if e.Case == "stream1MB" {
				AtMost(&eng, e.NsPerPkt, CostGoalNs)
				eng.Absent = ""
			}
		}
		for _, d := range in.Cost.Demo {
			switch d.Name {
			case "1MB":
				AtMost(&demo1, d.NsPerPkt, CostGoalNs)
				demo1.Absent = ""
			case "small":
				AtMost(&demoS, d.NsPerPkt, CostGoalNs)
				AtLeast(&rate, d.RPCsPerSec/CostBaselineRPCs, 3)
				demoS.Absent, rate.Absent = "", ""
			}
		}
	}
	gs = append(gs, eng, demo1, demoS, rate)
	// Bimodal starts and the warm-up penalty, on the goals' link (the
	// starts section has memif's too).
	for _, name := range []string{goalBimodal, goalWarmup} {
		g := Goal{Goal: name, Source: "starts " + goalLink, Absent: "the starts scenario did not judge it on " + goalLink}
		if in.Starts != nil {
			for _, sg := range in.Starts.Goals {
				if sg.Goal == name && HomaSeries(sg.Link) == goalLink && sg.Why == "" {
					AtMost(&g, sg.Value, sg.Limit)
					g.Absent = ""
				}
			}
		}
		gs = append(gs, g)
	}
	// What the shared-memory worker path adds to a round trip.
	wr := Goal{Goal: "worker RTT P50 minus in-daemon RTT P50, µs (100 B)", Source: "worker-rtt",
		Absent: "worker-rtt did not run at 100 B"}
	if in.WorkerRTT != nil && in.WorkerRTT.Size == 100 && len(in.WorkerRTT.Paths) > 0 {
		AtMost(&wr, in.WorkerRTT.AddedMedianUs, WorkerRTTGoalUs)
		wr.Absent = ""
	}
	gs = append(gs, wr)
	// The PyTorch backend against gloo (goals_collectives.go).
	gs = append(gs, CollectivesGoals(in.Collectives)...)
	return gs
}

// GoalsSection is the goals table's part of the perf all report.
func GoalsSection(gs []Goal) Section {
	t := Table{Header: []string{"goal", "this run", "want", "met", "from"}}
	met := 0
	for _, g := range gs {
		fig, ok := fmt.Sprintf("%.2f", g.Figure), "no"
		if g.Figure >= 100 {
			fig = fmt.Sprintf("%.0f", g.Figure)
		}
		if g.Met {
			ok = "yes"
			met++
		}
		if g.Absent != "" {
			fig, ok = "—", "("+g.Absent+")"
		}
		t.Rows = append(t.Rows, []string{g.Goal, fig, g.Want, ok, g.Source})
	}
	return Section{Name: "goals", Title: "goals: issue 14's targets against this run",
		Method: "Each figure is this run's, from the section named in its row; ratios are against kernel TCP measured " +
			"in the same run, on the link that copies nothing (" + goalLink + ", a net_ring pair).",
		Tables: []Table{t}, Notes: []string{fmt.Sprintf("%d of %d goals met in this run.", met, len(gs))}}
}
