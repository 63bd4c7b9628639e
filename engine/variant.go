package engine

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
	// Config.KernelPeer, or found out when their own DATA carries the
	// extension.
	HomaDPDK bool
}

// Variant names which Homa a peer runs, as far as the wire shows it.
type Variant uint8

const (
	// VariantAuto (the zero value) takes the peer to run the full
	// protocol (the kernel module, or homa-dpdk) until it shows it runs
	// the upstream subset: a 36-byte RESEND, or a DATA packet whose
	// incoming field is 0 (the full protocol's never is). The peer is
	// then treated as VariantUpstream from that packet on
	// (Metrics.UpstreamPeersDetected).
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

// markUpstream records that p runs the upstream subset (VariantAuto
// peers only) and reports whether p is taken for it now.
func (e *Endpoint) markUpstream(p *peer) bool {
	if p.upstream || p.variant != VariantAuto {
		return p.upstream
	}
	p.upstream = true
	e.m.UpstreamPeersDetected++
	return true
}
