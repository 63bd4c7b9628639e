package wire

import (
	"bytes"
	"math/rand"
	"testing"
)

// naiveChecksum is RFC 1071 word by word, the reference for Checksum.
func naiveChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func TestChecksum_knownHeader(t *testing.T) {
	// A widely published example IPv4 header whose checksum is 0xb861.
	h := mustHex(t, "45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7")
	if got := IPv4HeaderChecksum(h); got != 0xb861 {
		t.Errorf("IPv4HeaderChecksum = %#04x, want 0xb861", got)
	}
	if !IPv4(h).IsChecksumValid() {
		t.Errorf("IsChecksumValid = false for a correct header")
	}
	h[ipTTL]--
	if IPv4(h).IsChecksumValid() {
		t.Errorf("IsChecksumValid = true after changing the TTL")
	}
}

func TestChecksum_matchesNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.Intn(80))
		rng.Read(b)
		init := uint16(rng.Intn(0x10000))
		want := naiveChecksum(append([]byte{byte(init >> 8), byte(init)}, b...))
		if got := Checksum(b, init); got != want {
			t.Fatalf("Checksum(% x, %#x) = %#x, want %#x", b, init, got, want)
		}
	}
}

func TestChecksum_oddLength(t *testing.T) {
	if got := Checksum([]byte{0x01, 0x02, 0x03}, 0); got != 0x0402 {
		t.Errorf("Checksum(01 02 03) = %#x, want 0x0402", got)
	}
}

func TestIPv4Fields_encode(t *testing.T) {
	f := HomaIPv4Fields(testIP1, testIP2, 7, GrantHeaderLen)
	b := bytes.Repeat([]byte{0xAA}, 21)
	if n := f.Encode(b); n != IPv4MinHeaderLen {
		t.Fatalf("Encode = %d", n)
	}
	// Same header as in goldenGrantFrame; checksum computed independently.
	want := mustHex(t, "45 e0 00 35 00 00 40 00 40 92 25 55 0a 00 00 01 0a 00 00 02 aa")
	if !bytes.Equal(b, want) {
		t.Fatalf("bytes =\n% x\nwant\n% x", b, want)
	}
	ip := IPv4(b[:20])
	if ip.IsValid() {
		t.Errorf("IsValid = true for a 20-byte view whose total length is 53")
	}
	if ip.Version() != 4 || ip.HeaderLen() != 20 || ip.Protocol() != IPProtoHoma ||
		ip.Flags() != IPv4FlagDF || ip.IsFragment() || ip.Priority() != 7 || ip.TTL() != 64 {
		t.Errorf("accessors disagree with the encoded header: %+v", ip.Fields())
	}
	if got := ip.Fields(); got != f {
		t.Errorf("Fields = %+v, want %+v", got, f)
	}
}

func TestIPv4Fields_noChecksum(t *testing.T) {
	f := HomaIPv4Fields(testIP1, testIP2, 0, 0)
	f.NoChecksum = true
	b := make([]byte, 20)
	f.Encode(b)
	if IPv4(b).Checksum() != 0 {
		t.Errorf("checksum %#x with NoChecksum", IPv4(b).Checksum())
	}
}

func TestIPv4Fields_shortBuffer(t *testing.T) {
	f := HomaIPv4Fields(testIP1, testIP2, 0, 0)
	b := make([]byte, 19)
	if n := f.Encode(b); n != 0 || !bytes.Equal(b, make([]byte, 19)) {
		t.Errorf("Encode into 19 bytes = %d, wrote % x", n, b)
	}
}

func TestIPv4_updateChecksumAfterSetTOS(t *testing.T) {
	f := HomaIPv4Fields(testIP1, testIP2, 1, 100)
	b := make([]byte, 20)
	f.Encode(b)
	ip := IPv4(b)
	ip.SetTOS(TOSFromPriority(6))
	if ip.IsChecksumValid() {
		t.Fatalf("checksum still valid after SetTOS; the test cannot see UpdateChecksum work")
	}
	ip.UpdateChecksum()
	if !ip.IsChecksumValid() || ip.Priority() != 6 {
		t.Errorf("after UpdateChecksum: valid %v priority %d", ip.IsChecksumValid(), ip.Priority())
	}
}

