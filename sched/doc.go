// Package sched holds Homa's scheduling policies as small, deterministic,
// allocation-free data structures. It knows nothing about packets or RPCs:
// the engine owns the state, tells sched what happened (bytes received,
// bytes sent, sizes seen) and asks it what to do next. Pure Go, standard
// library only.
//
// Where to start: grant.go (the receiver's SRPT grant scheduler), then
// sender.go and pacer.go (which message goes on the link next, and when),
// cutoffs.go (unscheduled priorities from the size distribution) and
// incast.go.
//
// # Receiver grants (grant.go)
//
// A receiver lets each message's sender transmit its unscheduled bytes
// blindly, and grants the rest. GrantScheduler keeps the incoming
// messages that still need grants sorted by bytes remaining (SRPT, ties to
// the older message) and grants to the first MaxOvercommit of them, each
// up to Received + MaxIncoming/(active+1) (the dynamic window of kernel
// Homa), never beyond its length, and never letting granted-but-unreceived
// bytes over all messages exceed MaxIncoming. Scheduled priorities go by
// rank: the shortest message gets the highest scheduled level, and when
// fewer messages are active than there are scheduled levels the lowest
// levels are used, so a newly arriving shorter message always finds a
// higher level free. A FIFO share (FIFOFraction per thousand of granted
// bytes, in FIFOIncrement chunks) goes to the oldest message outside the
// active set, so long messages cannot starve. The owner may suspend a
// message (Suspend, until Resume): it leaves the sorted list, holds no
// place among the MaxOvercommit, and its outstanding bytes stop counting
// towards MaxIncoming (the engine does so to a message whose sender holds
// its grants without sending them).
//
// # Sender side (sender.go, pacer.go)
//
// SenderQueue orders messages waiting for the link by bytes remaining,
// with a FIFO share to the oldest. Pacer estimates the NIC's backlog in
// link time and defers packets while it exceeds MaxNICQueue; packets of
// messages with fewer than ThrottleMinBytes left are never deferred.
//
// # Unscheduled priorities (cutoffs.go)
//
// A Histogram records message sizes; ComputeCutoffs divides the
// unscheduled bytes they imply into equal shares, one per unscheduled
// level, shorter messages on higher levels. DefaultCutoffs are the kernel's.
//
// # Incast control (incast.go)
//
// Kernel Homa lets every sender fire its unscheduled bytes at a receiver;
// when hundreds of senders answer one client at once (the incast of
// SIGCOMM'18 §3.6) those bytes overflow the receiver's switch port before
// any grant can help. homa-dpdk closes the gap the way the paper suggests:
// the receiver, which knows how much unscheduled data it has invited,
// shrinks the invitation.
//
// Each endpoint keeps an Incast counter of unscheduled bytes it expects
// but has not received: for every request it sent whose response has not
// started, the allowance it advertised with that request; for every
// message arriving in its unscheduled phase, the unscheduled bytes still
// to come. The allowance is what is left of a Budget after that backlog,
// at most the normal unscheduled byte count and at least MinAllowance. So
// N senders invited at once may fire at most Budget + N × MinAllowance
// unscheduled bytes, instead of N × unsched_bytes; as bytes arrive the
// backlog falls and the allowance recovers.
//
// The allowance travels in the three pad bytes of every DATA header the
// endpoint sends (offset 49, see EncodeAllowance): a marker byte and the
// allowance in 64-byte units. Kernel Homa writes these bytes as zero and
// never reads them, so a kernel receiver ignores the allowance and a kernel
// sender advertises none (its peers then use the normal unscheduled
// bytes). A sender stores the latest allowance per peer and, for a
// limited time, sends at most that many bytes of a new message to the
// peer unscheduled; the DATA header's incoming field says so, so the
// receiver grants the remainder like any scheduled bytes. Because
// granted bytes are governed by MaxIncoming, the whole burst is then
// bounded by Budget + MaxIncoming instead of by the number of senders.
package sched
