package cluster

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/ns3"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The variants ns-3 runs (package ns3): the same messages over DCTCP and
// over TCP Cubic, on the same fabric, with per-flow ECMP over the cores
// and switch queues of stated sizes.
const (
	DCTCP Variant = "dctcp"
	TCP   Variant = "tcp"
)

// onNS3 says whether ns-3 runs v.
func onNS3(v Variant) bool { return v == DCTCP || v == TCP }

// fabric is cfg's network as the ns-3 program takes it.
func (c Config) fabric() ns3.Fabric {
	return ns3.Fabric{Racks: c.Racks, HostsPerRack: c.HostsPerRack, Cores: c.Cores, LinkBps: c.LinkBps, UplinkBps: c.UplinkBps,
		PropNs: c.PropDelay, SwitchNs: c.SwitchLatency, HostNs: c.HostDelay + c.NICDelay, RecvNs: c.RecvDelay, MTU: mtu}
}

// runNS3 runs cfg's messages on ns-3 (cfg.NS3, its files in cfg.NS3Dir)
// and measures them as the engine's runs are.
func runNS3(cfg Config) (*Result, error) {
	if cfg.NS3 == "" {
		return nil, fmt.Errorf("%s runs on ns-3, and no program was given", cfg.Variant)
	}
	msgs, err := arrivals(cfg)
	if err != nil {
		return nil, err
	}
	dir := cfg.NS3Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "homa-ns3-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	name := fmt.Sprintf("ns3-%s-%02.0f-%s", cfg.Workload, 100*cfg.Load, cfg.Variant)
	t0 := time.Now()
	o, err := ns3.Run(cfg.NS3, dir, name, cfg.fabric(), msgs, string(cfg.Variant), cfg.NS3Args...)
	if err != nil {
		return nil, err
	}
	end := msgs[len(msgs)-1].At
	r := &Result{Variant: cfg.Variant, Simulator: "ns-3", Workload: cfg.Workload, Load: cfg.Load, Hosts: cfg.Hosts(),
		OfferedSimNs: end, WallSeconds: time.Since(t0).Seconds(), Drops: uint64(o.Drops),
		Marks: o.Marks, Retransmits: o.Retransmits, NS3: o.Settings}
	var offered int64
	for i, m := range msgs {
		if o.Start[i] >= 0 {
			r.Offered++
			offered += int64(m.Size)
		}
		if o.Done[i] >= 0 {
			r.Delivered++
			r.SimNs = max(r.SimNs, o.Done[i])
		}
	}
	if n := len(msgs) - r.Delivered; n > 0 {
		r.Errors = n
		r.ErrorLines = append(r.ErrorLines, fmt.Sprintf("%d of %d messages not delivered by ns-3's stop time", n, len(msgs)))
	}
	if end > 0 {
		r.OfferedGbps = float64(offered) * 8 / (float64(end) * float64(cfg.Hosts()))
	}
	r.DrainMs = float64(r.SimNs-end) / 1e6
	analyze(r, cfg, msgs, o.Start, o.Done, end)
	return r, nil
}

// ns3Table is the settings the ns-3 runs used, as the program printed
// them (the first run's, and where another run's differ, that run's).
func ns3Table(results []*Result) perf.Table {
	t := perf.Table{Title: "ns-3's settings (DCTCP and TCP)", Header: []string{"setting", "value", "runs"}}
	seen := map[[2]string][]string{}
	var order [][2]string
	for _, r := range results {
		for _, kv := range r.NS3 {
			switch kv[0] {
			case "drops", "marks", "retransmits", "wall_s", "homa-ns3-tcp":
				continue
			}
			if _, ok := seen[kv]; !ok {
				order = append(order, kv)
			}
			seen[kv] = append(seen[kv], fmt.Sprintf("%s %.0f%% %s", r.Workload, 100*r.Load, r.Variant))
		}
	}
	for _, kv := range order {
		runs := "all"
		if n := len(seen[kv]); n < countNS3(results) {
			runs = strings.Join(seen[kv], ", ")
		}
		t.Rows = append(t.Rows, []string{kv[0], kv[1], runs})
	}
	if len(t.Rows) == 0 {
		return perf.Table{} // no ns-3 run: no table
	}
	return t
}

func countNS3(results []*Result) int {
	n := 0
	for _, r := range results {
		if r.Simulator != "" {
			n++
		}
	}
	return n
}
