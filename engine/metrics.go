package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// numTypes is the number of Homa packet types.
const numTypes = int(wire.TypeAck-wire.TypeData) + 1

// DropCause says why the engine discarded a received frame (or could not
// send one). The first wire.NumDropReasons values are wire.DropReason
// (format errors found by wire.ParseFrame); the rest are the engine's.
type DropCause uint8

// Engine drop causes, after the wire's.
const (
	// DropNotForUs: the IPv4 destination is not this endpoint's address.
	DropNotForUs DropCause = DropCause(wire.NumDropReasons) + iota
	// DropDuplicate: DATA whose bytes were all received already.
	DropDuplicate
	// DropOverlap: DATA that covers received and missing bytes at once
	// (kernel Homa drops those too; the sender resends the missing range).
	DropOverlap
	// DropPastEnd: DATA with bytes past the end of its message.
	DropPastEnd
	// DropBadLength: a message length of 0, above MaxMessageLength (or
	// above wire.MaxMessageLength from a peer Config.KernelPeer names),
	// or different from the length in earlier packets of the message.
	DropBadLength
	// DropNoPort: DATA that would start a server RPC on an unbound port
	// (answered with ICMP port unreachable).
	DropNoPort
	// DropUnknownRPC: a packet for an RPC this endpoint has no state for.
	DropUnknownRPC
	// DropStale: request DATA for a server RPC that has its whole request.
	DropStale
	// DropNoBuffer: the Transmitter lent no buffer for a control packet
	// that is not kept (RESEND, BUSY, ACK, NEED_ACK, CUTOFFS, ICMP); it
	// was not sent (timers recover it). DATA and GRANTs are kept instead
	// (Metrics.TxDeferred).
	DropNoBuffer
	// DropBadICMP: an ICMP message the engine could not use.
	DropBadICMP
	// DropNoRecvSpace: the port's owner had no receive buffer for a
	// message being committed (PortHooks.RecvBuf); a request is dropped
	// (its client retries), a response waits if it can fit
	// (ResponsesWaitingForBuffer) or else ends its RPC with
	// ErrNoBufferSpace.
	DropNoRecvSpace
	// DropTxUnresolved: a packet for a peer whose link address is not
	// resolved (its Neighbour not LinkReachable, or no route) was not
	// sent: a control packet (GRANT, RESEND, BUSY, RPC_UNKNOWN, ACK,
	// NEED_ACK, CUTOFFS, ICMP) or the retransmission a RESEND asked for.
	// Timers recover; DATA waits instead (RPCsWaitingResolution).
	DropTxUnresolved
	// DropTooManyGaps: DATA that would open a gap in its message beyond
	// Config.MaxGaps; the sender sends it again when asked.
	DropTooManyGaps
	// DropServerRPCLimit: request DATA that would start a server RPC
	// beyond Config.MaxServerRPCs; DropPeerRPCLimit: beyond
	// MaxServerRPCsPerPeer for its client's address. Unanswered; the
	// client retries.
	DropServerRPCLimit
	DropPeerRPCLimit
	// DropStagingFull: DATA of a message not yet committed that found no
	// staging chunk left (Config.MaxStagingBytes); DropPastStaging: DATA
	// of such a message past the bytes it may stage (past twice the
	// unscheduled bytes and its granted offset). The sender sends them
	// again when asked.
	DropStagingFull
	DropPastStaging
	// DropRecvHeapFull: a message of a port without RecvBuf whose commit
	// would pass Config.MaxRecvHeapBytes; it ends as DropNoRecvSpace does.
	DropRecvHeapFull
	// DropPeerTableFull: a frame from a new address while the peer table
	// holds Config.MaxPeers peers, none of them idle.
	DropPeerTableFull
	// DropICMPSpoofed: a port unreachable that quotes no packet we could
	// have sent: its source is not the address the quoted packet went
	// to, or the quote's source is not ours, or its framing (protocol
	// 146, or 6 TCP-hijacked) not the one we send that peer (icmp.go).
	// DropICMPNoRPC: one that could be ours but names no live client RPC
	// (its sender id, or at port level its client and server ports): a
	// late copy for an RPC already failed, or a guess. DropICMPIgnoredLive:
	// one about client RPCs that heard from that server within
	// ResendTicks + ResendInterval ticks, none of which it failed.
	DropICMPSpoofed
	DropICMPNoRPC
	DropICMPIgnoredLive
	// DropWrongShard: a packet for an RPC another shard of a sharded port
	// owns (Config.Shard): the receive side's steering sent it astray.
	DropWrongShard

	// NumDropCauses sizes per-cause arrays.
	NumDropCauses
)

