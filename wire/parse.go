package wire

// DropReason says why a frame was not accepted. The data path counts drops
// per reason in an array indexed by it (var drops [NumDropReasons]uint64),
// so parsing reports a small integer, never an allocated error.
type DropReason uint8

// Reasons, in the order ParseFrame checks for them (ParseLink reports
// DropShortFrame, ParseHomaIPv4 the rest).
const (
	// DropNone (the zero value) means the frame was accepted.
	DropNone DropReason = iota

	// DropShortFrame: fewer than 14 bytes, or a tagged frame cut off
	// inside its 802.1Q tag.
	DropShortFrame

	// DropNotIPv4: the EtherType (after at most one 802.1Q tag) is not
	// IPv4. IPv6, ARP and stacked tags all land here.
	DropNotIPv4

	// DropShortIPHeader: fewer than 20 bytes after the link header, or
	// fewer than IHL × 4.
	DropShortIPHeader

	// DropBadIPVersion: EtherType IPv4 but the version field is not 4.
	DropBadIPVersion

	// DropBadIHL: IHL below 5.
	DropBadIHL

	// DropBadTotalLength: total length smaller than the header, or larger
	// than the bytes that arrived.
	DropBadTotalLength

	// DropBadIPChecksum: the IPv4 header checksum is wrong.
	DropBadIPChecksum

	// DropIPFragment: MF set or a non-zero fragment offset. Homa sets DF
	// and never needs reassembly.
	DropIPFragment

	// DropNotHoma: the IPv4 protocol is not 146.
	DropNotHoma

	// DropShortHomaHeader: the Homa packet is shorter than the common
	// header, or than its type's header.
	DropShortHomaHeader

	// DropBadType: the packet type is outside 0x10..0x18.
	DropBadType

	// DropBadNumAcks: an ACK packet's num_acks exceeds MaxAcks.
	DropBadNumAcks

	// DropSplitHeaders: a frame in two pieces (Link.Tail) whose first
	// piece holds more or less than the link, IPv4 and Homa headers.
	DropSplitHeaders

	// DropIPv6ExtHeader: an IPv6 extension header that runs past the
	// packet, or more of them than MaxIPv6ExtHeaders.
	DropIPv6ExtHeader

	// DropNotHijacked: a TCP segment without the hijack markers
	// (HijackFlags, HijackUrgent): real TCP, which homa-dpdk does not
	// speak.
	DropNotHijacked

	// DropBadHomaChecksum: the Homa (TCP-style) checksum is wrong, on a
	// port configured to check it.
	DropBadHomaChecksum

	// NumDropReasons is the number of reasons, DropNone included; size
	// per-reason counter arrays with it.
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"none", "short_frame", "not_ipv4", "short_ip_header", "bad_ip_version",
	"bad_ihl", "bad_total_length", "bad_ip_checksum", "ip_fragment",
	"not_homa", "short_homa_header", "bad_type", "bad_num_acks", "split_headers",
	"ipv6_ext_header", "not_hijacked", "bad_homa_checksum",
}

// String returns a snake_case name for r, suitable as a metric label.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Frame holds views of the headers of an accepted frame. All of them alias
// the frame's bytes and are valid only as long as those bytes are: for a
// DPDK mbuf, until it is freed, reused or handed to the NIC. Use Clone to
// keep a frame longer.
type Frame struct {
	Ethernet Ethernet // the 14-byte Ethernet header
	VLAN     VLAN     // the 4-byte 802.1Q tag, or nil if untagged
	IPv4     IPv4     // header (options included) and payload, TotalLength bytes; nil over IPv6
	IPv6     IPv6     // over IPv6 (ParseHomaIP): the packet, 40 + PayloadLength bytes; else nil
	Homa     Common   // the IP payload: Homa header and any data

	// Type is the Homa packet type; Homa has at least Type.HeaderLen()
	// bytes, so Data(f.Homa), Grant(f.Homa), ... are safe to read.
	Type PacketType

	// Payload is what follows the type's header: for DATA the message
	// bytes (Data.Payload), for other types normally empty.
	Payload []byte

	// Hijacked is set when the packet came as TCP (IP protocol 6) with
	// the hijack markers (Common.IsHijacked): kernel Homa's hijack_tcp
	// framing.
	Hijacked bool
}

