package wire

import (
	"bytes"
	"math/rand"
	"testing"
)

var allTypes = []PacketType{TypeData, TypeGrant, TypeResend, TypeRPCUnknown, TypeBusy,
	TypeCutoffs, TypeFreeze, TypeNeedAck, TypeAck}

// sampleHoma returns a valid header of type t with distinctive fields.
func sampleHoma(t PacketType) []byte {
	b := make([]byte, MaxHeaderLen)
	cf := CommonFields{SrcPort: 0x8000, DstPort: 99, Sequence: 0, SenderID: 2}
	var n int
	switch t {
	case TypeData:
		n = (&DataFields{Common: cf, MessageLength: 100, Incoming: 100, Offset: 0}).Encode(b)
	case TypeGrant:
		n = (&GrantFields{Common: cf, Offset: 20000, Priority: 3}).Encode(b)
	case TypeResend:
		n = (&ResendFields{Common: cf, Length: ResendAll, Priority: 7}).Encode(b)
	case TypeCutoffs:
		n = (&CutoffsFields{Common: cf, Cutoffs: [8]uint32{7: 200}, Version: 2}).Encode(b)
	case TypeAck:
		n = (&AckFields{Common: cf, NumAcks: 1, Acks: [MaxAcks]AckEntryFields{{ClientID: 4, ServerPort: 99}}}).Encode(b)
	default:
		n = (&ControlFields{Type: t, Common: cf}).Encode(b)
	}
	return b[:n]
}

func TestParseFrame_everyTypeExactLength(t *testing.T) {
	for _, typ := range allTypes {
		var f Frame
		if r := ParseFrame(homaFrame(t, sampleHoma(typ)), &f); r != DropNone {
			t.Errorf("%v: ParseFrame = %v", typ, r)
			continue
		}
		if f.Type != typ || len(f.Homa) != typ.HeaderLen() || len(f.Payload) != 0 {
			t.Errorf("%v: type %v homa %d bytes payload %d", typ, f.Type, len(f.Homa), len(f.Payload))
		}
	}
}

func TestParseFrame_everyTypeShortByOne(t *testing.T) {
	for _, typ := range allTypes {
		homa := sampleHoma(typ)
		if typ == TypeResend { // 36 bytes is the upstream form; 35 is short
			homa = homa[:ResendUpstreamLen]
		}
		var f Frame
		if r := ParseFrame(homaFrame(t, homa[:len(homa)-1]), &f); r != DropShortHomaHeader {
			t.Errorf("%v with %d bytes: ParseFrame = %v, want %v", typ, len(homa)-1, r, DropShortHomaHeader)
		}
		if _, r := ParseHoma(homa[:len(homa)-1]); r != DropShortHomaHeader {
			t.Errorf("%v with %d bytes: ParseHoma = %v", typ, len(homa)-1, r)
		}
	}
}

func TestParseFrame_badTypes(t *testing.T) {
	for _, typ := range []PacketType{0x0F, 0x19, 0x00, 0x01, 0x20, 0xFF} {
		homa := make([]byte, MaxHeaderLen) // long enough for any type
		Common(homa).SetType(typ)
		var f Frame
		if r := ParseFrame(homaFrame(t, homa), &f); r != DropBadType {
			t.Errorf("type %#x: ParseFrame = %v, want %v", uint8(typ), r, DropBadType)
		}
	}
}

// frameMod builds a valid untagged DATA frame and lets mod corrupt it;
// fixIP recomputes the IPv4 checksum afterwards.
type frameMod struct {
	name  string
	mod   func(b []byte) []byte
	fixIP bool
	want  DropReason
}

func ipAt(b []byte) IPv4 { return IPv4(b[EthernetHeaderLen:]) }

