package wire

import (
	"bytes"
	"testing"
)

func TestParseLink_untaggedTaggedAndShort(t *testing.T) {
	homa := sampleHoma(TypeGrant)
	plain := homaFrame(t, homa)
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(5, false, 9)}
	tagged := buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 3, len(homa)), homa)
	arp := append([]byte(nil), plain...)
	Ethernet(arp).SetType(EtherTypeARP)
	for _, tc := range []struct {
		name    string
		b       []byte
		want    DropReason
		typ     uint16
		vlan    bool
		payload int // offset of the payload in b
	}{
		{"untagged IPv4", plain, DropNone, EtherTypeIPv4, false, 14},
		{"tagged IPv4", tagged, DropNone, EtherTypeIPv4, true, 18},
		{"ARP", arp, DropNone, EtherTypeARP, false, 14},
		{"header only", plain[:14], DropNone, EtherTypeIPv4, false, 14},
		{"13 bytes", plain[:13], DropShortFrame, 0, false, 0},
		{"tag cut off", tagged[:17], DropShortFrame, 0, false, 0},
		{"empty", nil, DropShortFrame, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Link{Type: 0x7777, Payload: []byte{1}} // reset on every call
			if r := ParseLink(tc.b, &l); r != tc.want {
				t.Fatalf("ParseLink = %v, want %v", r, tc.want)
			}
			if tc.want != DropNone {
				if l.Ethernet != nil || l.VLAN != nil || l.Type != 0 || l.Payload != nil {
					t.Fatalf("Link not zeroed after a drop: %+v", l)
				}
				return
			}
			if l.Type != tc.typ || (l.VLAN != nil) != tc.vlan || len(l.Ethernet) != EthernetHeaderLen ||
				len(l.Payload) != len(tc.b)-tc.payload {
				t.Fatalf("Link %+v", l)
			}
			if len(l.Payload) > 0 && &l.Payload[0] != &tc.b[tc.payload] {
				t.Fatal("Payload does not alias the frame")
			}
			if tc.vlan && (l.VLAN.PCP() != 5 || l.VLAN.VID() != 9) {
				t.Fatalf("tag %x", []byte(l.VLAN))
			}
		})
	}
}

func TestParseHomaIPv4_continuesFromLink(t *testing.T) {
	b := homaFrame(t, append(sampleHoma(TypeData), "payload"...))
	var l Link
	if ParseLink(b, &l) != DropNone {
		t.Fatal("link")
	}
	var f, want Frame
	if r := ParseHomaIPv4(&l, &f, true); r != DropNone {
		t.Fatalf("ParseHomaIPv4 = %v", r)
	}
	ParseFrame(b, &want)
	if !sameFrame(&f, &want) || string(f.Payload) != "payload" {
		t.Fatalf("frame %+v, want %+v", f, want)
	}
	// Another EtherType, a bad checksum (verified or trusted).
	l.Type = EtherTypeARP
	f.Type = 0x77
	if r := ParseHomaIPv4(&l, &f, true); r != DropNotIPv4 || f.Type != 0 {
		t.Fatalf("ARP: %v, frame %+v", r, f)
	}
	ipAt(b).SetChecksum(ipAt(b).Checksum() ^ 1)
	ParseLink(b, &l)
	if r := ParseHomaIPv4(&l, &f, true); r != DropBadIPChecksum || f.Ethernet != nil {
		t.Fatalf("bad checksum verified: %v", r)
	}
	if r := ParseHomaIPv4(&l, &f, false); r != DropNone {
		t.Fatalf("bad checksum trusted: %v", r)
	}
}

func TestParseLink_allocs(t *testing.T) {
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(7, false, 1)}
	b := buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 7, GrantHeaderLen), sampleHoma(TypeGrant))
	var l Link
	var f Frame
	n := testing.AllocsPerRun(1000, func() {
		if ParseLink(b, &l) != DropNone || ParseHomaIPv4(&l, &f, true) != DropNone {
			t.Fatal("drop")
		}
	})
	if n != 0 {
		t.Errorf("ParseLink + ParseHomaIPv4 allocate %v times per frame", n)
	}
}

// sameFrame reports whether two Frames hold the same views (the same
// bytes at the same addresses).
func sameFrame(a, b *Frame) bool {
	same := func(x, y []byte) bool {
		return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]) && (x == nil) == (y == nil)
	}
	return a.Type == b.Type && same(a.Ethernet, b.Ethernet) && same(a.VLAN, b.VLAN) &&
		same(a.IPv4, b.IPv4) && same(a.Homa, b.Homa) && same(a.Payload, b.Payload)
}

// FuzzParseLink: ParseLink then ParseHomaIPv4 give ParseFrame's (and
// ParseFrameTrustIPChecksum's) result on every input, the same reason and
// the same views, and the Link covers the frame exactly.
func FuzzParseLink(f *testing.F) {
	for _, s := range seedFrames(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Link
		lr := ParseLink(b, &l)
		switch {
		case lr != DropNone && lr != DropShortFrame:
			t.Fatalf("ParseLink = %v", lr)
		case lr == DropNone:
			hl := len(l.Ethernet) + len(l.VLAN)
			if len(l.Ethernet) != EthernetHeaderLen || hl+len(l.Payload) != len(b) ||
				!bytes.Equal(l.Ethernet, b[:EthernetHeaderLen]) ||
				(l.VLAN == nil) != (Ethernet(b).Type() != EtherTypeVLAN) {
				t.Fatalf("Link %+v of % x", l, b)
			}
		}
		for _, verify := range []bool{true, false} {
			var whole, split Frame
			want := parseFrame(b, &whole, verify)
			got := lr
			if lr == DropNone {
				got = ParseHomaIPv4(&l, &split, verify)
			}
			if got != want || !sameFrame(&split, &whole) {
				t.Fatalf("verify %v: ParseLink+ParseHomaIPv4 = %v %+v, ParseFrame = %v %+v", verify, got, split, want, whole)
			}
		}
	})
}

// BenchmarkParseLink measures the link-header decode a polling loop does
// once per frame, and ParseHomaIPv4 after it.
func BenchmarkParseLink(b *testing.B) {
	frame := homaFrame(b, sampleHoma(TypeGrant))
	var l Link
	var f Frame
	b.Run("link", func(b *testing.B) {
		for b.Loop() {
			ParseLink(frame, &l)
		}
	})
	b.Run("link+homa", func(b *testing.B) {
		for b.Loop() {
			if ParseLink(frame, &l) != DropNone || ParseHomaIPv4(&l, &f, true) != DropNone {
				b.Fatal("drop")
			}
		}
	})
}