// Link is a decoded link header: views into the frame, valid as long as
// its bytes are (see Frame). A polling loop decodes each received frame's
// link header once, dispatches on Type (IPv4, ARP, ...) and hands the
// IPv4 ones on, decoded, to ParseHomaIPv4 (or an engine that calls it).
type Link struct {
	Ethernet Ethernet // the 14-byte header
	VLAN     VLAN     // the 802.1Q tag, or nil
	Type     uint16   // the EtherType after at most one tag
	Payload  []byte   // what follows the link header (the L3 packet, or its headers when Tail is set)
	// Tail, when not nil, is the rest of a frame that came in two pieces
	// (a chained mbuf: the headers in one segment, the payload in an
	// external buffer), which Payload does not hold: ParseHomaIPv4 then
	// takes Payload as the IPv4 and Homa headers exactly and Tail as the
	// message bytes, so the payload need not be copied to sit after its
	// headers. ParseLink sets it to nil; SplitFits says whether a split
	// frame can be parsed so.
	Tail []byte
}

// ParseLink decodes the Ethernet header of b and its 802.1Q tag, if any,
// into l. It returns DropShortFrame, with l zeroed, when b is shorter
// than 14 bytes or ends inside the tag; otherwise DropNone. A second
// (stacked) tag is not decoded: its EtherType 0x8100 is l.Type. ParseLink
// does not allocate.
func ParseLink(b []byte, l *Link) DropReason {
	// Fields are written one by one: a struct assignment through l costs
	// a copy of the whole struct (with write barriers) per frame.
	if len(b) < EthernetHeaderLen {
		*l = Link{}
		return DropShortFrame
	}
	l.Ethernet = Ethernet(b[:EthernetHeaderLen])
	l.VLAN = nil
	off, t := EthernetHeaderLen, l.Ethernet.Type()
	if t == EtherTypeVLAN {
		if len(b) < EthernetHeaderLen+VLANTagLen {
			*l = Link{}
			return DropShortFrame
		}
		l.VLAN = VLAN(b[EthernetHeaderLen : EthernetHeaderLen+VLANTagLen])
		off, t = EthernetHeaderLen+VLANTagLen, l.VLAN.Type()
	}
	l.Type, l.Payload, l.Tail = t, b[off:], nil
	return DropNone
}

// ParseHomaIPv4 continues from a decoded link: when l.Type is
// EtherTypeIPv4 it validates the IPv4 header (the checksum too when
// verifyIPChecksum) and the Homa header, as ParseFrame does, and fills f,
// whose Ethernet and VLAN are copied from l. It returns DropNone on
// success; otherwise the reason (DropNotIPv4 for another EtherType), with
// f zeroed. It does not allocate.
func ParseHomaIPv4(l *Link, f *Frame, verifyIPChecksum bool) DropReason {
	if l.Tail != nil {
		return parseSplitHomaIPv4(l, f, verifyIPChecksum)
	}
	r := DropNotIPv4
	if l.Type == EtherTypeIPv4 {
		var ip IPv4
		if ip, r = parseIPv4(l.Payload, verifyIPChecksum); r == DropNone {
			homa := Common(ip.Payload())
			var t PacketType
			if t, r = ParseHoma(homa); r == DropNone {
				f.Ethernet, f.VLAN, f.IPv4, f.Homa = l.Ethernet, l.VLAN, ip, homa
				f.Type, f.Payload, f.Hijacked = t, homa[min(t.HeaderLen(), len(homa)):], ip.Protocol() == IPProtoTCP
				return DropNone
			}
		}
	}
	*f = Frame{}
	return r
}