func TestParseFrame_drops(t *testing.T) {
	for _, tc := range []frameMod{
		{"valid", func(b []byte) []byte { return b }, false, DropNone},
		{"empty", func(b []byte) []byte { return nil }, false, DropShortFrame},
		{"13 bytes", func(b []byte) []byte { return b[:13] }, false, DropShortFrame},
		{"tag cut off", func(b []byte) []byte { Ethernet(b).SetType(EtherTypeVLAN); return b[:17] }, false, DropShortFrame},
		{"IPv6", func(b []byte) []byte { Ethernet(b).SetType(EtherTypeIPv6); return b }, false, DropNotIPv4},
		{"ARP", func(b []byte) []byte { Ethernet(b).SetType(0x0806); return b }, false, DropNotIPv4},
		{"QinQ outer tag", func(b []byte) []byte { Ethernet(b).SetType(0x88a8); return b }, false, DropNotIPv4},
		{"no IP header", func(b []byte) []byte { return b[:EthernetHeaderLen+19] }, false, DropShortIPHeader},
		{"version 6", func(b []byte) []byte { b[14] = 0x65; return b }, true, DropBadIPVersion},
		{"IHL 4", func(b []byte) []byte { b[14] = 0x44; return b }, false, DropBadIHL},
		{"IHL 15 beyond frame", func(b []byte) []byte { b[14] = 0x4f; return b[:EthernetHeaderLen+40] }, false, DropShortIPHeader},
		{"total length > frame", func(b []byte) []byte { ipAt(b).SetTotalLength(uint16(len(b) - 13)); return b }, true, DropBadTotalLength},
		{"total length < IHL", func(b []byte) []byte { ipAt(b).SetTotalLength(19); return b }, true, DropBadTotalLength},
		{"bad IP checksum", func(b []byte) []byte { ipAt(b).SetChecksum(ipAt(b).Checksum() ^ 1); return b }, false, DropBadIPChecksum},
		{"TTL changed, checksum stale", func(b []byte) []byte { ipAt(b).SetTTL(1); return b }, false, DropBadIPChecksum},
		{"MF set", func(b []byte) []byte { b[14+ipFlagsOff] |= 0x20; return b }, true, DropIPFragment},
		{"fragment offset", func(b []byte) []byte { b[14+ipFlagsOff+1] = 1; return b }, true, DropIPFragment},
		{"protocol TCP, hijacked", func(b []byte) []byte { b[14+ipProtocol] = 6; return b }, true, DropNone},
		{"protocol TCP, not hijacked", func(b []byte) []byte { b[14+ipProtocol] = 6; Common(b[34:]).SetFlags(0x10); return b }, true, DropNotHijacked},
		{"protocol TCP, urgent not hijack's", func(b []byte) []byte { b[14+ipProtocol] = 6; Common(b[34:]).SetUrgent(0); return b }, true, DropNotHijacked},
		{"protocol TCP, 19 bytes", func(b []byte) []byte { b[14+ipProtocol] = 6; ipAt(b).SetTotalLength(20 + 19); return b }, true, DropShortHomaHeader},
		{"protocol UDP", func(b []byte) []byte { b[14+ipProtocol] = 17; return b }, true, DropNotHoma},
		{"Homa 27 bytes", func(b []byte) []byte { ipAt(b).SetTotalLength(20 + 27); return b }, true, DropShortHomaHeader},
		{"Homa 0 bytes", func(b []byte) []byte { ipAt(b).SetTotalLength(20); return b }, true, DropShortHomaHeader},
		{"DATA 55 bytes", func(b []byte) []byte { ipAt(b).SetTotalLength(20 + 55); return b }, true, DropShortHomaHeader},
		{"DF clear is accepted", func(b []byte) []byte { b[14+ipFlagsOff] &^= 0x40; return b }, true, DropNone},
		{"doff, flags, urgent ignored", func(b []byte) []byte {
			c := Common(b[34:])
			c.SetDoff(0)
			c.SetFlags(0xff)
			c.SetUrgent(0)
			c.SetChecksum(0x1234)
			return b
		}, false, DropNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := homaFrame(t, append(sampleHoma(TypeData), "payload"...))
			b = tc.mod(b)
			if tc.fixIP {
				ipAt(b)[:20:20].UpdateChecksum()
			}
			f := Frame{Type: 0x77} // must be reset on a drop
			if r := ParseFrame(b, &f); r != tc.want {
				t.Fatalf("ParseFrame = %v, want %v", r, tc.want)
			}
			if tc.want != DropNone && f.Type != 0 {
				t.Errorf("Frame not zeroed after a drop: %+v", f)
			}
		})
	}
}

