// Package cluster is `homa-dpdk perf cluster`: a datacenter in
// simulation, every host running the real engine.Endpoint on memnet's
// two-level fabric (engine/memnet, fabric.go), driven in simulated time.
// The default is the SIGCOMM'18 Homa paper's simulated cluster: 9 racks
// of 16 hosts (144), 10 Gb/s host links, four core switches at 40 Gb/s
// from every top-of-rack switch (full bisection), 0.25 µs per switch,
// packet spraying over the cores, 0.5 µs of software turnaround at hosts,
// and the paper's workloads W1–W5 with Poisson arrivals to uniformly
// random other hosts at 50, 80 or 90% of the host links' capacity
// (counting wire bytes: every DATA frame's headers and Ethernet's
// preamble, FCS and gap, and the one-byte response of every message,
// which the paper's one-way messages do not have).
//
// A message is the request of an RPC (its server answers with one byte);
// its completion time runs from Port.Send at the sender to its delivery
// at the receiver, and its slowdown is that time over the time the same
// message takes on an idle network, computed from link math (idle.go) and
// checked against a simulated idle run (TestIdle_matchesSimulation).
//
// Variants, on the same arrivals: homa (the engine's defaults scaled to
// the paper's 10 Gb/s: 10 KB of unscheduled bytes, priority cutoffs from
// the workload), homa-1prio (one network priority: every port one FIFO
// queue), basic (receiver grants in arrival order, no SRPT, one
// priority), and homa-no-incast (homa-dpdk's incast allowance off).
package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Variant is a transport configuration the simulation compares.
type Variant string

// The variants.
const (
	Homa         Variant = "homa"
	HomaOnePrio  Variant = "homa-1prio"
	Basic        Variant = "basic"
	HomaNoIncast Variant = "homa-no-incast"
)

// Variants lists every variant, in report order.
var Variants = []Variant{Homa, HomaOnePrio, Basic, HomaNoIncast}

// Config is one simulation run.
type Config struct {
	Racks, HostsPerRack, Cores int
	LinkBps, UplinkBps         float64 // host links; ToR–core links
	PropDelay                  int64   // ns per link (the paper's simulator: 0)
	SwitchLatency              int64   // ns per switch
	HostDelay                  int64   // ns of software turnaround per frame sent (the paper's simulator: 500)
	NICDelay                   int64   // ns a frame spends in the NIC before the wire (the paper's simulator: 500)
	RecvDelay                  int64   // ns of software turnaround per frame received (the paper's simulator: 500)
	BufferBytes                int     // per switch egress port; <0 unlimited
	ECMP                       bool    // per-pair paths instead of per-frame spraying
	// NICFIFO gives every host NIC one FIFO queue instead of a queue per
	// priority served strictly (what homa-dpdk's TX queue per priority does).
	NICFIFO bool
	// ScheduledDataQueue sends scheduled DATA from the lowest NIC queue
	// (engine.Config.ScheduledDataQueue).
	ScheduledDataQueue bool
	// MessagePriorityResends makes receivers' RESENDs name the message's
	// own priority instead of kernel Homa's 7
	// (engine.Config.MessagePriorityResends).
	MessagePriorityResends bool

	Workload string         // W1..W5, or AI (the AI mix)
	AI       workload.AIMix // the AI mix's parameters
	Load     float64        // of the host links' capacity, 0 < Load < 1
	Variant  Variant
	// Messages is how many messages are offered; 0 takes those that
	// arrive in Duration ns at the load's rate, at most MaxMessages.
	Messages    int
	Duration    int64  // ns of arrivals when Messages is 0 (100 ms)
	MaxMessages int    // the most Duration may offer (500,000)
	Seed        uint64 // arrivals (sources, destinations, sizes, times)

	// UnschedBytes is the engine's unscheduled bytes (rttBytes); 0: 10 KB,
	// the paper's at 10 Gb/s.
	UnschedBytes int
	// MaxIncoming is the receivers' bound on granted, unreceived bytes
	// (sched.GrantConfig.MaxIncoming); 0: ten times UnschedBytes.
	MaxIncoming int
	// MaxOvercommit is how many messages a receiver grants to at once
	// (sched.GrantConfig.MaxOvercommit); 0: the engine's default, 8.
	MaxOvercommit int
	// Cutoffs is the rule the unscheduled priority cutoffs are computed
	// by (CutoffRules); "" is DefaultCutoffRule.
	Cutoffs string
	// UnschedLevels is how many priority levels take unscheduled bytes;
	// 0: the workload's share of unscheduled bytes of eight levels.
	UnschedLevels int
	// CutoffSkew is each lower level's share of the one above
	// (sched.ComputeCutoffsBy); 0 is 1.
	CutoffSkew float64

	// NS3 is the ns-3 program that runs DCTCP and TCP (ns3.Find), NS3Args
	// more of its flags, NS3Dir where its trace and output go ("": a
	// temporary directory, removed after).
	NS3     string
	NS3Args []string
	NS3Dir  string
}

// The rules unscheduled cutoffs can be computed by: equal unscheduled
// message bytes per level (kernel Homa's util/homa_prio), equal bytes on
// the wire (headers per packet counted: the Homa paper's simulator), or
// an equal number of messages per level.
const (
	CutoffsBytes = "bytes"
	CutoffsWire  = "wire"
	CutoffsCount = "count"
	// CutoffsBalanced balances each level's wait against its messages'
	// own time at the run's load (sched.ComputeCutoffsBalanced).
	CutoffsBalanced = "balanced"
)

