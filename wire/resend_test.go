package wire

import (
	"bytes"
	"testing"
	"testing/quick"
)

func TestResend_offsets(t *testing.T) {
	r := Resend(make([]byte, ResendHeaderLen))
	r.SetOffset(0x01020304)
	r.SetLength(0x05060708)
	r.SetPriority(9)
	if got, want := []byte(r[CommonHeaderLen:]), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}; !bytes.Equal(got, want) {
		t.Errorf("bytes 28..36 = % x, want % x", got, want)
	}
	if !r.IsValid() || !r.HasPriority() || !Resend(r[:ResendUpstreamLen]).IsValid() || Resend(r[:ResendUpstreamLen-1]).IsValid() {
		t.Errorf("IsValid wrong at 37/36/35 bytes")
	}
	if u := Resend(r[:ResendUpstreamLen]); u.HasPriority() || u.Priority() != 0 || u.Offset() != 0x01020304 {
		t.Errorf("36 bytes: priority %v %d, offset %#x", u.HasPriority(), u.Priority(), u.Offset())
	}
}

// The upstream subset's RESEND: 36 bytes, the common header and offset
// and length, no priority byte (built from the RESEND layout of
// docs/wire.md#packet-types-and-their-headers less its last byte;
// kernel-style compat fields).
func TestResend_upstreamGolden(t *testing.T) {
	want := mustHex(t, `80 00 00 63 00 00 00 00 00 00 00 12 50 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 02
	                    00 00 00 00 ff ff ff ff`)
	f := goldenResendFields
	f.Upstream = true
	b := bytes.Repeat([]byte{0xAA}, ResendHeaderLen)
	if n := f.Encode(b); n != ResendUpstreamLen || !bytes.Equal(b[:n], want) || b[n] != 0xAA {
		t.Fatalf("Encode = %d bytes\n% x\nwant\n% x", n, b[:n], want)
	}
	var fr Frame
	if r := ParseFrame(homaFrame(t, want), &fr); r != DropNone || fr.Type != TypeResend || len(fr.Payload) != 0 {
		t.Fatalf("ParseFrame = %v, type %v, payload %d", r, fr.Type, len(fr.Payload))
	}
	if got := Resend(fr.Homa).Fields(); got.Upstream != true || got.Length != ResendAll || got.Priority != 0 {
		t.Errorf("Fields = %+v", got)
	}
}

func TestResendFields_roundTrip(t *testing.T) {
	check := func(f ResendFields) bool {
		b := make([]byte, ResendHeaderLen)
		n := f.Encode(b)
		if n != ResendHeaderLen && !f.Upstream || n != ResendUpstreamLen && f.Upstream {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeResend)
		if f.Upstream {
			want.Priority = 0
		}
		return Common(b).Type() == TypeResend && Resend(b[:n]).Fields() == want
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestResendFields_shortBuffer(t *testing.T) {
	b := make([]byte, ResendHeaderLen-1)
	if n := goldenResendFields.Encode(b); n != 0 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Errorf("Encode into 36 bytes = %d and wrote % x", n, b)
	}
}