func TestParseFrame_ackNumAcks(t *testing.T) {
	for n, want := range map[uint16]DropReason{0: DropNone, 5: DropNone, 6: DropBadNumAcks, 0xffff: DropBadNumAcks} {
		homa := sampleHoma(TypeAck)
		Ack(homa).SetNumAcks(n)
		var f Frame
		if r := ParseFrame(homaFrame(t, homa), &f); r != want {
			t.Errorf("num_acks %d: ParseFrame = %v, want %v", n, r, want)
		}
	}
}

func TestParseFrame_vlan(t *testing.T) {
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(6, false, 42)}
	homa := append(sampleHoma(TypeData), "hello"...)
	b := buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 2, len(homa)), homa)
	var f Frame
	if r := ParseFrame(b, &f); r != DropNone {
		t.Fatalf("ParseFrame = %v", r)
	}
	if f.VLAN == nil || f.VLAN.PCP() != 6 || f.VLAN.VID() != 42 || f.Ethernet.Type() != EtherTypeVLAN {
		t.Fatalf("VLAN = % x, outer type %#x", []byte(f.VLAN), f.Ethernet.Type())
	}
	if f.Priority() != 2 || f.Type != TypeData || string(f.Payload) != "hello" {
		t.Errorf("priority %d type %v payload %q", f.Priority(), f.Type, f.Payload)
	}
	if got := f.EthernetFields(); got != eth {
		t.Errorf("EthernetFields = %+v, want %+v", got, eth)
	}
	if f.Len() != len(b) || &f.Homa[0] != &b[18+20] {
		t.Errorf("views do not alias the frame: Len %d of %d", f.Len(), len(b))
	}
}

func TestParseFrame_ipOptions(t *testing.T) {
	homa := append(sampleHoma(TypeData), "xyz"...)
	base := homaFrame(t, homa)
	// Insert 8 option bytes (IHL 7) between the IPv4 header and Homa.
	b := append(append(append([]byte{}, base[:34]...), 1, 1, 1, 1, 1, 1, 1, 0), base[34:]...)
	ip := ipAt(b)
	ip[ipVerIHL] = 0x47
	ip.SetTotalLength(uint16(28 + len(homa)))
	ip[:28].UpdateChecksum()
	var f Frame
	if r := ParseFrame(b, &f); r != DropNone {
		t.Fatalf("ParseFrame = %v", r)
	}
	if f.IPv4.HeaderLen() != 28 || !bytes.Equal(f.Homa, homa) || string(f.Payload) != "xyz" {
		t.Errorf("hl %d homa % x payload %q", f.IPv4.HeaderLen(), []byte(f.Homa), f.Payload)
	}
}

func TestParseFrame_paddingIgnored(t *testing.T) {
	// A 62-byte BUSY frame padded by the link to 64 bytes plus a 4-byte FCS.
	b := append(homaFrame(t, sampleHoma(TypeBusy)), 0, 0, 0xde, 0xad, 0xbe, 0xef)
	var f Frame
	if r := ParseFrame(b, &f); r != DropNone {
		t.Fatalf("ParseFrame = %v", r)
	}
	if len(f.Homa) != ControlHeaderLen || len(f.Payload) != 0 || len(f.IPv4) != 48 {
		t.Errorf("homa %d payload %d ip %d: padding leaked into the views", len(f.Homa), len(f.Payload), len(f.IPv4))
	}
	// The same holds for DATA: the payload ends at the IPv4 total length.
	b = append(homaFrame(t, append(sampleHoma(TypeData), "ab"...)), 0xff, 0xff)
	if r := ParseFrame(b, &f); r != DropNone || string(f.Payload) != "ab" {
		t.Errorf("DATA with padding: %v payload %q", r, f.Payload)
	}
}

