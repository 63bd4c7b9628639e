package config

import "time"

// defaults are the values of every scalar key before the file, the
// environment and the flags speak. The protocol values are the kernel Homa
// module's.
var defaults = map[string]any{
	"lcores": []uint{1},

	"protocol.unsched_bytes":            40_000,
	"protocol.max_incoming":             400_000,
	"protocol.max_overcommit":           8,
	"protocol.window":                   0,
	"protocol.grant_fifo_fraction":      0.05,
	"protocol.fifo_grant_increment":     50_000,
	"protocol.grant_increment":          10_000,
	"protocol.unsched_cutoffs":          []int{200, 2800, 15_000, 1_000_000},
	"protocol.tick":                     time.Millisecond,
	"protocol.resend_ticks":             5,
	"protocol.resend_interval":          5,
	"protocol.timeout_ticks":            100,
	"protocol.busy_timeout_ticks":       0,
	"protocol.grant_lapse_ticks":        0,
	"protocol.request_ack_ticks":        2,
	"protocol.max_nic_queue":            5 * time.Microsecond,
	"protocol.pacer_threshold":          1000,
	"protocol.max_message":              1_000_000,
	"protocol.long_message_peers":       []string{},
	"protocol.incast_control":           true,
	"protocol.scheduled_data_queue":     true,
	"protocol.variant":                  "full",
	"protocol.checksum":                 false,
	"protocol.verify_checksum":          "hijacked",
	"protocol.message_priority_resends": false,

	"protocol.max_gaps":                 64,
	"protocol.max_resends_per_rpc":      8,
	"protocol.max_resend_bytes":         400_000,
	"protocol.max_server_rpcs":          8192,
	"protocol.max_server_rpcs_per_peer": 1024,
	"protocol.max_staging_bytes":        16 << 20,
	"protocol.max_recv_heap_bytes":      128 << 20,
	"protocol.max_peers":                16384,
	"protocol.peer_idle_ticks":          10_000,
	"protocol.icmp_ratelimit":           time.Second,
	"protocol.icmp_ratelimit_burst":     6,
	"protocol.icmp_ratelimit_buckets":   4096,
	"protocol.icmp_msgs_per_sec":        1000,
	"protocol.icmp_msgs_burst":          50,

	"metrics.address":   "127.0.0.1:9464",
	"capture.file":      "",
	"capture.last":      0,
	"capture.snaplen":   128,
	"capture.max_bytes": "1GiB",
	"capture.files":     1,
	"log.format":        "console",
	"log.level":         "info",
	"log.dpdk_level":    "warning",

	"runtime.gogc":              100,
	"runtime.gomemlimit":        "",
	"runtime.gomaxprocs":        0,
	"runtime.idle":              "adaptive",
	"runtime.idle_spin_passes":  10000,
	"runtime.idle_max_sleep_us": 100,

	"faults.drop":      0.0,
	"faults.duplicate": 0.0,
	"faults.reorder":   0.0,
	"faults.seed":      1,

	"workers.socket":               "/run/homa-dpdk/workers.sock",
	"workers.socket_group":         "",
	"workers.allow_uids":           []int{},
	"workers.allow_gids":           []int{},
	"workers.max_outstanding":      1024,
	"workers.max_bytes":            16 << 20,
	"workers.pool_bytes":           16 << 20,
	"workers.ring_entries":         1024,
	"workers.max_backlog":          4096,
	"workers.zero_copy_min":        4096,
	"workers.max_sessions_per_uid": 32,
	"workers.linger":               2 * time.Second,
	"workers.enabled":              true,

	"arp.timeout": 100 * time.Millisecond,
	"arp.retries": 5,
	"arp.aging":   5 * time.Minute,

	"mempool.mbufs":     16384,
	"mempool.cache":     256,
	"mempool.data_room": 0,
}

// Port defaults, applied to each port's zero fields.
const (
	defaultMTU     = 1500
	defaultRxDesc  = 1024
	defaultTxDesc  = 1024
	defaultMarking = "dscp"
)

func (p *PortSpec) applyDefaults() {
	if p.MTU == 0 {
		p.MTU = defaultMTU
	}
	if p.RxDesc == 0 {
		p.RxDesc = defaultRxDesc
	}
	if p.TxDesc == 0 {
		p.TxDesc = defaultTxDesc
	}
	if p.Marking == "" {
		p.Marking = defaultMarking
	}
}
