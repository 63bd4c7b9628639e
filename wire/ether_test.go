package wire

import (
	"bytes"
	"testing"
)

func TestEthernet_accessors(t *testing.T) {
	b := make([]byte, EthernetHeaderLen)
	e := Ethernet(b)
	if !e.IsValid() || Ethernet(b[:13]).IsValid() {
		t.Fatalf("IsValid wrong at 14/13 bytes")
	}
	e.SetDst(MAC{1, 2, 3, 4, 5, 6})
	e.SetSrc(MAC{7, 8, 9, 10, 11, 12})
	e.SetType(EtherTypeIPv4)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00}
	if !bytes.Equal(b, want) {
		t.Fatalf("bytes = % x, want % x", b, want)
	}
	if e.Dst() != (MAC{1, 2, 3, 4, 5, 6}) || e.Src() != (MAC{7, 8, 9, 10, 11, 12}) || e.Type() != 0x0800 {
		t.Errorf("accessors: dst %v src %v type %#x", e.Dst(), e.Src(), e.Type())
	}
}

func TestEthernetFields_untagged(t *testing.T) {
	f := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4}
	b := bytes.Repeat([]byte{0xAA}, 20)
	if n := f.Encode(b); n != 14 || f.Len() != 14 {
		t.Fatalf("Encode = %d, Len = %d; want 14", n, f.Len())
	}
	want := mustHex(t, "02 00 00 00 00 02 02 00 00 00 00 01 08 00 aa")
	if !bytes.Equal(b[:15], want) {
		t.Errorf("bytes = % x, want % x", b[:15], want)
	}
	if got := Ethernet(b).Fields(); got != f {
		t.Errorf("Fields = %+v, want %+v", got, f)
	}
}

func TestEthernetFields_tagged(t *testing.T) {
	f := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4, Tagged: true, TCI: MakeTCI(5, false, 100)}
	b := make([]byte, 18)
	if n := f.Encode(b); n != 18 {
		t.Fatalf("Encode = %d, want 18", n)
	}
	want := mustHex(t, "02 00 00 00 00 02 02 00 00 00 00 01 81 00 a0 64 08 00")
	if !bytes.Equal(b, want) {
		t.Fatalf("bytes = % x, want % x", b, want)
	}
	v := VLAN(b[EthernetHeaderLen:])
	if !v.IsValid() || v.PCP() != 5 || v.DEI() || v.VID() != 100 || v.Type() != EtherTypeIPv4 {
		t.Errorf("tag: pcp %d dei %v vid %d type %#x", v.PCP(), v.DEI(), v.VID(), v.Type())
	}
}

func TestEthernetFields_shortBuffer(t *testing.T) {
	for _, f := range []EthernetFields{{Type: EtherTypeIPv4}, {Tagged: true}} {
		b := bytes.Repeat([]byte{0xAA}, f.Len()-1)
		if n := f.Encode(b); n != 0 {
			t.Errorf("Encode into %d bytes = %d, want 0", len(b), n)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{0xAA}, len(b))) {
			t.Errorf("Encode into a short buffer wrote to it")
		}
	}
}

func TestMakeTCI_parts(t *testing.T) {
	for _, tc := range []struct {
		pcp  uint8
		dei  bool
		vid  uint16
		want uint16
	}{
		{0, false, 0, 0x0000},
		{7, false, 0, 0xe000},
		{0, true, 0, 0x1000},
		{0, false, 4095, 0x0fff},
		{3, true, 42, 0x702a},
		{9, false, 4097, 0x2001}, // both taken modulo their width
	} {
		if got := MakeTCI(tc.pcp, tc.dei, tc.vid); got != tc.want {
			t.Errorf("MakeTCI(%d, %v, %d) = %#04x, want %#04x", tc.pcp, tc.dei, tc.vid, got, tc.want)
		}
	}
}

func TestVLAN_setPCPKeepsRest(t *testing.T) {
	v := VLAN(make([]byte, VLANTagLen))
	v.SetTCI(MakeTCI(2, true, 0xabc))
	v.SetPCP(6)
	if v.PCP() != 6 || !v.DEI() || v.VID() != 0xabc {
		t.Errorf("after SetPCP(6): pcp %d dei %v vid %#x", v.PCP(), v.DEI(), v.VID())
	}
}

func TestMAC_string(t *testing.T) {
	if got := (MAC{0x02, 0xab, 0, 0xff, 0x10, 0x01}).String(); got != "02:ab:00:ff:10:01" {
		t.Errorf("String = %q", got)
	}
}