func TestParseFrame_dataOffsetForms(t *testing.T) {
	for _, tc := range []struct {
		seq, seg, want uint32
	}{{0, 1424, 1424}, {2848, OffsetInSequence, 2848}} {
		homa := make([]byte, DataHeaderLen+4)
		(&DataFields{Common: CommonFields{Sequence: tc.seq}, MessageLength: 5000, Offset: tc.seg}).Encode(homa)
		var f Frame
		if r := ParseFrame(homaFrame(t, homa), &f); r != DropNone {
			t.Fatalf("ParseFrame = %v", r)
		}
		if off, p := Data(f.Homa).Segment(); off != tc.want || len(p) != 4 {
			t.Errorf("seq %d seg.offset %#x: Segment = %d, %d bytes; want %d, 4", tc.seq, tc.seg, off, len(p), tc.want)
		}
	}
}

func TestParseFrameTrustIPChecksum_skipsOnlyChecksum(t *testing.T) {
	b := homaFrame(t, sampleHoma(TypeGrant))
	ipAt(b).SetChecksum(0)
	var f Frame
	if r := ParseFrame(b, &f); r != DropBadIPChecksum {
		t.Fatalf("ParseFrame = %v, want %v", r, DropBadIPChecksum)
	}
	if r := ParseFrameTrustIPChecksum(b, &f); r != DropNone || f.Type != TypeGrant {
		t.Fatalf("ParseFrameTrustIPChecksum = %v, type %v", r, f.Type)
	}
	b[14+ipProtocol] = 17
	if r := ParseFrameTrustIPChecksum(b, &f); r != DropNotHoma {
		t.Errorf("ParseFrameTrustIPChecksum on UDP = %v, want %v", r, DropNotHoma)
	}
}

func TestParseIPv4_boundsView(t *testing.T) {
	b := homaFrame(t, sampleHoma(TypeBusy))[EthernetHeaderLen:]
	ip, r := ParseIPv4(append(b, 1, 2, 3))
	if r != DropNone || len(ip) != 48 || len(ip.Payload()) != ControlHeaderLen {
		t.Errorf("ParseIPv4 = %d bytes, %v", len(ip), r)
	}
	if ip, r := ParseIPv4(b[:10]); ip != nil || r != DropShortIPHeader {
		t.Errorf("ParseIPv4(10 bytes) = %v, %v", ip, r)
	}
}

func TestFrame_clone(t *testing.T) {
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(3, false, 7)}
	homa := append(sampleHoma(TypeData), "payload"...)
	b := append(buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 5, len(homa)), homa), 0, 0) // padded
	var f Frame
	if r := ParseFrame(b, &f); r != DropNone {
		t.Fatalf("ParseFrame = %v", r)
	}
	c := f.Clone()
	for i := range b {
		b[i] = 0 // the original buffer is reused
	}
	if c.Type != TypeData || string(c.Payload) != "payload" || c.VLAN.PCP() != 3 || c.Priority() != 5 ||
		Data(c.Homa).MessageLength() != 100 || c.Len() != len(b)-2 {
		t.Errorf("clone does not survive the original: %+v", c)
	}
	var zero Frame
	if z := zero.Clone(); z.Ethernet != nil || z.Homa != nil {
		t.Errorf("Clone of a zero Frame = %+v", z)
	}
}

func TestDropReason_strings(t *testing.T) {
	seen := map[string]bool{}
	for r := DropNone; r < NumDropReasons; r++ {
		s := r.String()
		if s == "" || s == "unknown" || seen[s] {
			t.Errorf("DropReason(%d).String() = %q (duplicate or missing)", r, s)
		}
		seen[s] = true
	}
	if NumDropReasons.String() != "unknown" {
		t.Errorf("out-of-range reason String = %q", NumDropReasons.String())
	}
}

