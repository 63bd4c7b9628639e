package cluster

import (
	"fmt"
	"os"
	"slices"
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

// AllVariants are the engine's variants, then ns-3's.
func AllVariants() []Variant { return append(slices.Clone(Variants), DCTCP, TCP) }

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

// ns3Table is what the ns-3 runs printed of their settings and counters,
// a column per run (the trace's path and the program's version left out).
func ns3Table(results []*Result) perf.Table {
	t := perf.Table{Title: "ns-3's settings and counters, per run", Header: []string{"setting"}}
	var keys []string
	value := map[string][]string{}
	for _, r := range results {
		if r.Simulator == "" {
			continue
		}
		t.Header = append(t.Header, fmt.Sprintf("%s %.0f%% %s", r.Workload, 100*r.Load, r.Variant))
		for _, kv := range r.NS3 {
			if kv[0] == "trace" || kv[0] == "homa-ns3-tcp" {
				continue
			}
			if _, ok := value[kv[0]]; !ok {
				keys = append(keys, kv[0])
			}
			for len(value[kv[0]]) < len(t.Header)-2 {
				value[kv[0]] = append(value[kv[0]], "-")
			}
			value[kv[0]] = append(value[kv[0]], kv[1])
		}
	}
	if len(t.Header) == 1 {
		return perf.Table{} // no ns-3 run: no table
	}
	for _, k := range keys {
		row := append([]string{k}, value[k]...)
		for len(row) < len(t.Header) {
			row = append(row, "-")
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
