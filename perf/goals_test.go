package perf

import (
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf/enginebench"
)

func TestParseDemo_readsRateAndPacketEvents(t *testing.T) {
	out := []byte("demo: ...\n\n  size (B) ...\n\n1234 RPCs in 5.0 s: 1250000 RPCs/s, 2.00 Gbps of messages (requests + responses)\n" +
		"client counters: packets_sent_DATA=1\npacket events: 25000000 (sent or received, both hosts): 200 ns each on the loop's core\n")
	r, err := parseDemo(DemoRun{Name: "small"}, out)
	if err != nil {
		t.Fatal(err)
	}
	if r.RPCsPerSec != 1_250_000 || r.Gbps != 2 || r.PacketEvent != 25_000_000 || r.NsPerPkt != 200 {
		t.Errorf("%+v", r)
	}
	if _, err := parseDemo(DemoRun{}, []byte("demo: failed\n")); err == nil || !strings.Contains(err.Error(), "demo: failed") {
		t.Errorf("output without figures: %v", err)
	}
}

func goalsByName(gs []Goal) map[string]Goal {
	m := map[string]Goal{}
	for _, g := range gs {
		m[g.Goal] = g
	}
	return m
}

func TestGoals_eachRowFromItsScenario(t *testing.T) {
	in := GoalInputs{
		Throughput: &ThroughputResult{Ratios: []ThroughputRatio{
			{Homa: "homa-ring", TCP: "tcp-veth", Size: 1_000_000, Gbps: 1.2, CPUPerGB: 1.6},
			{Homa: "homa-memif", TCP: "tcp-veth", Size: 1_000_000, Gbps: 9, CPUPerGB: 0.1}, // not the goal's link
			{Homa: "homa-ring", TCP: "tcp-loopback", Size: 1_000_000, Gbps: 9},             // nor its peer
		}},
		RTT: &RTTResult{Ratios: []RTTRatio{{Homa: "homa-ring", Size: 100, VethP50: 3.6}, {Homa: "homa-ring", Size: 10_000, VethP50: 0.9}}},
		Cost: &CostResult{Engine: []enginebench.Result{{Case: "stream1MB", NsPerPkt: 120}},
			Demo: []DemoRun{{Name: "small", NsPerPkt: 190, RPCsPerSec: 1_400_000}, {Name: "1MB", NsPerPkt: 290}}},
	}
	in.Starts = &StartsResult{Goals: []StartsGoal{
		{Goal: goalBimodal, Link: "ring", Value: 0.05, Limit: 0.15, Pass: true},
		{Goal: goalBimodal, Link: "memif", Value: 0.50, Limit: 0.15}, // not the goal's link
		{Goal: goalWarmup, Link: "ring", Value: 1.6, Limit: 1.5},
	}}
	in.WorkerRTT = &WorkerRTTResult{Size: 100, Paths: []WorkerRTTPath{{Path: "in-daemon"}, {Path: "worker (shm)"}}, AddedMedianUs: 0.7}
	g := goalsByName(Goals(in))
	check(t, g, "worker RTT P50 minus in-daemon RTT P50, µs (100 B)", 0.7, false)
	check(t, g, goalBimodal, 0.05, true)
	check(t, g, goalWarmup, 1.6, false)
	check(t, g, "1 MB streaming throughput, Homa over TCP", 1.2, true)
	check(t, g, "1 MB streaming CPU per GB, Homa over TCP", 1.6, false)
	check(t, g, "RTT P50 at 100 B, TCP over Homa", 3.6, true)
	check(t, g, "RTT P50 at 10 KB, TCP over Homa", 0.9, false)
	check(t, g, "ns per packet event, demo pair (1 MB echoes)", 290, false)
	check(t, g, "ns per packet event, demo pair (100 B RPCs)", 190, false)
	if r := g["RTT P50 at 1 MB, TCP over Homa"]; r.Absent == "" || r.Met {
		t.Errorf("a size the run lacks: %+v", r)
	}
	if r := g["small RPCs per core over the 435k RPCs/s before"]; !r.Met || r.Figure < 3.2 || r.Figure > 3.3 {
		t.Errorf("rate: %+v", r)
	}
}

func TestGoals_noResultsNoFigures(t *testing.T) {
	gs := Goals(GoalInputs{})
	for _, g := range gs {
		if g.Absent == "" || g.Met {
			t.Errorf("%+v", g)
		}
	}
	sec := GoalsSection(gs)
	if len(sec.Tables[0].Rows) != len(gs) || !strings.Contains(sec.Notes[0], "0 of") {
		t.Errorf("%+v", sec)
	}
}

func check(t *testing.T, g map[string]Goal, name string, fig float64, met bool) {
	t.Helper()
	r, ok := g[name]
	if !ok || r.Absent != "" || r.Figure != fig || r.Met != met {
		t.Errorf("%s: %+v, want figure %v met %v", name, r, fig, met)
	}
}