var engineDropNames = [...]string{
	"not_for_us", "duplicate_data", "overlap_data", "data_past_end", "bad_length",
	"no_port", "unknown_rpc", "stale_data", "tx_no_buffer", "bad_icmp",
	"rx_no_space", "tx_unresolved", "too_many_gaps", "server_rpc_limit", "peer_rpc_limit",
	"rx_staging_full", "rx_past_staging", "rx_heap_full", "peer_table_full",
	"icmp_spoofed", "icmp_no_rpc", "icmp_ignored_live", "wrong_shard",
}

// String returns the cause as a snake_case metric label.
func (c DropCause) String() string {
	if c < DropCause(wire.NumDropReasons) {
		return wire.DropReason(c).String()
	}
	if c < NumDropCauses {
		return engineDropNames[c-DropNotForUs]
	}
	return "unknown"
}

// Metrics are the endpoint's counters. Names follow kernel Homa's
// /proc/net/homa_metrics where the concept matches. Written only by the
// endpoint's goroutine; read them from it (Endpoint.Metrics copies).
type Metrics struct {
	PacketsSent [numTypes]uint64 // packets_sent_<TYPE>, by type − DATA
	PacketsRcvd [numTypes]uint64 // packets_rcvd_<TYPE>, by type − DATA

	RequestsReceived  uint64 // requests_received: complete requests delivered
	ResponsesReceived uint64 // responses_received: complete responses delivered
	ResentPackets     uint64 // resent_packets: DATA retransmitted for a RESEND
	RPCTimeouts       uint64 // rpc_timeouts: client RPCs failed with ErrTimeout
	ServerRPCDiscards uint64 // server_rpc_discards: server RPCs dropped (timeout, RPC_UNKNOWN)
	UnknownRPCs       uint64 // unknown_rpcs: packets for RPCs with no state
	RPCRestarts       uint64 // client_rpc_restarts: requests resent after RPC_UNKNOWN
	// RPCRestartsLimited counts RPC_UNKNOWNs a client RPC did not
	// restart for, having restarted less than ResendInterval ticks before
	// (client_rpc_restarts_limited); RPCRestartsExhausted counts client
	// RPCs failed with ErrTimeout at an RPC_UNKNOWN after MaxRestarts
	// restarts (client_rpc_restarts_exhausted; in RPCTimeouts too).
	RPCRestartsLimited   uint64
	RPCRestartsExhausted uint64
	// BusyTimeouts counts RPCs ended after Config.BusyTimeoutTicks
	// without progress while their peer kept answering (BUSY): client
	// RPCs failed with ErrBusyTimeout (in RPCTimeouts too), server RPCs
	// dropped (in ServerRPCDiscards too) (busy_timeouts).
	BusyTimeouts uint64
	// GrantsLapsed counts incoming messages that lapsed: the bytes they
	// were granted Config.GrantLapseTicks before had not all arrived, so
	// they lost their place among the messages granted to, and their
	// granted-but-unreceived bytes stopped counting towards MaxIncoming,
	// until those bytes came (grants_lapsed).
	GrantsLapsed uint64
	// GrantTurnWaits counts incoming messages put out of the grants to
	// wait for their turn: their peer, one of whose messages lapsed, has
	// one message in the grants at a time (grant_turn_waits).
	GrantTurnWaits uint64
	// StaleUnknowns counts RPC_UNKNOWNs ignored by a client RPC whose
	// response was arriving: they answered an older packet
	// (client_rpc_stale_unknowns).
	StaleUnknowns     uint64
	PeerNewEntries    uint64 // peer_new_entries
	PeersEvicted      uint64 // peers_evicted: idle peers dropped, aged out or to make room
	ThrottleListAdds  uint64 // throttle_list_adds: messages deferred by the pacer
	GrantKeepalives   uint64 // grant_keepalives: GRANTs repeating an offset to a silent sender
	AcksReceived      uint64 // acks_received: server RPCs freed by an ack
	AcksForwarded     uint64 // acks_forwarded: acks for another shard's RPCs handed to it (Config.Shard)
	ICMPPortUnreach   uint64 // icmp_port_unreachable_sent
	ICMPReceived      uint64 // icmp_port_unreachable_rcvd: believed or not (drops icmp_*: not)
	TimerTicksSkipped uint64 // timer_ticks_skipped: ticks not run because Run came late
	ZeroCopyPackets   uint64 // zero_copy_data_packets: DATA sent from the message's memory (DataSender)
	// DataBytesZeroCopy and DataBytesCopied are the payload bytes of
	// DATA packets (retransmissions included) sent from the message's
	// memory and copied into the frame (data_bytes_zero_copy,
	// data_bytes_copied); ZeroCopyFallbacks counts packets of a message
	// given a PayloadRef that were copied all the same, because the
	// DataSender refused them (no buffer for the chain)
	// (zero_copy_fallbacks).
	DataBytesZeroCopy, DataBytesCopied uint64
	ZeroCopyFallbacks                  uint64
	// RPCsWaitingResolution counts the times an RPC's packets had to
	// wait for its peer's link address (rpcs_waiting_resolution;
	// Endpoint.NumWaitingResolution is how many wait now).
	RPCsWaitingResolution uint64
	// ClientRPCsUnresolved counts client RPCs that failed with
	// ErrPeerUnknown after they started: their peer's address failed to
	// resolve while they waited (client_rpcs_unresolved).
	ClientRPCsUnresolved uint64
	// ServerResponsesUnresolved counts responses discarded because the
	// client's address has no route or failed to resolve; their server
	// RPCs ended (server_responses_unresolved).
	ServerResponsesUnresolved uint64
	// TxDeferred counts DATA packets and GRANTs the Transmitter lent no
	// buffer for: kept (the DATA queued, the GRANT owed) and sent on a
	// later pass, nothing lost (tx_deferred).
	TxDeferred uint64
	// ResendsDeferred counts missing ranges a resend check did not ask
	// for because the message had Config.MaxResendsPerRPC RESENDs out in
	// that check already; a later check asks (resends_deferred).
	ResendsDeferred uint64
	// ResendsLimited counts RESENDs of which a part (or all) was not
	// retransmitted because the RPC had retransmitted MaxResendBytes in
	// the current ResendInterval (resends_limited).
	ResendsLimited uint64
	// ResendsBusy counts RESENDs answered BUSY instead of with data: the
	// bytes asked for were not sent yet, or (ResendsQueued, a part of
	// it) a DATA frame of the message still waited in the host's
	// transmit queues (TxProgress) (resends_busy, resends_queued).
	ResendsBusy, ResendsQueued uint64
	// ResentBytes counts the message bytes of ResentPackets
	// (resent_bytes).
	ResentBytes uint64
	// RequestsEvicted counts incoming requests silent for ResendTicks
	// ended to make room for a new request (at MaxServerRPCs) or for
	// staging (MaxStagingBytes spent) (requests_evicted).
	RequestsEvicted uint64
	// CopiesHandedOff counts the receive copies the Copier took
	// (copier.go); CopiesRefused those it could not (its queue full), which
	// the engine made itself.
	CopiesHandedOff, CopiesRefused uint64
	// RecvBufsHeldForCopier counts receive buffers of messages that
	// ended undelivered while copies into them were still pending: each
	// went back to its owner only once the copier was past them
	// (copier.go) (recv_bufs_held_for_copier).
	RecvBufsHeldForCopier uint64
	// RecvEvictionsStale and RecvEvictionsShare count committed requests
	// still arriving ended to make room in their receive memory (a
	// worker's pool, or MaxRecvHeapBytes) for a message that found none:
	// silent for ResendTicks, or of a peer holding more of it than the
	// message's peer would (recvpool.go) (recv_evictions_stale,
	// recv_evictions_share).
	RecvEvictionsStale uint64
	RecvEvictionsShare uint64
	// ResponsesWaitingForBuffer counts responses that found no receive
	// buffer but can fit once memory comes free (PortHooks.RecvBufFits,
	// or within MaxRecvHeapBytes): the packet was dropped and the RPC
	// asks for it again (responses_waiting_for_buffer).
	ResponsesWaitingForBuffer uint64
	// ClosedPortResends counts RESENDs for an RPC we have no state for
	// to a server port no port is bound to (its server closed), answered
	// ICMP port unreachable instead of RPC_UNKNOWN (closed_port_resends;
	// in icmp_port_unreachable_sent too).
	ClosedPortResends uint64
	// UpstreamPeersDetected counts peers found to run the upstream
	// subset under VariantAuto, by a packet for one of our requests to
	// them (a 36-byte RESEND, a response with incoming 0)
	// (upstream_peers_detected); UpstreamPeersReverted those taken for
	// the full protocol again the same way (a GRANT, a RESEND naming a
	// priority, a response with incoming) (upstream_peers_reverted).
	UpstreamPeersDetected uint64
	UpstreamPeersReverted uint64
	// VariantMismatches counts RPCs whose two ends disagree on the
	// variant, so that a message needing grants never gets them: a
	// 36-byte RESEND for an RPC we do not speak the subset on, or a
	// message taken whole from a sender of the full protocol timed out
	// (variant_mismatches). Their BUSYs and RESENDs are then no progress:
	// the RPC times out (variant.go).
	VariantMismatches uint64
	// HomaDPDKPeersDetected counts VariantAuto peers found to run
	// homa-dpdk by the allowance in a response to one of our requests
	// (dpdk_peers_detected); AllowancesClamped allowances
	// advertised below the least we believe, raised to it
	// (allowances_clamped; peer.go's allowanceFloor).
	HomaDPDKPeersDetected uint64
	AllowancesClamped     uint64
	// ICMPLiveRPCsSpared counts client RPCs a port unreachable named
	// (by id, or at port level) and did not fail because they had heard
	// from the server within ResendTicks + ResendInterval ticks
	// (icmp_live_rpcs_spared).
	ICMPLiveRPCsSpared uint64

	// ICMPLimited counts port unreachables not sent because a rate limit
	// held them back (icmplimit.go): the destination's, or (ICMPLimitedAll,
	// a part of it) the one over all destinations
	// (icmp_port_unreachable_limited, icmp_port_unreachable_limited_all).
	ICMPLimited, ICMPLimitedAll uint64

	Drops [NumDropCauses]uint64 // drops_<cause>

	// RoundTrips: client RPCs completed, by the time from the
	// application's Send to the response's last byte, engine clock (ns;
	// RoundTripBoundsNs). MessageSizes: messages received whole, requests
	// and responses, by length (bytes; MessageSizeBounds).
	RoundTrips   Histogram
	MessageSizes Histogram
}

