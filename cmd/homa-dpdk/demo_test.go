package main

import (
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// TestRunDemo_homaHostsExchangeRPCs runs the Homa demo's data path (two
// hosts on a ring pair, one polling loop on lcore 1) for a short time and
// checks its report. It measures nothing.
func TestRunDemo_homaHostsExchangeRPCs(t *testing.T) {
	dpdktest.Need(t)
	var out strings.Builder
	err := runDemo(demoConfig{duration: time.Second, sizes: []int{100, 10_000, 100_000}, concurrency: 2, out: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P99 µs", "RPCs/s", "packets_sent_DATA="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