// parseSplitHomaIPv4 is ParseHomaIPv4 for a frame in two pieces: l.Payload
// must hold the IPv4 header and the whole Homa header, and nothing else
// of the packet (DropSplitHeaders), and the rest, up to the IPv4 total
// length, is in l.Tail (DropBadTotalLength if it is short). f.Payload is
// then Tail's part of the packet; f.IPv4 and f.Homa hold the headers only.
func parseSplitHomaIPv4(l *Link, f *Frame, verifyIPChecksum bool) DropReason {
	r := DropNotIPv4
	if l.Type == EtherTypeIPv4 {
		ip := IPv4(l.Payload)
		if r = ip.validateSpan(len(l.Payload) + len(l.Tail)); r == DropNone {
			r = ipChecks(ip, verifyIPChecksum)
		}
		if r == DropNone {
			homa := Common(ip[ip.HeaderLen():])
			var t PacketType
			if t, r = ParseHoma(homa); r == DropNone && (len(homa) != t.HeaderLen() || int(ip.TotalLength()) < len(ip)) {
				r = DropSplitHeaders
			}
			if r == DropNone {
				f.Ethernet, f.VLAN, f.IPv4, f.Homa = l.Ethernet, l.VLAN, ip, homa
				f.Type, f.Payload, f.Hijacked = t, l.Tail[:int(ip.TotalLength())-len(ip)], ip.Protocol() == IPProtoTCP
				return DropNone
			}
		}
	}
	*f = Frame{}
	return r
}

// parseSplitHomaIPv6 is parseSplitHomaIPv4 over IPv6: l.Payload must hold
// the fixed IPv6 header and the whole Homa header right after it (no
// extension headers), and the rest of the packet is in l.Tail.
func parseSplitHomaIPv6(l *Link, f *Frame) DropReason {
	p := l.Payload
	switch {
	case len(p) < IPv6HeaderLen:
		return DropShortIPHeader
	case p[0]>>4 != 6:
		return DropBadIPVersion
	}
	ip := IPv6(p)
	n := int(ip.PayloadLength())
	if n == 0 || IPv6HeaderLen+n > len(p)+len(l.Tail) {
		return DropBadTotalLength
	}
	homa := Common(p[IPv6HeaderLen:])
	switch r := HomaUpper(ip.NextHeader(), homa); {
	case ip.NextHeader() == IPv6Fragment:
		return DropIPFragment
	case r == DropNotHoma:
		return DropSplitHeaders // an extension header, or not Homa: homa-dpdk splits neither
	case r != DropNone:
		return r
	}
	t, r := ParseHoma(homa)
	if r == DropNone && (len(homa) != t.HeaderLen() || IPv6HeaderLen+n < len(p)) {
		r = DropSplitHeaders
	}
	if r != DropNone {
		return r
	}
	f.Ethernet, f.VLAN, f.IPv6, f.Homa = l.Ethernet, l.VLAN, ip, homa
	f.Type, f.Payload, f.Hijacked = t, l.Tail[:IPv6HeaderLen+n-len(p)], ip.NextHeader() == IPProtoTCP
	return DropNone
}

// SplitFits reports whether a frame in two pieces, l (decoded from the
// first) and a second of tail bytes, can be parsed without joining them:
// the first piece is exactly the link, IPv4 and Homa headers of a Homa
// packet whose other bytes are all in the second. It reads the IHL, the
// protocol and the Homa type only; ParseHomaIPv4 validates the rest.
func SplitFits(l *Link, tail int) bool {
	p := l.Payload
	if l.Type == EtherTypeIPv6 && tail > 0 && len(p) >= IPv6HeaderLen+CommonHeaderLen && p[0]>>4 == 6 {
		// Homa right after the fixed header (homa-dpdk sends no extension headers).
		c := Common(p[IPv6HeaderLen:])
		n := c.Type().HeaderLen()
		return HomaUpper(IPv6(p).NextHeader(), c) == DropNone && n != 0 && len(p) == IPv6HeaderLen+n
	}
	if l.Type != EtherTypeIPv4 || len(p) < IPv4MinHeaderLen || tail == 0 {
		return false
	}
	ip := IPv4(p)
	hl := ip.HeaderLen()
	if hl < IPv4MinHeaderLen || len(p) < hl+CommonHeaderLen || HomaUpper(ip.Protocol(), p[hl:]) != DropNone {
		return false
	}
	n := Common(p[hl:]).Type().HeaderLen()
	return n != 0 && len(p) == hl+n
}