// TestParseFrame_roundTripRandom builds frames from random fields of
// every type and checks that parsing gives the same fields back.
func TestParseFrame_roundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 5000; i++ {
		typ := allTypes[rng.Intn(len(allTypes))]
		homa := make([]byte, typ.HeaderLen()+rng.Intn(64))
		rng.Read(homa)
		Common(homa).SetType(typ)
		if typ == TypeAck {
			Ack(homa).SetNumAcks(uint16(rng.Intn(MaxAcks + 1)))
		}
		eth := EthernetFields{Dst: MAC{byte(i)}, Src: MAC{1, byte(i >> 8)}, Type: EtherTypeIPv4}
		if rng.Intn(2) == 0 {
			eth.Tagged, eth.TCI = true, uint16(rng.Intn(0x10000))
		}
		ipf := HomaIPv4Fields([4]byte{10, 0, byte(i), 1}, testIP2, uint8(rng.Intn(8)), len(homa))
		ipf.ID = uint16(rng.Intn(0x10000))
		b := buildFrame(t, eth, ipf, homa)
		var f Frame
		if r := ParseFrame(b, &f); r != DropNone {
			t.Fatalf("case %d (%v): ParseFrame = %v", i, typ, r)
		}
		if f.Type != typ || f.EthernetFields() != eth || f.IPv4.Fields() != ipf || !bytes.Equal(f.Homa, homa) {
			t.Fatalf("case %d (%v): parsed frame differs from what was built:\n%+v %+v\n%+v %+v",
				i, typ, f.EthernetFields(), eth, f.IPv4.Fields(), ipf)
		}
		if got, want := reencode(t, f.Homa), canonical(homa, typ.HeaderLen()); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%v): re-encoded\n% x\nwant\n% x", i, typ, got, want)
		}
	}
}

func TestParseFrame_allocs(t *testing.T) {
	data := homaFrame(t, append(sampleHoma(TypeData), make([]byte, 1424)...))
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(7, false, 1)}
	tagged := buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 7, GrantHeaderLen), sampleHoma(TypeGrant))
	bad := homaFrame(t, sampleHoma(TypeData))
	ipAt(bad).SetChecksum(1)
	for name, b := range map[string][]byte{"DATA": data, "tagged GRANT": tagged, "bad checksum": bad} {
		var f Frame
		var sink uint32
		n := testing.AllocsPerRun(1000, func() {
			if ParseFrame(b, &f) == DropNone && f.Type == TypeData {
				off, p := Data(f.Homa).Segment()
				sink += off + uint32(len(p))
			}
		})
		if n != 0 {
			t.Errorf("%s: ParseFrame allocates %v times per call", name, n)
		}
		_ = sink
	}
}

func BenchmarkParseFrame(b *testing.B) {
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(7, false, 1)}
	for _, bc := range []struct {
		name  string
		frame []byte
	}{
		{"DATA1424", homaFrame(b, append(sampleHoma(TypeData), make([]byte, 1424)...))},
		{"GRANT", homaFrame(b, sampleHoma(TypeGrant))},
		{"taggedGRANT", buildFrame(b, eth, HomaIPv4Fields(testIP1, testIP2, 7, GrantHeaderLen), sampleHoma(TypeGrant))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var f Frame
			b.ReportAllocs()
			for b.Loop() {
				if ParseFrame(bc.frame, &f) != DropNone {
					b.Fatal("drop")
				}
			}
		})
	}
}

// BenchmarkParseFrameTrustIPChecksum measures what RX checksum offload
// saves ParseFrame.
func BenchmarkParseFrameTrustIPChecksum(b *testing.B) {
	frame := homaFrame(b, append(sampleHoma(TypeData), make([]byte, 1424)...))
	var f Frame
	b.ReportAllocs()
	for b.Loop() {
		if ParseFrameTrustIPChecksum(frame, &f) != DropNone {
			b.Fatal("drop")
		}
	}
}
