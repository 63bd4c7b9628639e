// Package config turns a YAML file, HOMA_* environment variables and
// command-line flags into one validated Spec for the daemon. It has no side
// effects: it reads, merges and checks; cmd/homa-dpdk builds the live
// objects from the Spec in named phases.
//
// Precedence, highest first: flags, environment, file, defaults. Every
// scalar key can come from the environment as HOMA_ followed by the key in
// capitals with dots as underscores (protocol.max_incoming is
// HOMA_PROTOCOL_MAX_INCOMING). Lists (ports, neighbours) come from the file,
// as YAML lists: a single value (lcores: 1) is refused, not taken as a
// one-element list.
//
// Errors name the key (ports[0].address, protocol.unsched_bytes) and the
// values it allows. example.yaml beside this file documents every key.
package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/homa-dpdk/homa-dpdk/wire"
	"github.com/spf13/viper"
)

// Spec is the daemon's whole configuration.
type Spec struct {
	// EAL arguments passed to DPDK verbatim (flags after -- replace them).
	EAL []string `mapstructure:"eal"`
	// Lcores is the file's shorthand for one lcore a port: lcores[i]
	// polls ports[i] (one shard) where ports[i].lcores is empty. Load
	// folds it into ports[].lcores, the canonical spelling, and leaves it
	// empty (Normalize): code reads ports[].lcores only. Ports given the
	// same lcore share one polling loop, whose pass runs each of their
	// hosts in turn.
	Lcores     []uint       `mapstructure:"lcores"`
	Ports      []PortSpec   `mapstructure:"ports"`
	Protocol   ProtocolSpec `mapstructure:"protocol"`
	Neighbours []Neighbour  `mapstructure:"neighbours"`
	Peers      []PeerSpec   `mapstructure:"peers"`
	Metrics    MetricsSpec  `mapstructure:"metrics"`
	Capture    CaptureSpec  `mapstructure:"capture"`
	Log        LogSpec      `mapstructure:"log"`
	Runtime    RuntimeSpec  `mapstructure:"runtime"`
	Faults     FaultSpec    `mapstructure:"faults"`
	Workers    WorkersSpec  `mapstructure:"workers"`
	ARP        ARPSpec      `mapstructure:"arp"`
	Mempool    MempoolSpec  `mapstructure:"mempool"`
}

