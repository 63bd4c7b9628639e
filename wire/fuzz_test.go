package wire

import (
	"bytes"
	"testing"
)

// Every parser has a fuzz target. Each must never panic; where the input
// is accepted, decoding to fields and encoding again must give back the
// input bytes, except for the bytes encoders always write as zero (see
// canonical) and, for IPv4, options.

// seedFrames returns valid frames of every type, tagged and untagged,
// with and without IPv4 options and link padding.
func seedFrames(t testing.TB) [][]byte {
	var seeds [][]byte
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(5, false, 9)}
	for _, typ := range allTypes {
		homa := sampleHoma(typ)
		seeds = append(seeds, homaFrame(t, homa))
		seeds = append(seeds, buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 3, len(homa)), homa))
	}
	seeds = append(seeds, homaFrame(t, append(sampleHoma(TypeData), "some message bytes"...)))
	seeds = append(seeds, append(homaFrame(t, sampleHoma(TypeBusy)), 0, 0, 1, 2, 3, 4))
	opt := homaFrame(t, sampleHoma(TypeGrant))
	opt = append(append(append([]byte{}, opt[:34]...), 1, 1, 1, 0), opt[34:]...)
	ipAt(opt)[ipVerIHL] = 0x46
	ipAt(opt).SetTotalLength(24 + GrantHeaderLen)
	ipAt(opt)[:24].UpdateChecksum()
	seeds = append(seeds, opt)
	return seeds
}

// seedHoma returns the golden vectors and a valid header of every type.
func seedHoma(t testing.TB) [][]byte {
	seeds := [][]byte{mustHex(t, goldenData), mustHex(t, goldenGrant), mustHex(t, goldenResend)}
	for _, typ := range allTypes {
		seeds = append(seeds, sampleHoma(typ))
	}
	return seeds
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range seedFrames(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		r := ParseFrame(b, &fr)
		if r >= NumDropReasons {
			t.Fatalf("reason %d out of range", r)
		}
		var trusted Frame
		rt := ParseFrameTrustIPChecksum(b, &trusted)
		if r != DropNone {
			if fr.Ethernet != nil || fr.VLAN != nil || fr.IPv4 != nil || fr.Homa != nil || fr.Payload != nil || fr.Type != 0 {
				t.Fatalf("dropped (%v) but Frame not zeroed", r)
			}
			if rt == DropNone && r != DropBadIPChecksum {
				t.Fatalf("ParseFrame = %v but the trusting variant accepts", r)
			}
			if rt == DropNone {
				// Random bytes rarely carry a valid checksum; the
				// trusting variant takes the fuzzer past it.
				checkAcceptedFrame(t, b, &trusted, false)
			}
			return
		}
		if rt != DropNone || trusted.Type != fr.Type || len(trusted.Homa) != len(fr.Homa) {
			t.Fatalf("trusting variant disagrees: %v", rt)
		}
		checkAcceptedFrame(t, b, &fr, true)
	})
}