// ParseFrame validates an Ethernet frame carrying a Homa packet over IPv4
// and fills f with views of its headers: ParseLink, then ParseHomaIPv4.
// It returns DropNone on success; otherwise the reason, with f zeroed.
// The IPv4 header checksum is verified; bytes after the IPv4 total length
// (Ethernet padding, an FCS) are ignored. ParseFrame does not allocate.
//
// ParseFrame checks the format only. Whether a DATA segment lies inside its
// message, whether ports and ids name a live RPC, and whether priorities
// and message lengths are within configured limits are the engine's
// business.
func ParseFrame(b []byte, f *Frame) DropReason { return parseFrame(b, f, true) }

// ParseFrameTrustIPChecksum is ParseFrame without the IPv4 header checksum
// check, for frames whose checksum the NIC has already verified (RX
// checksum offload reported it good).
func ParseFrameTrustIPChecksum(b []byte, f *Frame) DropReason { return parseFrame(b, f, false) }

func parseFrame(b []byte, f *Frame, verifyIPChecksum bool) DropReason {
	var l Link
	if r := ParseLink(b, &l); r != DropNone {
		*f = Frame{}
		return r
	}
	return ParseHomaIPv4(&l, f, verifyIPChecksum)
}

// ParseIPv4 validates an IPv4 packet carrying Homa: structure (IsValid),
// header checksum, no fragmentation, protocol 146 or a hijacked TCP
// segment. b starts at the IPv4
// header and may run past the total length (link padding). On success it
// returns a view of exactly TotalLength bytes; otherwise nil and the
// reason.
func ParseIPv4(b []byte) (IPv4, DropReason) { return parseIPv4(b, true) }

func parseIPv4(b []byte, verifyChecksum bool) (IPv4, DropReason) {
	ip := IPv4(b)
	if r := ip.validate(); r != DropNone {
		return nil, r
	}
	if r := ipChecks(ip, verifyChecksum); r != DropNone {
		return nil, r
	}
	return ip[:ip.TotalLength()], DropNone
}

// ipChecks checks a structurally valid IPv4 header for Homa: its checksum
// (when asked), no fragment, protocol 146, or protocol 6 (TCP) whose
// header carries the hijack markers (DropNotHijacked when it does not,
// DropShortHomaHeader when the segment is too short to tell).
func ipChecks(ip IPv4, verifyChecksum bool) DropReason {
	switch {
	case verifyChecksum && !ip.IsChecksumValid():
		return DropBadIPChecksum
	case ip.IsFragment():
		return DropIPFragment
	}
	return HomaUpper(ip.Protocol(), ip[ip.HeaderLen():])
}

// HomaUpper checks that an IP packet's upper layer, protocol (or IPv6
// next header) proto whose segment starts seg, is Homa: protocol 146, or
// 6 (TCP) with the hijack markers. It returns DropNone, DropNotHoma
// (another protocol), DropNotHijacked (real TCP), or DropShortHomaHeader
// (a TCP segment too short to tell). It reads seg only for TCP.
func HomaUpper(proto uint8, seg []byte) DropReason {
	switch proto {
	case IPProtoHoma:
		return DropNone
	case IPProtoTCP:
		return hijackCheck(seg)
	}
	return DropNotHoma
}

// hijackCheck checks that a TCP segment (from its header on) is a hijacked
// Homa packet.
func hijackCheck(seg []byte) DropReason {
	switch {
	case len(seg) < CommonHeaderLen:
		return DropShortHomaHeader
	case !Common(seg).IsHijacked():
		return DropNotHijacked
	}
	return DropNone
}