// PortSpec is one DPDK port and the IPv4 host on it.
type PortSpec struct {
	// Device is a PCI address (0000:3b:00.0) or a vdev string
	// (net_memif0,role=server,socket=/run/homa/memif.sock).
	Device  string       `mapstructure:"device"`
	Address netip.Prefix `mapstructure:"address"` // IPv4 address/prefix, e.g. 10.0.0.1/24 (IPv6: an IPv6-only port)
	Gateway netip.Addr   `mapstructure:"gateway"` // IPv4 next hop off the subnet; "" (invalid) for none
	// Address6 is the port's IPv6 address/prefix (e.g. 2001:db8::1/64;
	// "" for none), beside Address: the host answers neighbour
	// discovery and ping -6 for it and speaks Homa over IPv6 to peers of
	// that family. Gateway6 is the IPv6 next hop off its prefix.
	Address6 netip.Prefix     `mapstructure:"address6"`
	Gateway6 netip.Addr       `mapstructure:"gateway6"`
	MAC      net.HardwareAddr `mapstructure:"mac"` // override of the port's MAC; "" (nil) keeps it
	MTU      int              `mapstructure:"mtu"` // IP MTU, 576..9000 (jumbo frames allowed)
	// RxQueues is the number of RX queues, all polled by the port's loop;
	// 0 chooses 1, or as many as the TX queues on net_memif, whose peers
	// must have matching queue pairs.
	RxQueues int `mapstructure:"rx_queues"`
	// WorkersSocket is the worker control socket of this port's host; for
	// the first port, "" takes workers.socket.
	WorkersSocket string `mapstructure:"workers_socket"`
	// Lcores are the EAL worker lcores of the port's shards, one shard
	// per entry: shard i polls on lcores[i], with its own tx_queues TX
	// queues and its share of the RX queues and of the RPCs
	// (host.ShardSet); one entry is one host, unsharded. The canonical
	// spelling: in a file it may be left out for the port's entry in the
	// top-level lcores, which Load folds in here. Shards may share an
	// lcore (its loop runs them in turn); a shard per lcore spreads the
	// work. Each worker of the port lives on one shard (hub.Set), the
	// least loaded when it attaches, its server ports bound there alone.
	Lcores []uint `mapstructure:"lcores"`
	// lcoresKey is the key the file gave Lcores in: "lcores[i]" when Load
	// folded it in from the top-level list, "" for ports[i].lcores.
	lcoresKey string
	// CopierCPUs moves the port's receive copies (each packet's bytes into
	// its message's buffer: a worker's pool) off its polling loops: a
	// copier thread per shard, pinned to copier_cpus[i] (host.Copier).
	// Empty: the loops copy. Give one CPU per shard (per lcore in
	// lcores, or one for an unsharded port), off the polling lcores.
	CopierCPUs []uint `mapstructure:"copier_cpus"`
	// TxQueues is the number of TX queues for the 8 priorities; 0 takes as
	// many as the device allows, up to 8.
	TxQueues    int    `mapstructure:"tx_queues"`
	PriorityMap string `mapstructure:"priority_map"` // queues of priorities 7..0, "" for the default spread
	Marking     string `mapstructure:"marking"`      // dscp or pcp
	VLAN        int    `mapstructure:"vlan"`         // VLAN id for pcp marking, 0..4094
	LinkSpeed   Rate   `mapstructure:"link_speed"`   // "auto" (0: ask the port), or a rate like 10G, 25G, 100G, 100M
	RxDesc      int    `mapstructure:"rx_desc"`      // RX descriptors per queue
	TxDesc      int    `mapstructure:"tx_desc"`      // TX descriptors per queue
}