// checkAcceptedFrame checks the invariants of a frame the parser accepted
// and that its headers re-encode to the bytes they came from. verified
// says whether the IPv4 checksum was checked.
func checkAcceptedFrame(t *testing.T, b []byte, fr *Frame, verified bool) {
	hl := fr.Type.HeaderLen()
	if hl != 0 && len(fr.Homa) >= CommonHeaderLen {
		hl = headerLen(fr.Homa)
	}
	hijacked := fr.IPv4.Protocol() == IPProtoTCP && fr.Homa.IsHijacked()
	if hl == 0 || len(fr.Homa) < hl || !bytes.Equal(fr.Payload, fr.Homa[hl:]) || fr.Len() > len(b) ||
		!fr.IPv4.IsValid() || fr.IPv4.Protocol() != IPProtoHoma && !hijacked || fr.Hijacked != hijacked || fr.IPv4.IsFragment() ||
		verified && !fr.IPv4.IsChecksumValid() {
		t.Fatalf("accepted frame breaks an invariant: type %v homa %d", fr.Type, len(fr.Homa))
	}
	if _, r := ParseHoma(fr.Homa); r != DropNone {
		t.Fatalf("ParseHoma rejects the Homa packet of an accepted frame: %v", r)
	}
	// Re-encode the link header.
	ef := fr.EthernetFields()
	link := make([]byte, ef.Len())
	if ef.Encode(link) != len(link) || !bytes.Equal(link, b[:len(link)]) {
		t.Fatalf("link header re-encodes as % x, was % x", link, b[:len(link)])
	}
	// Re-encode the IPv4 header when it has no options and a checksum
	// the fields can express.
	if fr.IPv4.HeaderLen() == IPv4MinHeaderLen && fr.IPv4.IsChecksumValid() {
		ipf := fr.IPv4.Fields()
		ip := make([]byte, IPv4MinHeaderLen)
		if ipf.Encode(ip) != IPv4MinHeaderLen || !sameIPv4Header(ip, fr.IPv4[:IPv4MinHeaderLen]) {
			t.Fatalf("IPv4 header re-encodes as % x, was % x", ip, []byte(fr.IPv4[:IPv4MinHeaderLen]))
		}
	}
	// Re-encode the Homa header.
	if got, want := reencode(t, fr.Homa), canonical(fr.Homa, hl); !bytes.Equal(got, want) {
		t.Fatalf("%v header re-encodes as\n% x\nwas\n% x", fr.Type, got, want)
	}
}

// sameIPv4Header compares two 20-byte headers, treating checksum fields
// 0x0000 and 0xffff as equal: both are one's-complement zero, receivers
// accept either, and the encoder writes 0x0000 as Linux does.
func sameIPv4Header(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, cb := IPv4(a).Checksum(), IPv4(b).Checksum()
	return (ca == 0 && cb == 0xffff || ca == 0xffff && cb == 0) &&
		bytes.Equal(a[:ipChecksum], b[:ipChecksum]) && bytes.Equal(a[ipChecksum+2:], b[ipChecksum+2:])
}

func FuzzParseIPv4(f *testing.F) {
	for _, s := range seedFrames(f) {
		if Ethernet(s).Type() == EtherTypeIPv4 {
			f.Add(s[EthernetHeaderLen:])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, r := ParseIPv4(b)
		if r != DropNone {
			if ip != nil {
				t.Fatalf("dropped (%v) with a non-nil view", r)
			}
			return
		}
		if len(ip) != int(ip.TotalLength()) || !ip.IsValid() || !ip.IsChecksumValid() || ip.IsFragment() ||
			!(ip.Protocol() == IPProtoHoma || ip.Protocol() == IPProtoTCP && Common(ip.Payload()).IsHijacked()) ||
			&ip[0] != &b[0] || len(ip.Payload()) != len(ip)-ip.HeaderLen() {
			t.Fatalf("accepted packet breaks an invariant: % x", b)
		}
		if ip.HeaderLen() == IPv4MinHeaderLen {
			out := make([]byte, IPv4MinHeaderLen)
			ipf := ip.Fields()
			ipf.Encode(out)
			if !sameIPv4Header(out, ip[:IPv4MinHeaderLen]) {
				t.Fatalf("re-encodes as % x, was % x", out, []byte(ip[:IPv4MinHeaderLen]))
			}
		}
	})
}

