package wire

import (
	"bytes"
	"math/rand"
	"testing"
	"testing/quick"
)

func TestIsControlType_all(t *testing.T) {
	for i := 0; i < 256; i++ {
		typ := PacketType(i)
		want := typ == TypeRPCUnknown || typ == TypeBusy || typ == TypeFreeze || typ == TypeNeedAck
		if IsControlType(typ) != want {
			t.Errorf("IsControlType(%v) = %v", typ, !want)
		}
		if want && typ.HeaderLen() != ControlHeaderLen {
			t.Errorf("%v header %d bytes, want %d", typ, typ.HeaderLen(), ControlHeaderLen)
		}
	}
}

func TestControlFields_kernelBytes(t *testing.T) {
	// NEED_ACK from server 99 to client port 0x8000 for RPC 2 (server id 3).
	f := ControlFields{Type: TypeNeedAck, Common: CommonFields{SrcPort: 99, DstPort: 0x8000, SenderID: 3}}
	b := bytes.Repeat([]byte{0xAA}, ControlHeaderLen+1)
	if n := f.Encode(b); n != ControlHeaderLen {
		t.Fatalf("Encode = %d", n)
	}
	want := mustHex(t, "00 63 80 00 00 00 00 00 00 00 00 17 50 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 03 aa")
	if !bytes.Equal(b, want) {
		t.Errorf("bytes =\n% x\nwant\n% x", b, want)
	}
}

func TestControlFields_roundTrip(t *testing.T) {
	types := []PacketType{TypeRPCUnknown, TypeBusy, TypeFreeze, TypeNeedAck}
	cfg := &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(2))}
	check := func(cf CommonFields, pick uint8) bool {
		f := ControlFields{Type: types[int(pick)%len(types)], Common: cf}
		b := make([]byte, ControlHeaderLen)
		if f.Encode(b) != ControlHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(cf, f.Type)
		return Common(b).ControlFields() == want
	}
	if err := quick.Check(check, cfg); err != nil {
		t.Error(err)
	}
}

func TestControlFields_rejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  PacketType
		size int
	}{
		{"DATA is not header-only", TypeData, 100},
		{"GRANT is not header-only", TypeGrant, 100},
		{"ACK is not header-only", TypeAck, 100},
		{"unknown type", 0x19, 100},
		{"short buffer", TypeBusy, ControlHeaderLen - 1},
	} {
		f := ControlFields{Type: tc.typ}
		b := make([]byte, tc.size)
		if n := f.Encode(b); n != 0 || !bytes.Equal(b, make([]byte, tc.size)) {
			t.Errorf("%s: Encode = %d and wrote to the buffer", tc.name, n)
		}
	}
}