// ProtocolSpec holds every Homa knob, with the kernel implementation's
// defaults.
type ProtocolSpec struct {
	UnschedBytes       int     `mapstructure:"unsched_bytes"`        // bytes sent before any grant
	MaxIncoming        int     `mapstructure:"max_incoming"`         // granted-but-unreceived bytes allowed
	MaxOvercommit      int     `mapstructure:"max_overcommit"`       // messages granted at once
	Window             int     `mapstructure:"window"`               // bytes granted past a message's received bytes; 0 = dynamic, max_incoming/(active+1)
	GrantFIFOFraction  float64 `mapstructure:"grant_fifo_fraction"`  // share of grants to the oldest message
	FIFOGrantIncrement int     `mapstructure:"fifo_grant_increment"` // bytes per FIFO grant
	GrantIncrement     int     `mapstructure:"grant_increment"`      // least raise of a message's grant, bytes (1: any)
	// UnschedCutoffs are the initial cutoffs for priorities 7 down to 0
	// (bytes; a message goes at the highest priority whose cutoff is at
	// least its length); 0 ends the list.
	UnschedCutoffs []int         `mapstructure:"unsched_cutoffs"`
	Tick           time.Duration `mapstructure:"tick"`
	ResendTicks    int           `mapstructure:"resend_ticks"`      // silent ticks before the first RESEND
	ResendInterval int           `mapstructure:"resend_interval"`   // ticks between RESENDs
	TimeoutTicks   int           `mapstructure:"timeout_ticks"`     // silent ticks before an RPC times out
	RequestAckTick int           `mapstructure:"request_ack_ticks"` // ticks before a server sends NEED_ACK
	MaxNICQueue    time.Duration `mapstructure:"max_nic_queue"`     // NIC backlog bound (max_nic_queue_us)
	PacerThreshold int           `mapstructure:"pacer_threshold"`   // messages with fewer bytes left than this are never paced; 0: all are
	MaxMessage     int           `mapstructure:"max_message"`       // largest message, bytes (above 1,000,000: see LongMessagePeers)
	IncastControl  bool          `mapstructure:"incast_control"`    // limit unscheduled bursts under incast
	// ScheduledDataQueue sends scheduled DATA from the lowest TX queue
	// (the IPv4 priority unchanged), so that a NIC's strict priority
	// between its queues cannot hold one message's queued packets behind
	// the host's other messages (engine Config.ScheduledDataQueue; on by
	// default; docs/cluster.md says why).
	ScheduledDataQueue bool `mapstructure:"scheduled_data_queue"`
	// Variant is the Homa this host speaks: "full" (the kernel module's
	// protocol) or "upstream" (only the upstream Linux subset, as a host
	// running it would: engine Config.Upstream).
	Variant string `mapstructure:"variant"`
	// Checksum fills the Homa checksum of every packet sent, as the full
	// kernel module does; TCP-hijacked packets (peers[].hijack) carry it
	// anyway. VerifyChecksum is which received packets have it checked:
	// "hijacked", "all" or "none".
	Checksum       bool   `mapstructure:"checksum"`
	VerifyChecksum string `mapstructure:"verify_checksum"`
	// MessagePriorityResends makes RESENDs name the message's own
	// priority (and ask for one packet before any has come) instead of
	// kernel Homa's priority 7 and "everything sent so far"
	// (engine Config.MessagePriorityResends).
	MessagePriorityResends bool `mapstructure:"message_priority_resends"`
	// LongMessagePeers are the addresses of the peers known to run
	// homa-dpdk, which take messages longer than kernel Homa's 1,000,000
	// bytes (up to MaxMessage). Every other peer may run kernel Homa,
	// which refuses longer ones: to and from it messages stay at most
	// 1,000,000 bytes (a longer Send or Reply fails, a longer incoming
	// message is dropped). A MaxMessage above 1,000,000 needs at least
	// one; 0.0.0.0/0 names every peer.
	LongMessagePeers []netip.Prefix `mapstructure:"long_message_peers"`

	// BusyTimeoutTicks bounds how long an RPC lives without progress
	// while its peer keeps answering (BUSY): 0 is 100 x timeout_ticks, -1
	// none (kernel Homa's behaviour; engine Config.BusyTimeoutTicks).
	BusyTimeoutTicks int `mapstructure:"busy_timeout_ticks"`

	// GrantLapseTicks is how long an incoming message may hold bytes it
	// was granted without its sender sending them (not all of them, nor
	// half of those it lacked) before it loses its place among the
	// messages granted to and its peer takes turns: 0 is 4 x
	// resend_ticks, -1 never (kernel Homa's behaviour; engine
	// Config.GrantLapseTicks).
	GrantLapseTicks int `mapstructure:"grant_lapse_ticks"`

	// Bounds on what a remote peer can make the engine hold (each refusal
	// is counted in the engine's drops_* metrics).
	MaxGaps              int `mapstructure:"max_gaps"`                 // missing ranges one incoming message may have
	MaxResendsPerRPC     int `mapstructure:"max_resends_per_rpc"`      // RESENDs one resend check sends for one message
	MaxResendBytes       int `mapstructure:"max_resend_bytes"`         // bytes one RPC retransmits for RESENDs per resend_interval
	MaxServerRPCs        int `mapstructure:"max_server_rpcs"`          // server RPCs alive at once
	MaxServerRPCsPerPeer int `mapstructure:"max_server_rpcs_per_peer"` // server RPCs of one client address
	MaxStagingBytes      int `mapstructure:"max_staging_bytes"`        // staging memory for messages not yet committed
	MaxRecvHeapBytes     int `mapstructure:"max_recv_heap_bytes"`      // heap buffers of committed messages not yet delivered
	MaxPeers             int `mapstructure:"max_peers"`                // peers held (idle ones are evicted first)
	PeerIdleTicks        int `mapstructure:"peer_idle_ticks"`          // ticks a peer with no RPCs is kept

	// Rate limits on the ICMP and ICMPv6 port unreachables sent, Linux's
	// (engine.ICMPRate; those held back are counted in
	// icmp_port_unreachable_limited): to one destination one per
	// ICMPRateLimit (0: no limit), ICMPRateLimitBurst at once, the
	// destinations kept in a table of ICMPRateLimitBuckets hashed buckets;
	// to all of them together ICMPMsgsPerSec a second (0: no limit),
	// ICMPMsgsBurst at once. A port's shards share them.
	ICMPRateLimit        time.Duration `mapstructure:"icmp_ratelimit"`
	ICMPRateLimitBurst   int           `mapstructure:"icmp_ratelimit_burst"`
	ICMPRateLimitBuckets int           `mapstructure:"icmp_ratelimit_buckets"`
	ICMPMsgsPerSec       int           `mapstructure:"icmp_msgs_per_sec"`
	ICMPMsgsBurst        int           `mapstructure:"icmp_msgs_burst"`
}

