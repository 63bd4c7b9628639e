package wire

import (
	"bytes"
	"testing"
)

// A request "who has 10.0.0.2? tell 10.0.0.1" as a Linux host sends it.
var arpRequestVector = []byte{
	0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
	0x02, 0x00, 0x0a, 0x00, 0x00, 0x01, 10, 0, 0, 1,
	0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
}

func TestARP_encodeMatchesVectorAndDecodes(t *testing.T) {
	f := ARPFields{Op: ARPRequest, SenderMAC: MAC{2, 0, 10, 0, 0, 1}, SenderIP: [4]byte{10, 0, 0, 1}, TargetIP: [4]byte{10, 0, 0, 2}}
	b := bytes.Repeat([]byte{0xee}, ARPLen)
	if n := f.Encode(b); n != ARPLen || !bytes.Equal(b, arpRequestVector) {
		t.Fatalf("encoded %d bytes:\n% x\nwant\n% x", n, b, arpRequestVector)
	}
	a := ARP(arpRequestVector)
	if !a.IsValid() || a.Op() != ARPRequest || a.SenderMAC() != f.SenderMAC || a.SenderIP() != f.SenderIP ||
		a.TargetIP() != f.TargetIP || a.TargetMAC() != (MAC{}) {
		t.Errorf("decoded %v %v %v %v", a.Op(), a.SenderMAC(), a.SenderIP(), a.TargetIP())
	}
	if f.Encode(make([]byte, ARPLen-1)) != 0 {
		t.Error("encoded into a short buffer")
	}
}

func TestARP_invalid(t *testing.T) {
	for name, b := range map[string][]byte{
		"short":         arpRequestVector[:ARPLen-1],
		"not ethernet":  append([]byte{0, 6}, arpRequestVector[2:]...),
		"not ipv4":      append([]byte{0, 1, 0x86, 0xdd}, arpRequestVector[4:]...),
		"wrong lengths": append(append([]byte{}, arpRequestVector[:4]...), append([]byte{6, 16}, arpRequestVector[6:]...)...),
	} {
		if ARP(b).IsValid() {
			t.Errorf("%s: accepted", name)
		}
	}
}
