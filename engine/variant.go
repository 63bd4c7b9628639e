package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// What kind of Homa a peer speaks, and how to frame packets to it.

// PeerOptions is how the endpoint speaks to one peer (Config.PeerOptions).
type PeerOptions struct {
	// Hijack sends every packet to the peer as kernel Homa's TCP-hijacked
	// framing: IP protocol 6, the hijack markers (flags 6, urgent 0xb97d,
	// which every packet carries anyway) and the Homa checksum filled, so
	// that NICs on the way treat it as TCP. A kernel peer receives it
	// with hijack_tcp set (and native packets either way); received
	// hijacked packets are accepted from any peer.
	Hijack bool
	// Variant is the Homa the peer runs.
	Variant Variant
	// HomaDPDK says the peer runs homa-dpdk: DATA to it carries
	// homa-dpdk's incast allowance in the header's pad bytes, which
	// kernel Homa ignores today but may use one day, so they go only to
	// peers known to be homa-dpdk: named here, not named by
	// Config.KernelPeer, or, under VariantAuto, found out when the
	// response to one of our requests carries the extension
	// (Metrics.HomaDPDKPeersDetected; noteAllowance). The response to a
	// request that carried it carries ours too (that RPC only). A peer
	// whose Variant is set (VariantFull or VariantUpstream) without
	// HomaDPDK runs kernel Homa: nothing it sends makes it homa-dpdk.
	HomaDPDK bool
}

// Variant names which Homa a peer runs, as far as the wire shows it.
type Variant uint8

const (
	// VariantAuto (the zero value) takes the peer to run the full
	// protocol (the kernel module, or homa-dpdk) until it shows it runs
	// the upstream subset on one of our own RPCs to it, whose id is ours
	// (random) and which a stranger cannot name: a 36-byte RESEND for the
	// request, or a response whose DATA says incoming 0 (the full
	// protocol's never does). Our requests to it then go as to
	// VariantUpstream (Metrics.UpstreamPeersDetected), until it shows the
	// full protocol the same way: a GRANT, a RESEND naming a priority, or
	// a response with incoming (Metrics.UpstreamPeersReverted). A request
	// from it is no evidence (its id is the sender's to choose): each
	// request is taken as its own first DATA shows (incoming 0: whole,
	// never granted, and answered as the subset is; else granted, as the
	// full protocol is), and so is each response (sendsUpstream).
	VariantAuto Variant = iota
	// VariantFull: the full protocol, never taken for the subset.
	VariantFull
	// VariantUpstream: the upstream Linux subset, posted to netdev: DATA,
	// RESEND (36 bytes, no priority), RPC_UNKNOWN, BUSY, NEED_ACK and ACK
	// only, no GRANT, CUTOFFS or FREEZE. Such a peer never grants, so a
	// message to it is sent whole without grants (paced as any other), and
	// it sends its own messages whole the same way: no GRANT and no
	// CUTOFFS go to it, and our RESENDs to it take its 36-byte form.
	VariantUpstream
)

// String returns the variant's configuration name.
func (v Variant) String() string {
	switch v {
	case VariantFull:
		return "full"
	case VariantUpstream:
		return "upstream"
	}
	return "auto"
}

// ChecksumCheck says which received packets' Homa checksum is verified
// (Config.VerifyChecksum).
type ChecksumCheck uint8

const (
	VerifyHijacked ChecksumCheck = iota // TCP-hijacked packets only (the default)
	VerifyAll                           // every packet
	VerifyNone                          // none
)

// String returns the check's configuration name.
func (c ChecksumCheck) String() string {
	switch c {
	case VerifyAll:
		return "all"
	case VerifyNone:
		return "none"
	}
	return "hijacked"
}

// noteVariant takes what a packet for client RPC r, matched by its id
// (ours) and ports (samePorts), shows of r's peer: upstream, the subset (a
// 36-byte RESEND for the request, a response whose DATA says incoming 0),
// or else the full protocol (a GRANT, a RESEND naming a priority, a
// response with incoming). Only a VariantAuto peer is taken for either,
// and only such a packet changes what it is taken for, counted
// (UpstreamPeersDetected, UpstreamPeersReverted). r speaks what the
// packet shows if its response has not started.
func (e *Endpoint) noteVariant(r *rpc, upstream bool) {
	p := r.peer
	if !r.client || p.variant != VariantAuto || e.cfg.Upstream {
		return
	}
	if r.in.length == 0 {
		r.upstream = upstream
	}
	if p.upstream == upstream {
		return
	}
	p.upstream = upstream
	if upstream {
		e.m.UpstreamPeersDetected++
	} else {
		e.m.UpstreamPeersReverted++
	}
}

// sendsUpstream reports whether the message whose first DATA d came from
// p is sent as the upstream subset sends: whole, without grants, and
// answered in the subset's terms. Configuration decides for a peer whose
// variant is set, and for an endpoint that speaks the subset itself
// (Config.Upstream); otherwise the message's own incoming field does, 0
// only in the subset's DATA. A stranger who makes up a request decides
// for that request alone.
func (e *Endpoint) sendsUpstream(p *peer, d wire.Data) bool {
	switch {
	case e.cfg.Upstream || p.variant == VariantUpstream:
		return true
	case p.variant == VariantFull:
		return false
	}
	return d.Incoming() == 0
}

// samePorts reports whether packet c has r's ports: from the peer's port
// of r to ours.
func samePorts(r *rpc, c wire.Common) bool {
	return c.SrcPort() == r.dport && c.DstPort() == r.port.num
}

// The two ends of an RPC may disagree on the variant by configuration
// (one takes the other for the subset, which it is not), and then a
// message that needs grants never gets them: the end that takes it whole
// never grants, the sender never sends what was not granted, and each
// answers the other (RESEND, BUSY) for ever. Such packets are no
// progress: they show the peer alive (heardFrom) but leave the RPC's
// silence running, so that it times out after TimeoutTicks.

// mismatchResend notes a 36-byte RESEND for r, which we do not send as
// the subset does: its peer takes r's outgoing message for the subset's
// and will never grant it (VariantMismatches, once per RPC).
func (e *Endpoint) mismatchResend(r *rpc) {
	if !r.mismatch {
		r.mismatch = true
		e.m.VariantMismatches++
	}
}

// awaitsWithheldGrants reports whether r's peer waits for grants we never
// send: r's outgoing message waits for the grants its peer showed it will
// not send (mismatchResend), or r's incoming message, taken whole, came
// from a sender of the full protocol whose first DATA said it sends only
// part unscheduled.
func (r *rpc) awaitsWithheldGrants() bool {
	return r.mismatch || r.upstream && r.state == stateIncoming && r.in.awaitsGrants
}

// heardWithoutProgress notes a BUSY or RESEND for r, which
// awaitsWithheldGrants: the peer is alive, but r's silence runs on.
func (e *Endpoint) heardWithoutProgress(r *rpc) {
	silent := r.silentTicks
	e.heardFrom(r)
	r.silentTicks = silent
}
