package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// goldenHijackPayload is the 100-byte message of the checksum vectors:
// bytes 0, 1, ..., 99.
func goldenHijackPayload() []byte {
	p := make([]byte, 100)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

// The golden DATA packet (docs/wire.md#golden-vectors) with its 100
// message bytes 0..99, sent
// hijacked from 10.0.0.1 to 10.0.0.2 and from 2001:db8::1 to 2001:db8::2:
// its Homa checksums. tshark 4.0 (-o tcp.check_checksum:TRUE) reports
// both frames' tcp.checksum.status Good; the IPv4 frame is
// goldenHijackedIPv4.
const (
	goldenChecksumIPv4 = 0x34ca
	goldenChecksumIPv6 = 0xed57
	goldenHijackedIPv4 = `02 00 00 00 00 02 02 00 00 00 00 01 08 00
	45 a0 00 b0 00 00 40 00 40 06 25 a6 0a 00 00 01 0a 00 00 02
	80 00 00 63 00 00 00 00 00 00 00 10 e0 06 00 00 34 ca b9 7d 00 00 00 00 00 00 00 02
	00 00 00 64 00 00 00 64 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 ff ff ff ff`
)

var (
	goldenV4Src, goldenV4Dst = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	goldenV6Src              = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	goldenV6Dst              = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
)

func goldenHijackedHoma(t *testing.T) []byte {
	homa := make([]byte, DataHeaderLen)
	goldenDataFields.Encode(homa)
	return append(homa, goldenHijackPayload()...)
}

func TestHomaChecksum_golden(t *testing.T) {
	homa := goldenHijackedHoma(t)
	p4 := PseudoSumIPv4(goldenV4Src, goldenV4Dst, IPProtoTCP, len(homa))
	if c := HomaChecksum(p4, homa, nil); c != goldenChecksumIPv4 {
		t.Errorf("IPv4: %#04x, want %#04x", c, goldenChecksumIPv4)
	}
	p6 := PseudoSumIPv6(goldenV6Src, goldenV6Dst, IPProtoTCP, len(homa))
	if c := HomaChecksum(p6, homa, nil); c != goldenChecksumIPv6 {
		t.Errorf("IPv6: %#04x, want %#04x", c, goldenChecksumIPv6)
	}
	// The field's contents do not enter the sum; once set it verifies,
	// and any flipped bit fails.
	Common(homa).SetChecksum(0xdead)
	if c := HomaChecksum(p4, homa, nil); c != goldenChecksumIPv4 {
		t.Errorf("with the field set: %#04x", c)
	}
	if IsHomaChecksumValid(p4, homa, nil) {
		t.Error("0xdead verified")
	}
	Common(homa).SetChecksum(goldenChecksumIPv4)
	if !IsHomaChecksumValid(p4, homa, nil) {
		t.Error("the right checksum did not verify")
	}
	homa[70] ^= 4
	if IsHomaChecksumValid(p4, homa, nil) {
		t.Error("a flipped payload bit verified")
	}
	homa[70] ^= 4
	if IsHomaChecksumValid(PseudoSumIPv4(goldenV4Src, [4]byte{10, 0, 0, 3}, IPProtoTCP, len(homa)), homa, nil) {
		t.Error("another destination verified")
	}
}

// The whole hijacked frame of the vector parses, as a hijacked DATA
// packet with its payload.
func TestHomaChecksum_goldenFrameParses(t *testing.T) {
	b := append(mustHex(t, goldenHijackedIPv4), goldenHijackPayload()...)
	var f Frame
	if r := ParseFrame(b, &f); r != DropNone || f.Type != TypeData || !f.Hijacked || !bytes.Equal(f.Payload, goldenHijackPayload()) {
		t.Fatalf("ParseFrame = %v, type %v, hijacked %v, payload %d bytes", r, f.Type, f.Hijacked, len(f.Payload))
	}
	p := PseudoSumIPv4(f.IPv4.Src(), f.IPv4.Dst(), IPProtoTCP, len(f.Homa))
	if !IsHomaChecksumValid(p, f.Homa, nil) {
		t.Error("its checksum does not verify")
	}
}

// A packet in two pieces sums as the same bytes in one, whatever the
// parity of the first piece's length.
func TestHomaChecksum_twoPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, CommonHeaderLen+rng.IntN(1500))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		cut := CommonHeaderLen + rng.IntN(len(b)-CommonHeaderLen+1)
		p := uint16(rng.Uint32())
		one, two := HomaChecksum(p, b, nil), HomaChecksum(p, b[:cut], b[cut:])
		if one != two {
			t.Fatalf("%d bytes cut at %d: %#04x in one piece, %#04x in two", len(b), cut, one, two)
		}
		Common(b).SetChecksum(one)
		if !IsHomaChecksumValid(p, b[:cut], b[cut:]) || !IsHomaChecksumValid(p, b, nil) {
			t.Fatalf("%d bytes cut at %d: does not verify", len(b), cut)
		}
	}
}

// The pseudo-headers are RFC 793's and RFC 8200's: their sums equal the
// sums of the pseudo-headers written out.
func TestPseudoSums(t *testing.T) {
	v4 := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0, IPProtoTCP, 0x01, 0x2c}
	if got, want := PseudoSumIPv4(goldenV4Src, goldenV4Dst, IPProtoTCP, 300), Checksum(v4, 0); got != want {
		t.Errorf("IPv4: %#04x, want %#04x", got, want)
	}
	v6 := append(append(goldenV6Src[:], goldenV6Dst[:]...), 0, 1, 0x11, 0x70, 0, 0, 0, IPProtoTCP)
	if got, want := PseudoSumIPv6(goldenV6Src, goldenV6Dst, IPProtoTCP, 70_000), Checksum(v6, 0); got != want {
		t.Errorf("IPv6: %#04x, want %#04x", got, want)
	}
}

func TestHomaChecksum_noAllocs(t *testing.T) {
	homa := goldenHijackedHoma(t)
	if n := testing.AllocsPerRun(100, func() {
		p := PseudoSumIPv6(goldenV6Src, goldenV6Dst, IPProtoTCP, len(homa))
		Common(homa).SetChecksum(HomaChecksum(p, homa[:DataHeaderLen], homa[DataHeaderLen:]))
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
