package engine

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

func TestMetrics_namesFollowKernelHoma(t *testing.T) {
	var m Metrics
	m.PacketsSent[0] = 3
	m.PacketsRcvd[wire.TypeAck-wire.TypeData] = 4
	m.ResentPackets = 5
	m.Drops[DropDuplicate] = 6
	m.Drops[DropCause(wire.DropBadIPChecksum)] = 7
	m.Drops[DropTxUnresolved] = 8
	m.RPCsWaitingResolution = 9
	got := map[string]uint64{}
	m.Each(func(name string, v uint64) {
		if _, dup := got[name]; dup {
			t.Fatalf("name %s twice", name)
		}
		got[name] = v
	})
	for name, want := range map[string]uint64{
		"packets_sent_DATA": 3, "packets_rcvd_ACK": 4, "resent_packets": 5,
		"drops_duplicate_data": 6, "drops_bad_ip_checksum": 7, "rpc_timeouts": 0, "unknown_rpcs": 0,
		"drops_tx_unresolved": 8, "rpcs_waiting_resolution": 9, "client_rpcs_unresolved": 0,
		"server_responses_unresolved": 0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %d, %v; want %d", name, v, ok, want)
		}
	}
	for name := range got {
		if strings.Contains(name, "unknown") && name != "unknown_rpcs" && name != "drops_unknown_rpc" && name != "client_rpc_stale_unknowns" {
			t.Errorf("cause without a name: %s", name)
		}
	}
}

// Every counter of Each but the packets_* and drops_* ones has help text
// for the metrics endpoint, and every help text names a counter.
func TestMetrics_everyCounterHasHelp(t *testing.T) {
	var m Metrics
	seen := map[string]bool{}
	m.Each(func(name string, _ uint64) {
		if strings.HasPrefix(name, "packets_") || strings.HasPrefix(name, "drops_") {
			return
		}
		seen[name] = true
		if CounterHelp[name] == "" {
			t.Errorf("counter %s has no CounterHelp", name)
		}
	})
	for name := range CounterHelp {
		if !seen[name] {
			t.Errorf("CounterHelp names %s, which Each does not give", name)
		}
	}
}

// The round-trip and size histograms count completed RPCs and messages
// in the right buckets, on the engine's clock.
func TestMetrics_roundTripAndSizeHistograms(t *testing.T) {
	n := newTestNet(t)
	a, b := n.addHost("a", 1, nil), n.addHost("b", 2, nil)
	srv, cl := serverAndClient(t, b, a, 99)
	for _, size := range []int{50, 5000, 300_000} {
		if _, err := cl.Send(Addr{IP: netip.AddrFrom4(b.ip), Port: 99}, msg(size, 1)); err != nil {
			t.Fatal(err)
		}
		n.flush()
		req := receive(t, srv)
		n.now += 30_000 // the server takes 30 µs
		if err := srv.Reply(req, req.Data[:10]); err != nil {
			t.Fatal(err)
		}
		n.flush()
		receive(t, cl)
	}
	ma, mb := a.e.Metrics(), b.e.Metrics()
	want := [histBuckets]uint64{}
	want[5] = 3 // 30 µs: above 20 µs, at most 50 µs
	if ma.RoundTrips.Counts != want || ma.RoundTrips.Sum != 90_000 {
		t.Fatalf("round trips %v sum %d, want %v", ma.RoundTrips.Counts, ma.RoundTrips.Sum, want)
	}
	want = [histBuckets]uint64{}
	want[0]++  // 50 <= 100
	want[5]++  // 5000 <= 5000
	want[11]++ // 300,000 <= 500,000
	if mb.MessageSizes.Counts != want || mb.MessageSizes.Sum != 305_050 {
		t.Fatalf("request sizes %v sum %d, want %v", mb.MessageSizes.Counts, mb.MessageSizes.Sum, want)
	}
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}
