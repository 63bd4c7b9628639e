// Package engine is the Homa protocol: RPCs, their incoming and outgoing
// messages, peers, grants, timers, acks and metrics, wire-compatible with
// the Linux kernel's Homa (package wire; docs/wire.md has the format).
//
// It is a deterministic state machine
// (docs/decisions.md#2-the-engine-is-a-deterministic-state-machine). An
// Endpoint is one Homa host with an IPv4 address, an IPv6 address or both
// (Config.IP, Config.IP6; peers are reached over either family); it is
// driven by its inputs — received frames, time passing (Run: timers and
// the pacer), the host's neighbour table, and the Port methods (an
// application sends, replies, aborts) — reads the time only from
// Config.Clock (docs/decisions.md#7-time-is-explicit), and writes every
// packet (Ethernet, IPv4 or IPv6, Homa header and payload) into a buffer
// lent by its Transmitter, so the DPDK side can lend mbuf memory. Nothing
// in the per-packet path allocates, but for an incoming message's buffer
// once per message (on the heap, for a port without PortHooks.RecvBuf).
//
// How a host drives it, from one polling loop:
//
//   - Per RX burst: BeginBatch(now); for each frame, wire.ParseLink once,
//     dispatch on Link.Type (ARP and neighbour discovery to the host's
//     neighbour tables, echo requests to the host's stack) and hand IPv4
//     and IPv6 frames to ReceiveLink (Homa, and ICMP and ICMPv6 errors,
//     which it routes to ReceiveICMP); then EndBatch. Grants are decided
//     once per burst, not once per DATA packet. Receive takes a whole
//     frame, for tests and memnet.
//   - Run whenever NextDeadline has passed (or on every pass).
//   - From the neighbour table: Config.Resolve returns a *Neighbour the
//     table owns and updates in place; the engine reads its State and MAC
//     for every frame, so a changed MAC takes effect at once and sends to
//     an entry still resolving wait. NeighbourReady when an entry becomes
//     reachable, NeighbourFailed when it fails (see Neighbour).
//   - Zero copy: a Transmitter that is also a DataSender sends the
//     payload of messages given with SendRef or ReplyRef (a PayloadRef the
//     transmit side understands) from their own memory.
//
// Where to start reading: config.go (Config: every knob and bound, with
// its default), endpoint.go (New, ReceiveLink's dispatch, Run), then port.go (the application's Port API) and rpc.go (the RPC life cycle),
// outgoing.go (segmentation, pacing, GRANT and RESEND handling),
// incoming.go (reassembly, server RPC creation, acks, RPC_UNKNOWN),
// recvbuf.go (memory for incoming messages: staging, commit),
// grant.go (receiver side grants and retransmission requests), timer.go,
// peer.go, neighbour.go (link addresses: waiting for resolution), icmp.go
// (and icmplimit.go: the port unreachables sent) and metrics.go. Scheduling policy (SRPT grants, the sender queue, the
// pacer, cutoffs, incast control) lives in package sched.
//
// The life of an RPC:
//
//	client Port.Send ─DATA─▶ server: first DATA creates the RPC (stateIncoming),
//	  unscheduled bytes, then GRANTs from the server's SRPT scheduler
//	server: request complete ─▶ Port.Receive (stateInService) ─▶ Port.Reply
//	  ─DATA─▶ client: response complete ─▶ Port.Receive (or Wait if private);
//	  the client RPC ends and an ack for it is buffered for the server
//	server: response sent (stateOutgoing) until an ack arrives, piggybacked
//	  on DATA or in an ACK packet; NEED_ACK after RequestAckTicks asks for one
//
// Delivery semantics, as in kernel Homa: a request executes at most once
// while its server RPC lives — a retransmitted request packet finds the
// RPC and is dropped (DropStale), and after the client's ack the server
// remembers the last 64 ids it freed on an ack per client address, so a
// late duplicate does not start it again. Beyond that nothing is promised: a server
// that crashes and restarts (or drops the RPC, or forgets the peer after
// PeerIdleTicks idle) has no record of the request, and the client,
// told RPC_UNKNOWN, sends it again, so a request can execute twice. A
// client RPC that fails with ErrTimeout may or may not have executed.
// Applications that need exactly-once make their requests idempotent.
//
// Nothing a peer sends makes the endpoint hold state without a bound
// (each bound a Config field, each refusal counted in Metrics): the gaps
// of a message (MaxGaps), the RESENDs one check sends (MaxResendsPerRPC),
// the server RPCs (MaxServerRPCs, MaxServerRPCsPerPeer), the memory of
// incoming messages, committed as their bytes arrive and never from the
// length claimed (MaxStagingBytes, MaxRecvHeapBytes; recvbuf.go), the
// peers (MaxPeers, PeerIdleTicks), the bytes a RESEND makes us
// retransmit (MaxResendBytes), the restarts RPC_UNKNOWN makes
// (MaxRestarts) and how long an RPC lives without progress while its peer
// answers BUSY (BusyTimeoutTicks). Nor does it keep its grants without
// sending what they allow: a message that holds granted bytes for
// GrantLapseTicks leaves the grants until they come, and its peer takes
// turns, one message granted to at a time (lapse.go). What it makes the
// endpoint send unasked is bounded too: the port unreachables (ICMPRate).
// Why: docs/decisions.md#6-nothing-is-lost-silently-nothing-grows-without-a-bound.
//
// Silence is handled by a timer every TickNs: the side expecting bytes
// sends RESEND after ResendTicks and every ResendInterval; the peer
// answers with data, BUSY (working, nothing to send) or RPC_UNKNOWN (no
// state: a client restarts its request; a server drops its RPC). A RESEND
// retransmits only bytes already sent (as kernel Homa's homa_resend_pkt
// does), at most MaxResendBytes per RPC per ResendInterval; it is never
// a grant: a receiver that hears BUSY while bytes it granted have not
// come repeats its GRANT. After TimeoutTicks of silence a client
// RPC fails with ErrTimeout, as does one whose packets waited
// ResolveTimeoutTicks for the peer's link address, or that restarted
// MaxRestarts times; RPC_UNKNOWN is not hearing from the peer. BUSY is:
// a server that says it is working on a request keeps its client waiting,
// but not past BusyTimeoutTicks without progress (no new response bytes,
// no more of the request granted), after which the client RPC fails with
// ErrBusyTimeout; kernel Homa waits as long as the server says so.
//
// Ports, RPCs and peers belong to one goroutine: no method is safe for
// concurrent use.
package engine
