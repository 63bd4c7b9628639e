package wire

import (
	"bytes"
	"testing"
	"testing/quick"
)

func TestGrant_offsets(t *testing.T) {
	g := Grant(make([]byte, GrantHeaderLen))
	g.SetOffset(0x01020304)
	g.SetPriority(5)
	if got, want := []byte(g[CommonHeaderLen:]), []byte{1, 2, 3, 4, 5}; !bytes.Equal(got, want) {
		t.Errorf("bytes 28..32 = % x, want % x", got, want)
	}
	if !g.IsValid() || Grant(g[:GrantHeaderLen-1]).IsValid() {
		t.Errorf("IsValid wrong at 33/32 bytes")
	}
}

func TestGrantFields_roundTrip(t *testing.T) {
	check := func(f GrantFields) bool {
		b := make([]byte, GrantHeaderLen)
		if f.Encode(b) != GrantHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeGrant)
		return Common(b).Type() == TypeGrant && Grant(b).Fields() == want
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestGrantFields_shortBuffer(t *testing.T) {
	b := make([]byte, GrantHeaderLen-1)
	if n := goldenGrantFields.Encode(b); n != 0 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Errorf("Encode into 32 bytes = %d and wrote % x", n, b)
	}
}