func TestIPv4_fragmentBits(t *testing.T) {
	for _, tc := range []struct {
		flags uint8
		off   uint16
		frag  bool
	}{
		{IPv4FlagDF, 0, false},
		{0, 0, false},
		{IPv4FlagMF, 0, true},
		{0, 1, true},
		{IPv4FlagDF, 0x1fff, true},
		{0x4, 0, false}, // reserved bit alone is not fragmentation
	} {
		f := IPv4Fields{Flags: tc.flags, FragOffset: tc.off}
		b := make([]byte, 20)
		f.Encode(b)
		ip := IPv4(b)
		if ip.IsFragment() != tc.frag || ip.Flags() != tc.flags || ip.FragmentOffset() != tc.off {
			t.Errorf("flags %#x off %d: IsFragment %v Flags %#x FragmentOffset %d", tc.flags, tc.off, ip.IsFragment(), ip.Flags(), ip.FragmentOffset())
		}
	}
}

func TestIPv4_options(t *testing.T) {
	// IHL 6: four option bytes (NOPs) before a 3-byte payload.
	f := HomaIPv4Fields(testIP1, testIP2, 0, 0)
	b := make([]byte, 27)
	f.Encode(b)
	b[ipVerIHL] = 0x46
	copy(b[20:], []byte{1, 1, 1, 1, 9, 8, 7})
	ip := IPv4(b)
	ip.SetTotalLength(27)
	ip.UpdateChecksum()
	if !ip.IsValid() || ip.HeaderLen() != 24 || !bytes.Equal(ip.Options(), []byte{1, 1, 1, 1}) ||
		!bytes.Equal(ip.Payload(), []byte{9, 8, 7}) || !ip.IsChecksumValid() {
		t.Errorf("IHL 6: valid %v hl %d options % x payload % x", ip.IsValid(), ip.HeaderLen(), ip.Options(), ip.Payload())
	}
}

func TestPriority_tos(t *testing.T) {
	if PriorityFromTOS(0xa0) != 5 || TOSFromPriority(5) != 0xa0 {
		t.Errorf("TOS 0xa0 <-> priority 5 broken")
	}
	for p := uint8(0); p < NumPriorities; p++ {
		tos := TOSFromPriority(p)
		if tos&0x1f != 0 || PriorityFromTOS(tos) != p || PriorityFromTOS(tos|0x1f) != p {
			t.Errorf("priority %d -> TOS %#x -> %d", p, tos, PriorityFromTOS(tos))
		}
	}
	if TOSFromPriority(9) != TOSFromPriority(1) {
		t.Errorf("TOSFromPriority does not take p modulo 8")
	}
}

func BenchmarkIPv4Fields_encode(b *testing.B) {
	f := HomaIPv4Fields(testIP1, testIP2, 5, 1480)
	buf := make([]byte, 20)
	b.ReportAllocs()
	for b.Loop() {
		f.Encode(buf)
	}
}

// TestIPv4Fields_checksumZero covers the header whose correct checksum is
// 0: Fields must not mistake it for an offloaded (unfilled) checksum.
func TestIPv4Fields_checksumZero(t *testing.T) {
	f := HomaIPv4Fields(testIP1, testIP2, 0, 0)
	b := make([]byte, 20)
	for id := 0; id < 0x10000; id++ {
		f.ID = uint16(id)
		f.Encode(b)
		if IPv4(b).Checksum() == 0 {
			break
		}
	}
	if IPv4(b).Checksum() != 0 {
		t.Fatalf("no ID gives checksum 0; the test needs another header")
	}
	if !IPv4(b).IsChecksumValid() || IPv4(b).Fields() != f {
		t.Errorf("checksum-0 header: valid %v Fields %+v", IPv4(b).IsChecksumValid(), IPv4(b).Fields())
	}
	// 0xffff is the other one's-complement zero; like Linux, accept it.
	IPv4(b).SetChecksum(0xffff)
	if !IPv4(b).IsChecksumValid() {
		t.Errorf("checksum 0xffff rejected where 0 is correct")
	}
	f.NoChecksum = true
	f.ID++
	f.Encode(b)
	if IPv4(b).Fields() != f {
		t.Errorf("offloaded header: Fields %+v, want %+v", IPv4(b).Fields(), f)
	}
}