// TakesLongMessages reports whether the peer at ip is one of
// LongMessagePeers: it may be sent, and may send, messages above kernel
// Homa's 1,000,000 bytes.
func (h *ProtocolSpec) TakesLongMessages(ip netip.Addr) bool {
	a := ip.Unmap()
	for _, p := range h.LongMessagePeers {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// PeerSpec says how to speak to the peers in Prefix (the first entry
// whose prefix holds a peer's address applies to it).
type PeerSpec struct {
	Prefix netip.Prefix `mapstructure:"prefix"` // IPv4 prefix, e.g. 10.0.1.0/24
	// Hijack sends to these peers as kernel Homa's TCP-hijacked framing
	// (IP protocol 6, the checksum filled), for a kernel with hijack_tcp
	// set or NICs that only segment and checksum TCP.
	Hijack bool `mapstructure:"hijack"`
	// Variant is the Homa they run: "auto" (""; the full protocol until a
	// peer shows it runs the upstream subset), "full", "upstream", or
	// "homa-dpdk" (the full protocol, and homa-dpdk's DATA extension,
	// the incast allowance in the pad bytes, which goes to no other peer
	// unless it is in protocol.long_message_peers or sends it first).
	Variant string `mapstructure:"variant"`
}

// PeerFor returns the entry of Peers that applies to the peer at ip, or
// the zero PeerSpec (native framing, variant auto) when none does.
func (s *Spec) PeerFor(ip netip.Addr) PeerSpec {
	a := ip.Unmap()
	for _, p := range s.Peers {
		if p.Prefix.Contains(a) {
			return p
		}
	}
	return PeerSpec{}
}

// Neighbour is a static IPv4 → MAC entry (no ARP needed for it).
type Neighbour struct {
	IP  netip.Addr       `mapstructure:"ip"`
	MAC net.HardwareAddr `mapstructure:"mac"`
}

// MetricsSpec configures the Prometheus endpoint.
type MetricsSpec struct {
	Address string `mapstructure:"address"` // host:port to serve /metrics on; "" turns it off
}

// CaptureSpec configures packet capture to pcapng.
type CaptureSpec struct {
	File string `mapstructure:"file"` // "" turns capture off
	Last int    `mapstructure:"last"` // keep only the last N packets; 0 keeps all
	// Snaplen is the bytes kept of each packet (the rest is counted in
	// the record's original length): 128 keeps every Homa header with
	// its Ethernet and IPv4 ones; 65535 keeps whole frames.
	Snaplen int `mapstructure:"snaplen"`
	// MaxBytes bounds a capture file (0: no bound); past it the capture
	// goes on in a new file when Files > 1 (the file renamed FILE.1, the
	// older ones FILE.2 and on, the oldest removed), or stops (counted
	// in homa_capture_dropped_total) when Files is 1.
	MaxBytes Bytes `mapstructure:"max_bytes"`
	Files    int   `mapstructure:"files"` // capture files kept, 1..1000
}

// LogSpec configures zerolog.
type LogSpec struct {
	Format string `mapstructure:"format"` // json or console
	Level  string `mapstructure:"level"`  // debug, info, warn, error
	// DPDKLevel is DPDK's own log level (EAL's --log-level, given before
	// the eal list so that a --log-level there wins): debug, info, notice,
	// warning, error. At warning, DPDK's informational start-up lines and
	// the warnings known to be harmless here are not shown.
	DPDKLevel string `mapstructure:"dpdk_level"`
}

// RuntimeSpec configures the Go runtime; the poller must not be stalled by
// the garbage collector.
type RuntimeSpec struct {
	GOGC       int    `mapstructure:"gogc"`       // GOGC percentage; -1 turns the collector off
	GOMemLimit Bytes  `mapstructure:"gomemlimit"` // soft memory limit, e.g. 512MiB; "" (0) for none
	GOMAXPROCS int    `mapstructure:"gomaxprocs"` // 0 = polling loops + 2, or the CPU count if larger
	Idle       string `mapstructure:"idle"`       // busy or adaptive
	// IdleSpinPasses is how many empty passes an adaptive loop makes
	// before it sleeps; IdleMaxSleepUs bounds its sleep, which is also the
	// longest a packet arriving at an idle loop waits for it.
	IdleSpinPasses int `mapstructure:"idle_spin_passes"`
	IdleMaxSleepUs int `mapstructure:"idle_max_sleep_us"`
}

// FaultSpec injects faults into received packets (for tests; off by default).
type FaultSpec struct {
	Drop      float64 `mapstructure:"drop"`
	Duplicate float64 `mapstructure:"duplicate"`
	Reorder   float64 `mapstructure:"reorder"`
	Seed      int64   `mapstructure:"seed"`
}

// WorkersSpec configures the shared-memory worker interface.
type WorkersSpec struct {
	Enabled bool `mapstructure:"enabled"` // open the control socket(s)
	// Socket is the control socket of the first port's host; other ports
	// have one when ports[].workers_socket names it.
	Socket string `mapstructure:"socket"`
	// SocketGroup is the group of every control socket, a name or a
	// numeric gid ("": the daemon's own): with mode 0660 its members may
	// connect, and the allow-lists decide who attaches.
	SocketGroup string `mapstructure:"socket_group"`
	AllowUIDs   []int  `mapstructure:"allow_uids"` // uids allowed to connect (root always is)
	AllowGIDs   []int  `mapstructure:"allow_gids"` // gids allowed to connect: primary or supplementary
	// MaxSessionsPerUID bounds the sessions one uid (root too) holds at
	// once; each is a region of max_bytes + pool_bytes and more.
	MaxSessionsPerUID int `mapstructure:"max_sessions_per_uid"`
	MaxOutstanding    int `mapstructure:"max_outstanding"` // client RPCs in flight plus unanswered requests, per worker
	MaxBytes          int `mapstructure:"max_bytes"`       // transmit arena bytes per worker: the bytes it can have in flight
	PoolBytes         int `mapstructure:"pool_bytes"`      // receive pool bytes per worker (64 KB pages)
	RingEntries       int `mapstructure:"ring_entries"`    // slots of each submission and completion ring (a power of two)
	// MaxBacklog is the most completions the daemon keeps for one worker
	// whose completion ring is full. At the bound it stops reading the
	// worker's submission ring and drops requests to its ports; a
	// completion still owed past it ends the session.
	MaxBacklog int `mapstructure:"max_backlog"`
	// ZeroCopyMin is the smallest message a worker sends that leaves
	// from its arena without a copy, where the port can send from memory;
	// shorter ones are copied into the frames. 0: every message is copied.
	ZeroCopyMin int `mapstructure:"zero_copy_min"`
	// Linger bounds how long the replies a worker submitted still go out
	// after it closes or dies, until each is acked; then the rest are
	// abandoned (0: none, its replies end with it). The session, its
	// region included, is held that long and counts under
	// MaxSessionsPerUID.
	Linger time.Duration `mapstructure:"linger"`
}

// ARPSpec configures neighbour resolution.
type ARPSpec struct {
	Timeout time.Duration `mapstructure:"timeout"` // wait for a reply before retrying
	Retries int           `mapstructure:"retries"` // requests before giving up
	Aging   time.Duration `mapstructure:"aging"`   // cache entry lifetime
}

// MempoolSpec sizes the mbuf pool of each port.
type MempoolSpec struct {
	Mbufs int `mapstructure:"mbufs"`
	Cache int `mapstructure:"cache"`
	// DataRoom is the bytes of packet each mbuf holds (after DPDK's
	// headroom); 0 sizes it for the port's MTU (DataRoomFor).
	DataRoom int `mapstructure:"data_room"`
}

// FrameOverhead is what a frame adds to its IP packet: the Ethernet
// header and an 802.1Q tag.
const FrameOverhead = wire.FrameOverhead

// DataRoomFor is the data room of a port's mbufs: m.DataRoom if set, else
// its MTU plus FrameOverhead rounded up to a KB, at least 2 KB (so 2 KB at
// MTU 1500, 9 KB at 9000). Every frame of the port fits in one mbuf.
func (m MempoolSpec) DataRoomFor(mtu int) int {
	if m.DataRoom > 0 {
		return m.DataRoom
	}
	return wire.BufferRoom(mtu)
}

// Normalize folds the top-level lcores into the ports, so that each
// port's shards are in one field, ports[i].lcores: a port without lcores
// of its own gets [lcores[i]], and the top-level list is emptied. A port
// left without a polling lcore (the top-level list shorter than the
// ports) is an error that says how to give it one. Load calls it after
// Validate, so that Validate's messages name the keys the file used;
// calling it again changes nothing.
func (s *Spec) Normalize() error {
	var missing []string
	for i := range s.Ports {
		ps := &s.Ports[i]
		switch {
		case len(ps.Lcores) > 0:
		case i < len(s.Lcores):
			ps.Lcores, ps.lcoresKey = []uint{s.Lcores[i]}, fmt.Sprintf("lcores[%d]", i)
		default:
			missing = append(missing, fmt.Sprintf("ports[%d]", i))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lcores: %d lcore(s) for %d ports, and %s no lcores of its own: give every port a polling lcore, "+
			"in lcores (lcores[i] polls ports[i]) or in ports[i].lcores", len(s.Lcores), len(s.Ports), strings.Join(missing, ", ")+" "+hasHave(len(missing)))
	}
	s.Lcores = nil
	return nil
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// LcoresKey is the config key that gave port i its lcores, for messages:
// "lcores[i]" where the file used the top-level shorthand, else
// "ports[i].lcores".
func (s *Spec) LcoresKey(i int) string {
	if k := s.Ports[i].lcoresKey; k != "" {
		return k
	}
	return fmt.Sprintf("ports[%d].lcores", i)
}

// Defaults is the Spec of the defaults alone, no port: where a program
// builds its Spec in Go (the demo) it starts here, adds its ports and
// settings, and hands the result to Complete.
func Defaults() Spec {
	v := viper.New()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	var s Spec
	if err := v.UnmarshalExact(&s, viper.DecodeHook(decodeHook)); err != nil {
		panic("config: the defaults do not decode: " + err.Error())
	}
	return s
}

// Complete makes a Spec built in Go (from Defaults) what Load makes of a
// file: the HOMA_* environment set over its keys (the environment wins
// over a file's values, and so over these), the ports' defaults filled
// in, validated, and normalised (Normalize).
func Complete(base Spec) (*Spec, error) {
	s := base
	s.Ports = slices.Clone(base.Ports)
	if err := checkEnv(os.Environ()); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	env := map[string]any{}
	for k := range defaults {
		val, ok := os.LookupEnv(envName(k))
		if !ok {
			continue
		}
		m, path := env, strings.Split(k, ".")
		for _, sec := range path[:len(path)-1] {
			if _, ok := m[sec].(map[string]any); !ok {
				m[sec] = map[string]any{}
			}
			m = m[sec].(map[string]any)
		}
		m[path[len(path)-1]] = val
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &s, DecodeHook: decodeHook, WeaklyTypedInput: true, ErrorUnused: true})
	if err == nil {
		err = dec.Decode(env)
	}
	if err != nil {
		return nil, decodeError("", err)
	}
	for i := range s.Ports {
		s.Ports[i].applyDefaults()
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := s.Normalize(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &s, nil
}