// ParseHoma validates a Homa packet (the IPv4 payload): at least a common
// header, a type in 0x10..0x18, at least that type's header length (for
// RESEND, the upstream subset's 36 bytes: see Resend.HasPriority), and
// for ACK at most MaxAcks entries. On success the typed view (Data(b),
// Grant(b), ...) of b may be read without further checks.
func ParseHoma(b []byte) (PacketType, DropReason) {
	if len(b) < CommonHeaderLen {
		return 0, DropShortHomaHeader
	}
	t := Common(b).Type()
	n := t.HeaderLen()
	if n == 0 {
		return t, DropBadType
	}
	if len(b) < n && !(t == TypeResend && len(b) >= ResendUpstreamLen) {
		return t, DropShortHomaHeader
	}
	if t == TypeAck && Ack(b).NumAcks() > MaxAcks {
		return t, DropBadNumAcks
	}
	return t, DropNone
}

// Priority returns the Homa priority the frame arrived at, from the IPv4
// TOS byte or the IPv6 traffic class. (With PCP marking, read
// f.VLAN.PCP() instead.)
func (f *Frame) Priority() uint8 {
	if f.IPv6 != nil {
		return f.IPv6.Priority()
	}
	return f.IPv4.Priority()
}

// Src and Dst return the frame's addresses as IPv6 ones, IPv4 addresses
// mapped (::ffff:a.b.c.d), as kernel Homa holds them.
func (f *Frame) Src() [16]byte {
	if f.IPv6 != nil {
		return f.IPv6.Src()
	}
	return MapIPv4(f.IPv4.Src())
}

func (f *Frame) Dst() [16]byte {
	if f.IPv6 != nil {
		return f.IPv6.Dst()
	}
	return MapIPv4(f.IPv4.Dst())
}

// ParseHomaIP is ParseHomaIPv4 for either family: an IPv6 link
// (EtherTypeIPv6) is validated with ParseIPv6, its upper layer Homa (next
// header 146) or a hijacked TCP segment (6), and f.IPv6 set instead of
// f.IPv4; a frame in two pieces over IPv6 (SplitFits) is parsed in place
// as over IPv4, when Homa follows the fixed header directly. Other
// EtherTypes give DropNotIPv4.
func ParseHomaIP(l *Link, f *Frame, verifyIPChecksum bool) DropReason {
	if l.Type != EtherTypeIPv6 {
		return ParseHomaIPv4(l, f, verifyIPChecksum)
	}
	*f = Frame{}
	if l.Tail != nil {
		return parseSplitHomaIPv6(l, f)
	}
	ip, proto, off, r := ParseIPv6(l.Payload)
	if r != DropNone {
		return r
	}
	if r = HomaUpper(proto, ip[off:]); r != DropNone {
		return r
	}
	homa := Common(ip[off:])
	t, r := ParseHoma(homa)
	if r != DropNone {
		return r
	}
	f.Ethernet, f.VLAN, f.IPv6, f.Homa = l.Ethernet, l.VLAN, ip, homa
	f.Type, f.Payload, f.Hijacked = t, homa[min(t.HeaderLen(), len(homa)):], proto == IPProtoTCP
	return DropNone
}

// EthernetFields returns the link header's fields, the 802.1Q tag
// included when present; re-encoding them reproduces the link header.
func (f *Frame) EthernetFields() EthernetFields {
	e := f.Ethernet.Fields()
	if f.VLAN != nil {
		e.Tagged, e.TCI, e.Type = true, f.VLAN.TCI(), f.VLAN.Type()
	}
	return e
}

// Len returns the number of frame bytes the views cover: link header(s)
// plus the IPv4 total length (padding excluded).
func (f *Frame) Len() int { return len(f.Ethernet) + len(f.VLAN) + len(f.IPv4) + len(f.IPv6) }

// Clone returns a copy of an accepted frame whose views point into a newly
// allocated buffer, so it outlives the original bytes. Cloning a zero
// Frame returns a zero Frame.
func (f *Frame) Clone() Frame {
	var c Frame
	if f.Ethernet == nil {
		return c
	}
	buf := make([]byte, f.Len())
	// The views are contiguous slices of one frame, starting at Ethernet.
	copy(buf, f.Ethernet[:f.Len()])
	var l Link
	ParseLink(buf, &l)
	ParseHomaIP(&l, &c, false)
	return c
}