// RoundTripBoundsNs are the upper bounds of Metrics.RoundTrips' buckets,
// 1 µs to 1 s; MessageSizeBounds those of MessageSizes, 100 B to 64 MiB.
var (
	RoundTripBoundsNs = [histBuckets - 1]int64{1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 1e9}
	MessageSizeBounds = [histBuckets - 1]int64{100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 8_000_000, 32_000_000, 64 << 20}
)

// histBuckets is the buckets of a Histogram, the last one past its
// largest bound.
const histBuckets = 18

// Histogram counts values in fixed buckets (RoundTripBoundsNs for
// Metrics.RoundTrips, MessageSizeBounds for MessageSizes): Counts[i]
// those at most bound i and above bound i-1, the last those above every
// bound; Sum adds them all.
type Histogram struct {
	Counts [histBuckets]uint64
	Sum    int64
}

func (h *Histogram) record(bounds *[histBuckets - 1]int64, v int64) {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	h.Counts[i]++
	h.Sum += v
}

// Each calls fn for every counter with its metric name.
func (m *Metrics) Each(fn func(name string, value uint64)) {
	for i, v := range m.PacketsSent {
		fn("packets_sent_"+(wire.TypeData+wire.PacketType(i)).String(), v)
	}
	for i, v := range m.PacketsRcvd {
		fn("packets_rcvd_"+(wire.TypeData+wire.PacketType(i)).String(), v)
	}
	fn("requests_received", m.RequestsReceived)
	fn("responses_received", m.ResponsesReceived)
	fn("resent_packets", m.ResentPackets)
	fn("rpc_timeouts", m.RPCTimeouts)
	fn("server_rpc_discards", m.ServerRPCDiscards)
	fn("unknown_rpcs", m.UnknownRPCs)
	fn("client_rpc_restarts", m.RPCRestarts)
	fn("client_rpc_restarts_limited", m.RPCRestartsLimited)
	fn("client_rpc_restarts_exhausted", m.RPCRestartsExhausted)
	fn("client_rpc_stale_unknowns", m.StaleUnknowns)
	fn("peer_new_entries", m.PeerNewEntries)
	fn("peers_evicted", m.PeersEvicted)
	fn("throttle_list_adds", m.ThrottleListAdds)
	fn("grant_keepalives", m.GrantKeepalives)
	fn("acks_received", m.AcksReceived)
	fn("acks_forwarded", m.AcksForwarded)
	fn("icmp_port_unreachable_sent", m.ICMPPortUnreach)
	fn("icmp_port_unreachable_rcvd", m.ICMPReceived)
	fn("icmp_port_unreachable_limited", m.ICMPLimited)
	fn("icmp_port_unreachable_limited_all", m.ICMPLimitedAll)
	fn("icmp_live_rpcs_spared", m.ICMPLiveRPCsSpared)
	fn("closed_port_resends", m.ClosedPortResends)
	fn("busy_timeouts", m.BusyTimeouts)
	fn("grants_lapsed", m.GrantsLapsed)
	fn("grant_turn_waits", m.GrantTurnWaits)
	fn("timer_ticks_skipped", m.TimerTicksSkipped)
	fn("zero_copy_data_packets", m.ZeroCopyPackets)
	fn("data_bytes_zero_copy", m.DataBytesZeroCopy)
	fn("data_bytes_copied", m.DataBytesCopied)
	fn("zero_copy_fallbacks", m.ZeroCopyFallbacks)
	fn("tx_deferred", m.TxDeferred)
	fn("rpcs_waiting_resolution", m.RPCsWaitingResolution)
	fn("client_rpcs_unresolved", m.ClientRPCsUnresolved)
	fn("server_responses_unresolved", m.ServerResponsesUnresolved)
	fn("resends_deferred", m.ResendsDeferred)
	fn("resends_limited", m.ResendsLimited)
	fn("resends_busy", m.ResendsBusy)
	fn("resends_queued", m.ResendsQueued)
	fn("resent_bytes", m.ResentBytes)
	fn("requests_evicted", m.RequestsEvicted)
	fn("copies_handed_off", m.CopiesHandedOff)
	fn("copies_refused", m.CopiesRefused)
	fn("recv_bufs_held_for_copier", m.RecvBufsHeldForCopier)
	fn("recv_evictions_stale", m.RecvEvictionsStale)
	fn("recv_evictions_share", m.RecvEvictionsShare)
	fn("responses_waiting_for_buffer", m.ResponsesWaitingForBuffer)
	fn("upstream_peers_detected", m.UpstreamPeersDetected)
	fn("upstream_peers_reverted", m.UpstreamPeersReverted)
	fn("variant_mismatches", m.VariantMismatches)
	fn("dpdk_peers_detected", m.HomaDPDKPeersDetected)
	fn("allowances_clamped", m.AllowancesClamped)
	for c, v := range m.Drops {
		if c != 0 {
			fn("drops_"+DropCause(c).String(), v)
		}
	}
}

