package wire

import (
	"encoding/hex"
	"strings"
	"testing"
)

// mustHex decodes hex bytes written with any amount of white space.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

var (
	testMAC1 = MAC{0x02, 0, 0, 0, 0, 0x01}
	testMAC2 = MAC{0x02, 0, 0, 0, 0, 0x02}
	testIP1  = [4]byte{10, 0, 0, 1}
	testIP2  = [4]byte{10, 0, 0, 2}
)

// buildFrame encodes eth, then ip (with TotalLength fixed up to cover
// homa), then copies homa after them.
func buildFrame(t testing.TB, eth EthernetFields, ip IPv4Fields, homa []byte) []byte {
	t.Helper()
	ip.TotalLength = uint16(IPv4MinHeaderLen + len(homa))
	b := make([]byte, eth.Len()+IPv4MinHeaderLen+len(homa))
	n := eth.Encode(b)
	if n != eth.Len() {
		t.Fatalf("EthernetFields.Encode = %d, want %d", n, eth.Len())
	}
	if m := ip.Encode(b[n:]); m != IPv4MinHeaderLen {
		t.Fatalf("IPv4Fields.Encode = %d", m)
	}
	copy(b[n+IPv4MinHeaderLen:], homa)
	return b
}

// homaFrame wraps a Homa packet in an untagged Ethernet/IPv4 frame at
// priority 7.
func homaFrame(t testing.TB, homa []byte) []byte {
	t.Helper()
	eth := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv4}
	return buildFrame(t, eth, HomaIPv4Fields(testIP1, testIP2, 7, len(homa)), homa)
}

// canonical returns a copy of the first n bytes of the Homa packet b with
// the bytes encoders always write as zero (the common header's three
// unused bytes) set to zero. DATA's pad bytes are a field (DataFields.Pad)
// and round-trip.
func canonical(b []byte, n int) []byte {
	c := append([]byte(nil), b[:n]...)
	c[commonUnused], c[commonUnused+1], c[commonUnused+2] = 0, 0, 0
	return c
}

// reencode decodes the header of the valid Homa packet c with the typed
// Fields method for its type and encodes it again into a fresh buffer.
func reencode(t testing.TB, c Common) []byte {
	t.Helper()
	typ := c.Type()
	out := make([]byte, MaxHeaderLen)
	var n int
	switch typ {
	case TypeData:
		f := Data(c).Fields()
		n = f.Encode(out)
	case TypeGrant:
		f := Grant(c).Fields()
		n = f.Encode(out)
	case TypeResend:
		f := Resend(c).Fields()
		n = f.Encode(out)
	case TypeCutoffs:
		f := Cutoffs(c).Fields()
		n = f.Encode(out)
	case TypeAck:
		f := Ack(c).Fields()
		n = f.Encode(out)
	default:
		f := c.ControlFields()
		n = f.Encode(out)
	}
	if n != headerLen(c) {
		t.Fatalf("re-encoding %v wrote %d bytes, want %d", typ, n, headerLen(c))
	}
	return out[:n]
}

// headerLen is the header length of the valid Homa packet c: its type's,
// or the upstream subset's 36 bytes for a RESEND without a priority.
func headerLen(c Common) int {
	if c.Type() == TypeResend && !Resend(c).HasPriority() {
		return ResendUpstreamLen
	}
	return c.Type().HeaderLen()
}
