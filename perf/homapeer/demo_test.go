package homapeer

import (
	"strings"
	"testing"
)

func TestParseDemo_readsRateAndPacketEvents(t *testing.T) {
	out := []byte("demo: ...\n\n  size (B) ...\n\n1234 RPCs in 5.0 s: 1250000 RPCs/s, 2.00 Gbps of messages (requests + responses)\n" +
		"client counters: packets_sent_DATA=1\npacket events: 25000000 (sent or received, both hosts): 200 ns each on the loop's core\n")
	r, err := ParseDemo(DemoRun{Name: "small"}, out)
	if err != nil {
		t.Fatal(err)
	}
	if r.RPCsPerSec != 1_250_000 || r.Gbps != 2 || r.PacketEvent != 25_000_000 || r.NsPerPkt != 200 {
		t.Errorf("%+v", r)
	}
	if _, err := ParseDemo(DemoRun{}, []byte("demo: failed\n")); err == nil || !strings.Contains(err.Error(), "demo: failed") {
		t.Errorf("output without figures: %v", err)
	}
}