func (m *Metrics) drop(c DropCause) { m.Drops[c]++ }

// CounterHelp says what each of Each's counters other than packets_*
// and drops_* counts, for the metrics endpoint's help text.
var CounterHelp = map[string]string{
	"requests_received":             "Complete requests delivered to a server port.",
	"responses_received":            "Complete responses delivered to a client.",
	"resent_packets":                "DATA packets retransmitted because a RESEND asked for them.",
	"rpc_timeouts":                  "Client RPCs failed with a timeout (silence for timeout_ticks).",
	"server_rpc_discards":           "Server RPCs dropped: silent too long, or their client answered RPC_UNKNOWN.",
	"unknown_rpcs":                  "Packets for an RPC this endpoint has no state for.",
	"client_rpc_restarts":           "Requests sent again from the start after an RPC_UNKNOWN.",
	"client_rpc_restarts_limited":   "RPC_UNKNOWNs a client RPC did not restart for: it had restarted less than resend_interval ticks before.",
	"client_rpc_restarts_exhausted": "Client RPCs failed at an RPC_UNKNOWN after max_restarts restarts.",
	"client_rpc_stale_unknowns":     "RPC_UNKNOWNs ignored by a client RPC whose response was arriving (they answered an older packet).",
	"peer_new_entries":              "Peers entered in the peer table.",
	"peers_evicted":                 "Idle peers dropped from the peer table: aged out, or to make room.",
	"throttle_list_adds":            "Messages the pacer deferred.",
	"grant_keepalives":              "GRANTs repeating an offset to keep a silent sender from timing out.",
	"acks_received":                 "Server RPCs freed by an ACK from their client.",
	"acks_forwarded":                "Acks for RPCs another shard of the port owns, handed to that shard.",
	"icmp_port_unreachable_sent":    "ICMP port unreachable sent for DATA to an unbound port, or a RESEND for an RPC of a closed server port (those the rate limits held back are in icmp_port_unreachable_limited).",
	"icmp_port_unreachable_rcvd":    "ICMP and ICMPv6 port unreachables received, believed or not (those not believed are in drops: icmp_spoofed, icmp_no_rpc, icmp_ignored_live).",
	"icmp_live_rpcs_spared":         "Client RPCs a port unreachable named but did not fail: they had heard from the server within resend_ticks + resend_interval ticks.",
	"closed_port_resends":           "RESENDs for an RPC this endpoint no longer has, to a server port nobody binds (its server closed): answered ICMP port unreachable (unless a rate limit holds it back), not RPC_UNKNOWN.",
	"busy_timeouts":                 "RPCs ended after busy_timeout_ticks without progress while their peer kept answering (BUSY, repeated packets): client RPCs failed with a timeout, server RPCs dropped.",
	"grants_lapsed":                 "Incoming messages whose sender had not sent the bytes granted grant_lapse_ticks before: they lost their place among the messages granted to, and their granted bytes stopped counting towards max_incoming, until those bytes came.",
	"grant_turn_waits":              "Incoming messages put out of the grants to wait for their turn: their peer let a message's grants lapse, and has one message granted to at a time for timeout_ticks.",
	"timer_ticks_skipped":           "Timer ticks not run because the loop called late.",
	"zero_copy_data_packets":        "DATA packets sent from the message's own memory, without a copy.",
	"data_bytes_zero_copy":          "Payload bytes of DATA packets (retransmissions included) sent from the message's own memory, without a copy.",
	"data_bytes_copied":             "Payload bytes of DATA packets (retransmissions included) copied into the frame on the send side.",
	"zero_copy_fallbacks":           "DATA packets of a message sent from its own memory that were copied all the same: the transmit side had no buffer for the chain.",
	"tx_deferred":                   "DATA packets and GRANTs the transmit side lent no buffer for: kept and sent on a later pass.",
	"rpcs_waiting_resolution":       "Times an RPC's packets had to wait for the peer's link address.",
	"client_rpcs_unresolved":        "Client RPCs failed because the peer's address did not resolve.",
	"server_responses_unresolved":   "Responses discarded because the client's address has no route or did not resolve.",
	"resends_deferred":              "Missing ranges a resend check left for a later one (max_resends_per_rpc).",
	"resends_limited":               "RESENDs not wholly answered because the RPC had retransmitted max_resend_bytes in the interval.",
	"resends_busy":                  "RESENDs answered BUSY: the bytes were not sent yet, or still waited in the host's transmit queues.",
	"resends_queued":                "RESENDs answered BUSY because a DATA frame of the message had not left the host: it waited in the transmit queues, or the device still held it.",
	"resent_bytes":                  "Message bytes of the DATA packets retransmitted for RESENDs.",
	"requests_evicted":              "Incoming requests silent for resend_ticks ended to make room (max_server_rpcs or staging).",
	"copies_handed_off":             "Receive copies of message bytes done by the port's copier thread instead of the polling loop (ports[].copier_lcore).",
	"copies_refused":                "Receive copies the copier could not take (its queue full), made by the polling loop.",
	"recv_bufs_held_for_copier":     "Receive buffers of messages ended undelivered that went back to their owner only once the copier was past the copies into them.",
	"recv_evictions_stale":          "Requests still arriving, silent for resend_ticks, ended to give their receive buffer (a worker's pool pages, or heap) to a message that found none.",
	"recv_evictions_share":          "Requests still arriving ended to give their receive buffer to a message that found none: their peer held more of that memory than the message's peer would.",
	"responses_waiting_for_buffer":  "Responses refused a receive buffer that can fit once memory comes free: the packet was dropped, the RPC asks for it again.",
	"upstream_peers_detected":       "Peers found to run the upstream Linux subset by a packet for one of our requests to them (a 36-byte RESEND, a response with incoming 0): sent whole requests, no GRANT or CUTOFFS.",
	"upstream_peers_reverted":       "Peers taken for the upstream subset found to run the full protocol by a packet for one of our requests to them (a GRANT, a RESEND naming a priority, a response with incoming).",
	"variant_mismatches":            "RPCs whose two ends disagree on the Homa variant (a 36-byte RESEND for an RPC not of the subset, or a message taken whole from a full-protocol sender timed out): a message needing grants never gets them; the RPC times out.",
	"dpdk_peers_detected":           "Peers found to run homa-dpdk by the incast allowance in a response to one of our requests: our DATA to them carries ours.",
	"allowances_clamped":            "Incast allowances a peer advertised below the least believed (our incast min_allowance), raised to it.",

	"icmp_port_unreachable_limited":     "ICMP port unreachables not sent, held back by a rate limit: the destination's (protocol.icmp_ratelimit, icmp_ratelimit_burst) or the one over all destinations (icmp_msgs_per_sec, icmp_msgs_burst).",
	"icmp_port_unreachable_limited_all": "ICMP port unreachables held back by the limit over all destinations (protocol.icmp_msgs_per_sec, icmp_msgs_burst): a part of icmp_port_unreachable_limited.",
}
