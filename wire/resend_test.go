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
	if !r.IsValid() || Resend(r[:ResendHeaderLen-1]).IsValid() {
		t.Errorf("IsValid wrong at 37/36 bytes")
	}
}

func TestResendFields_roundTrip(t *testing.T) {
	check := func(f ResendFields) bool {
		b := make([]byte, ResendHeaderLen)
		if f.Encode(b) != ResendHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeResend)
		return Common(b).Type() == TypeResend && Resend(b).Fields() == want
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