func FuzzParseIPv6(f *testing.F) {
	f.Add(v6packet(nil, IPProtoHoma))
	f.Add(v6packet(nil, IPv6HopByHop, ext(IPv6DestOpts, 0), ext(IPProtoHoma, 1)))
	f.Add(v6packet(nil, IPv6HopByHop, ext(IPv6Fragment, 0), ext(IPProtoHoma, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, proto, off, r := ParseIPv6(b)
		if r != DropNone {
			if ip != nil || proto != 0 || off != 0 {
				t.Fatalf("dropped (%v) with a view", r)
			}
			return
		}
		if len(ip) != IPv6HeaderLen+int(ip.PayloadLength()) || len(ip) > len(b) || &ip[0] != &b[0] ||
			ip.Version() != 6 || off < IPv6HeaderLen || off > len(ip) || (off-IPv6HeaderLen)%8 != 0 ||
			off > IPv6HeaderLen+8*MaxIPv6ExtHeaders*256 || proto == IPv6Fragment || proto == IPv6HopByHop ||
			proto == IPv6Routing || proto == IPv6DestOpts {
			t.Fatalf("accepted packet breaks an invariant (proto %d, off %d): % x", proto, off, b)
		}
		out := make([]byte, IPv6HeaderLen)
		fl := ip.Fields()
		fl.Encode(out)
		if !bytes.Equal(out, ip[:IPv6HeaderLen]) {
			t.Fatalf("re-encodes as % x, was % x", out, []byte(ip[:IPv6HeaderLen]))
		}
	})
}

func FuzzParseHoma(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, r := ParseHoma(b)
		typedValid := Common(b).IsValid() && typ.IsValid() && (len(b) >= typ.HeaderLen() || typ == TypeResend && len(b) >= ResendUpstreamLen)
		if typedValid && typ == TypeAck {
			typedValid = Ack(b).IsValid()
		}
		if (r == DropNone) != typedValid {
			t.Fatalf("ParseHoma = %v, %v but the views say valid=%v", typ, r, typedValid)
		}
		if r != DropNone {
			return
		}
		if got, want := reencode(t, Common(b)), canonical(b, headerLen(b)); !bytes.Equal(got, want) {
			t.Fatalf("%v re-encodes as\n% x\nwas\n% x", typ, got, want)
		}
	})
}

// fuzzView checks a typed view of b as if b were of type typ: the type
// byte is forced so that every input exercises the view.
func fuzzView(t *testing.T, b []byte, typ PacketType) {
	c := append([]byte(nil), b...)
	Common(c).SetType(typ)
	hl := headerLen(c)
	if got, want := reencode(t, Common(c)), canonical(c, hl); !bytes.Equal(got, want) {
		t.Fatalf("%v re-encodes as\n% x\nwas\n% x", typ, got, want)
	}
}

func FuzzCommon(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Common(b)
		if !c.IsValid() {
			if len(b) >= CommonHeaderLen {
				t.Fatalf("IsValid false at %d bytes", len(b))
			}
			return
		}
		// The fields, written back with the setters, reproduce the header.
		cf := c.Fields()
		out := Common(make([]byte, CommonHeaderLen))
		out.SetSrcPort(cf.SrcPort)
		out.SetDstPort(cf.DstPort)
		out.SetSequence(cf.Sequence)
		out.SetType(c.Type())
		out.SetDoff(cf.Compat.Doff)
		out.SetFlags(cf.Compat.Flags)
		out.SetWindow(cf.Compat.Window)
		out.SetChecksum(cf.Compat.Checksum)
		out.SetUrgent(cf.Compat.Urgent)
		out.SetSenderID(cf.SenderID)
		if want := canonical(b, CommonHeaderLen); !bytes.Equal(out, want) {
			t.Fatalf("setters give\n% x\nwas\n% x", []byte(out), want)
		}
		// And so does the encoder.
		enc := Common(make([]byte, CommonHeaderLen))
		cf.encode(enc, c.Type())
		if !bytes.Equal(enc, out) {
			t.Fatalf("encode gives\n% x\nwant\n% x", []byte(enc), []byte(out))
		}
	})
}

func FuzzControl(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < ControlHeaderLen {
			return
		}
		typ := PacketType(b[commonType])
		if !IsControlType(typ) {
			var out [ControlHeaderLen]byte
			if cf := Common(b).ControlFields(); cf.Encode(out[:]) != 0 {
				t.Fatalf("ControlFields.Encode accepted type %v", typ)
			}
			typ = TypeBusy
		}
		fuzzView(t, b, typ)
	})
}

