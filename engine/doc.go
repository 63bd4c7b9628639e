// Package engine is the Homa protocol: RPCs, their incoming and outgoing
// messages, peers, grants, timers, acks and metrics, wire-compatible with
// the Linux kernel's Homa (see ../../shared/WIRE.md and package wire).
//
// It is a deterministic state machine. An Endpoint is one Homa host with
// one IPv4 address; it is driven by three inputs — Receive (a frame from
// the network), Run (time passed: timers and the pacer) and the Port
// methods (an application sends, replies, aborts) — reads the time only
// from Config.Clock, and writes every packet (Ethernet, IPv4, Homa header
// and payload) into a buffer lent by its Transmitter, so the DPDK side can
// lend mbuf memory. Nothing in the per-packet path allocates. A polling
// loop hands a received burst to Receive between BeginBatch and EndBatch:
// grants are then decided once per burst, not once per DATA packet.
//
// Where to start reading: endpoint.go (Config, New, Receive's dispatch,
// Run), then rpc.go (the RPC life cycle and the application's Port API),
// outgoing.go (segmentation, pacing, GRANT and RESEND handling),
// incoming.go (reassembly, server RPC creation, acks, RPC_UNKNOWN),
// grant.go (receiver side grants and retransmission requests), timer.go,
// peer.go, icmp.go and metrics.go. Scheduling policy (SRPT grants, the
// sender queue, the pacer, cutoffs, incast control) lives in package sched.
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
// A request executes at most once while its server RPC lives: a
// retransmitted request packet finds the RPC and is dropped (DropStale).
//
// Silence is handled by a timer every TickNs: the side expecting bytes
// sends RESEND after ResendTicks and every ResendInterval; the peer
// answers with data, BUSY (working, nothing to send) or RPC_UNKNOWN (no
// state: a client restarts its request; a server drops its RPC). A RESEND
// naming bytes past what the sender was granted counts as a grant. After
// TimeoutTicks of silence a client RPC fails with ErrTimeout.
//
// Ports, RPCs and peers belong to one goroutine: no method is safe for
// concurrent use.
package engine
