package engine

import (
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