func FuzzData(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Data(b)
		if !d.IsValid() {
			return
		}
		off, payload := d.Segment()
		want := d.SegOffset()
		if want == OffsetInSequence {
			want = d.Common().Sequence()
		}
		if off != want || d.Offset() != want || len(payload) != len(b)-DataHeaderLen ||
			(len(payload) > 0 && &payload[0] != &b[DataHeaderLen]) {
			t.Fatalf("Segment = %d, %d bytes; want %d, %d bytes aliasing the packet", off, len(payload), want, len(b)-DataHeaderLen)
		}
		fuzzView(t, b, TypeData)
	})
}

func FuzzGrant(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Grant(b).IsValid() {
			fuzzView(t, b, TypeGrant)
		}
	})
}

func FuzzResend(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Resend(b).IsValid() {
			fuzzView(t, b, TypeResend)
		}
	})
}

func FuzzCutoffs(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Cutoffs(b).IsValid() {
			fuzzView(t, b, TypeCutoffs)
		}
	})
}

func FuzzAck(f *testing.F) {
	for _, s := range seedHoma(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a := Ack(b)
		if len(b) < AckHeaderLen {
			if a.IsValid() {
				t.Fatalf("IsValid at %d bytes", len(b))
			}
			return
		}
		if !a.IsValid() {
			if a.NumAcks() <= MaxAcks {
				t.Fatalf("IsValid false with num_acks %d", a.NumAcks())
			}
			var out [AckHeaderLen]byte
			if af := a.Fields(); af.Encode(out[:]) != 0 {
				t.Fatalf("AckFields.Encode accepted num_acks %d", af.NumAcks)
			}
			return
		}
		for i := 0; i < int(a.NumAcks()); i++ {
			e := a.Entry(i)
			if len(e) != AckEntryLen || &e[0] != &b[ackAcks+i*AckEntryLen] {
				t.Fatalf("Entry(%d) is not bytes %d..%d", i, ackAcks+i*AckEntryLen, ackAcks+(i+1)*AckEntryLen)
			}
		}
		fuzzView(t, b, TypeAck)
	})
}

func FuzzARP(f *testing.F) {
	f.Add(arpRequestVector)
	reply := ARPFields{Op: ARPReply, SenderMAC: testMAC2, SenderIP: testIP2, TargetMAC: testMAC1, TargetIP: testIP1}
	b := make([]byte, ARPLen+4)
	reply.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		a := ARP(b)
		if !a.IsValid() {
			return
		}
		// The accessors, encoded again, reproduce the packet.
		af := ARPFields{Op: a.Op(), SenderMAC: a.SenderMAC(), SenderIP: a.SenderIP(),
			TargetMAC: a.TargetMAC(), TargetIP: a.TargetIP()}
		out := make([]byte, ARPLen)
		if af.Encode(out) != ARPLen || !bytes.Equal(out, b[:ARPLen]) {
			t.Fatalf("re-encodes as % x, was % x", out, b[:ARPLen])
		}
	})
}

func FuzzICMP(f *testing.F) {
	f.Add(icmpEchoVector)
	f.Add(icmpEchoVector[:ICMPHeaderLen])
	f.Fuzz(func(t *testing.T, b []byte) {
		m := ICMP(b)
		if !m.IsValid() {
			if len(b) >= ICMPHeaderLen && Checksum(b, 0) == 0xffff {
				t.Fatalf("IsValid false with a good checksum: % x", b)
			}
			return
		}
		_, _, _, _ = m.Type(), m.Code(), m.ID(), m.Seq()
		// Turning it into a reply keeps it valid and changes only the
		// type and checksum.
		r := ICMP(append([]byte(nil), b...))
		r.SetType(ICMPEchoReply)
		r.UpdateChecksum()
		if !r.IsValid() || r.Type() != ICMPEchoReply || !bytes.Equal(r[4:], b[4:]) || r[1] != b[1] {
			t.Fatalf("reply % x from % x", []byte(r), b)
		}
	})
}
