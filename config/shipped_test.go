package config

import (
	"fmt"
	"sort"
	"testing"
)

// shippedTogether are the shipped daemon configs meant to run at once on
// one machine: example.yaml and its peer, the two ends of a memif link.
// The others are alternatives, one daemon a machine: example-nic.yaml,
// deploy/container/homa.yaml (the image's), deploy/k8s/homa.yaml (the
// Pod's).
var shippedTogether = [][]string{{"example.yaml", "example-peer.yaml"}}

// The shipped configs that run together poll on CPUs of their own: two
// busy loops on one CPU would take turns, each latency the other's pass.
func TestShipped_configsThatRunTogetherPollApart(t *testing.T) {
	for _, group := range shippedTogether {
		owner := map[uint]string{} // CPU → the config and key that polls or copies on it
		for _, file := range group {
			s, err := Load(Source{File: file})
			if err != nil {
				t.Fatal(err)
			}
			cpus, err := loopCPUs(s)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(cpus) == 0 {
				t.Fatalf("%s: no polling CPU found", file)
			}
			keys := make([]uint, 0, len(cpus))
			for cpu := range cpus {
				keys = append(keys, cpu)
			}
			sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
			for _, cpu := range keys {
				who := fmt.Sprintf("%s's %s", file, cpus[cpu])
				if other, dup := owner[cpu]; dup {
					t.Errorf("CPU %d: %s and %s, which run together", cpu, other, who)
				}
				owner[cpu] = who
			}
		}
	}
}

// loopCPUs are the CPUs a loaded Spec keeps busy, each with what does:
// its polling lcores' (resolved by its eal list) and its copier CPUs.
func loopCPUs(s *Spec) (map[uint]string, error) {
	e, err := parseEALLcores(s.EAL)
	if err != nil {
		return nil, err
	}
	cpus := map[uint]string{}
	for i := range s.Ports {
		for _, l := range s.Ports[i].Lcores {
			for _, c := range e.cpusOf(l) {
				cpus[c] = fmt.Sprintf("polling lcore %d (%s)", l, s.LcoresKey(i))
			}
		}
		for k, c := range s.Ports[i].CopierCPUs {
			cpus[c] = fmt.Sprintf("copier (ports[%d].copier_cpus[%d])", i, k)
		}
	}
	return cpus, nil
}
