// Package wire reads and writes Homa packets as they appear on the wire:
// Ethernet (optionally with one 802.1Q tag), IPv4, and the Homa headers of
// the Linux kernel Homa module (the homa_wire.h layout), with which
// homa-dpdk must interoperate. It is pure Go, uses only the standard
// library, and neither parsing nor encoding allocates.
//
// # Reading
//
// Headers are byte-slice views in the style of gVisor's header package:
// Ethernet, VLAN, IPv4, Common, Data, Grant, Resend, Cutoffs, Ack and
// AckEntry, each with one-line big-endian accessors and setters at named
// offsets. A view reads the bytes it was made from; it does not copy them,
// so it is valid only as long as those bytes are (for a DPDK mbuf: until
// the mbuf is freed or transmitted). Frame.Clone and the Fields methods
// are the copying variants.
//
// The receive path decodes each frame's link header once: ParseLink fills
// a Link (Ethernet header, 802.1Q tag, EtherType, payload) that a polling
// loop dispatches on, and ParseHomaIPv4 continues from it for IPv4,
// checking the IPv4 and Homa headers and filling a Frame with views of
// them. ParseFrame does both for callers that hold a whole frame. Each
// either succeeds or returns a DropReason, a small integer the data path
// uses to count drops per cause. After DropNone, the typed view of
// Frame.Homa for Frame.Type is long enough to read. IsValid methods check
// lengths for callers that hold views of their own making.
//
// # Writing
//
// Each header has a fields struct (EthernetFields, IPv4Fields, DataFields,
// GrantFields, ResendFields, ControlFields, CutoffsFields, AckFields) whose
// Encode method writes the header into a caller's buffer and returns the
// number of bytes written, or 0 if the buffer is too short. A DATA packet
// is the 56-byte header from DataFields.Encode followed by message bytes
// the caller copies in.
//
// # The format
//
// Framing. EtherType 0x0800 (IPv4); an optional 802.1Q tag (0x8100) whose
// PCP carries the priority when PCP marking is configured. IPv4 protocol
// 146 (IPPROTO_HOMA), DF set, header checksum valid. Priority p (0..7)
// travels in the top three bits of TOS: TOS = p<<5, so TOS 0xa0 is
// priority 5. Fragments are dropped; IPv4 options are skipped. IPv6: next
// header 146, traffic class p<<5 (the IPv6 view, ParseIPv6, which skips
// hop-by-hop, routing and destination options headers, refuses fragments
// and bounds the walk; ParseHomaIP takes Homa over either family).
// Neighbour discovery and ICMPv6 echo: icmpv6.go.
//
// TCP hijacking (kernel Homa's hijack_tcp): a Homa packet sent as IP
// protocol 6, so that NICs segment and checksum it as TCP. The common
// header is already TCP's shape; the markers are flags SYN|RST (6) and
// urgent 0xb97d (Common.IsHijacked), which the kernel module writes on
// every packet. ParseHomaIPv4 accepts such segments (Frame.Hijacked) and
// drops other TCP (DropNotHijacked). The checksum field then holds the
// TCP checksum of the Homa packet under a pseudo-header with protocol 6
// (HomaChecksum, PseudoSumIPv4, PseudoSumIPv6): the full module fills it
// so on every packet since March 2026; kernel receivers do not check it
// on protocol 146.
//
// The upstream Linux subset's RESEND is 36 bytes, without the priority
// byte: ParseHoma accepts it (Resend.HasPriority says which form), and
// ResendFields.Upstream writes it.
//
// Every multi-byte Homa field is big-endian and structures are packed.
// Offsets below are from the start of the Homa header.
//
// The common header (28 bytes) is laid out like a TCP header so that NICs
// can segment DATA with TSO:
//
//	 0 u16 sport       sender's Homa port
//	 2 u16 dport       receiver's Homa port
//	 4 u32 sequence    DATA: offset of the first byte when seg.offset is 0xFFFFFFFF
//	 8 3B  unused      zero
//	11 u8  type        packet type
//	12 u8  doff        32-bit words TSO replicates, << 4: 0x50 control, 0xE0 DATA (56 bytes)
//	13 u8  flags       kernel module sends 6, upstream subset 0; ignored on receive
//	14 u16 window      zero
//	16 u16 checksum    optional, not checked by kernel receivers; 0 when not computed
//	18 u16 urgent      kernel module sends 0xb97d; ignored on receive
//	20 u64 sender_id   RPC id as the sender knows it
//
// Client RPC ids are even; the server's id for the same RPC is id^1, and a
// receiver's local id for a packet is sender_id^1 (IsClientID, ServerID,
// LocalID).
//
// Packet types and their header lengths (a packet shorter than its type's
// header, or of any other type, is dropped):
//
//	DATA        0x10  56 + data  message sender → receiver
//	GRANT       0x11  33         receiver → sender: send up to offset, at priority
//	RESEND      0x12  37         receiver → sender: retransmit [offset, offset+length)
//	RPC_UNKNOWN 0x13  28         either: no state for this RPC
//	BUSY        0x14  28         sender → receiver: alive, not sending now
//	CUTOFFS     0x15  62         receiver → sender: unscheduled priority cutoffs
//	FREEZE      0x16  28         debugging only; accept and count
//	NEED_ACK    0x17  28         server → client: please acknowledge
//	ACK         0x18  80         client → server: these RPCs are done
//
// Type-specific fields:
//
//	ack entry (10)  client_id u64 (0 = none) @0, server_port u16 @8
//	DATA            message_length u32 @28, incoming u32 @32, ack @36,
//	                cutoff_version u16 @46, retransmit u8 @48, 3 pad @49,
//	                seg.offset u32 @52, data @56
//	GRANT           offset u32 @28, priority u8 @32
//	RESEND          offset u32 @28, length u32 @32 (0xFFFFFFFF = all sent so far), priority u8 @36 (not in the upstream 36-byte form)
//	CUTOFFS         unsched_cutoffs[8] u32 @28..59 (entry 0 ignored), cutoff_version u16 @60
//	ACK             num_acks u16 @28 (at most 5), acks[5] @30..79
//
// DATA's seg.offset is the offset of the packet's first message byte, or
// 0xFFFFFFFF meaning "read it from sequence"; receivers accept both
// (Data.Offset, Data.Segment).
//
// Sizes. The kernel defines a minimum Homa packet of 26 bytes
// (MinPacketLen: shorter packets are padded so the Ethernet frame reaches
// 64 bytes) and a maximum Homa header of 90 bytes (MaxHeaderLen: buffer
// space reserved for any header). Neither is the size of a header: actual
// headers run from 28 (the header-only types) to 80 (ACK) bytes, and the
// parser checks each packet against its own type's length. A message is at
// most 1,000,000 bytes for interoperability with the kernel
// (MaxMessageLength; the field is a u32 and configuration may raise the
// limit towards homa-dpdk peers, up to MaxMessageLimit, so the parser
// leaves it to the engine). A DATA packet carries at
// most MTU − IP header − 56 message bytes: 1424 for a 1500-byte MTU over
// IPv4 (PayloadPerPacket).
//
// Encoders write kernel-module style headers unless told otherwise: flags
// 6, urgent 0xb97d, doff 0x50 for control packets and 0xE0 for DATA,
// window and checksum 0. Set CommonFields.Compat to write other values
// (UpstreamCompat gives the upstream subset's).
package wire