// CutoffRules lists the rules.
var CutoffRules = []string{CutoffsBytes, CutoffsWire, CutoffsCount, CutoffsBalanced}

// DefaultCutoffRule is the rule the hosts use unless told otherwise.
const DefaultCutoffRule = CutoffsBalanced

// DefaultConfig is the paper's cluster: 144 hosts, W4 at 80%, homa, the
// messages of 100 ms of arrivals (at most 500,000).
func DefaultConfig() Config {
	return Config{Racks: 9, HostsPerRack: 16, Cores: 4, LinkBps: 10e9, UplinkBps: 40e9,
		SwitchLatency: 250, HostDelay: 500, NICDelay: 500, RecvDelay: 500, BufferBytes: -1, ScheduledDataQueue: true,
		Workload: "W4", Load: 0.8, Variant: Homa, Duration: 100_000_000, MaxMessages: 500_000, Seed: 1, AI: workload.DefaultAIMix()}
}

// SmokeConfig is CI's size: 16 hosts in 4 racks, a few thousand
// messages (a few ms of simulated time).
func SmokeConfig() Config {
	c := DefaultConfig()
	c.Racks, c.HostsPerRack, c.Cores, c.Messages = 4, 4, 2, 3000
	return c
}

// SmokeAI is c's smoke size for the AI mix: 5 ms of starts of smaller
// collectives (64 KiB chunks, all-to-all of 16 to 256 KiB), so that a
// few of each run in it, rather than a count of messages, which the
// mix's bursts of a whole operation would cut short.
func (c Config) SmokeAI() Config {
	c.Messages, c.Duration = 0, 5_000_000
	c.AI.Chunk, c.AI.A2AMin, c.AI.A2AMax = 64<<10, 16<<10, 256<<10
	return c
}

// SmokeRun is c's size in the command's --smoke runs: its workload's
// first SmokeConfig messages (3,000) but no more than 20 ms of arrivals,
// since 3,000 of W4's or W5's messages are gigabytes, minutes a run on
// ns-3; the AI mix has its own (SmokeAI).
func (c Config) SmokeRun() Config {
	if c.Workload == workload.AI {
		return c.SmokeAI()
	}
	c.Messages, c.Duration, c.MaxMessages = 0, 20_000_000, SmokeConfig().Messages
	return c
}

// Hosts is the number of hosts.
func (c Config) Hosts() int { return c.Racks * c.HostsPerRack }

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Racks < 1 || c.HostsPerRack < 1 || c.Hosts() < 2 || c.Hosts() > 1<<16:
		return fmt.Errorf("%d racks of %d hosts: want 2..65536 hosts", c.Racks, c.HostsPerRack)
	case c.Cores < 1 || c.Cores > 64:
		return fmt.Errorf("%d cores: want 1..64", c.Cores)
	case c.LinkBps < 1e6 || c.UplinkBps < 1e6:
		return errors.New("link rates must be at least 1 Mb/s")
	case c.PropDelay < 0 || c.SwitchLatency < 0 || c.HostDelay < 0 || c.NICDelay < 0 || c.RecvDelay < 0:
		return errors.New("delays must not be negative")
	case !(c.Load > 0 && c.Load < 1):
		return fmt.Errorf("load %g: want 0 < load < 1", c.Load)
	case c.Messages < 0 || c.Messages == 0 && (c.Duration <= 0 || c.MaxMessages < 1):
		return fmt.Errorf("%d messages, %d ns, at most %d: want a number of messages or a duration", c.Messages, c.Duration, c.MaxMessages)
	case c.UnschedBytes < 0 || c.MaxIncoming < 0 || c.MaxOvercommit < 0:
		return errors.New("unscheduled and incoming bytes must not be negative")
	case c.Cutoffs != "" && !slices.Contains(CutoffRules, c.Cutoffs):
		return fmt.Errorf("cutoff rule %q: want one of %s", c.Cutoffs, strings.Join(CutoffRules, ", "))
	case c.UnschedLevels < 0 || c.UnschedLevels > 7:
		return fmt.Errorf("%d unscheduled levels: want 0 (from the workload) or 1..7", c.UnschedLevels)
	case !slices.Contains(AllVariants(), c.Variant):
		return fmt.Errorf("variant %q: want one of %s", c.Variant, variantNames())
	}
	if c.Workload == workload.AI {
		return c.AI.Validate(c.Hosts())
	}
	if _, err := workload.LoadWorkload(c.Workload); err != nil {
		return fmt.Errorf("%w, or AI", err)
	}
	return nil
}

func variantNames() string {
	var s []string
	for _, v := range AllVariants() {
		s = append(s, string(v))
	}
	return strings.Join(s, ", ")
}

// cluster is c as the AI mix's generator takes it.
func (c Config) cluster() workload.Cluster {
	return workload.Cluster{Racks: c.Racks, HostsPerRack: c.HostsPerRack, LinkBps: c.LinkBps, Load: c.Load,
		Wire: WireBytes, ResponseBytes: responseBytes, Duration: c.Duration, Seed: c.Seed}
}
