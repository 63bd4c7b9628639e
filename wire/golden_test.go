package wire

import (
	"bytes"
	"testing"
)

// The golden vectors of the project's wire contract: kernel-module style
// (flags 6, urgent 0xb97d), checksum not computed.
const (
	goldenData = `80 00 00 63 00 00 00 00 00 00 00 10 e0 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 02
	              00 00 00 64 00 00 00 64 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 ff ff ff ff`
	goldenGrant = `00 63 80 00 00 00 00 00 00 00 00 11 50 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 03
	               00 00 4e 20 03`
	goldenResend = `80 00 00 63 00 00 00 00 00 00 00 12 50 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 02
	                00 00 00 00 ff ff ff ff 07`
)

// Fields the golden vectors were derived from. Compat is left zero: the
// encoders must supply the kernel defaults themselves.
var (
	goldenDataFields = DataFields{
		Common:        CommonFields{SrcPort: 0x8000, DstPort: 99, Sequence: 0, SenderID: 2},
		MessageLength: 100,
		Incoming:      100,
		CutoffVersion: 1,
		Offset:        OffsetInSequence,
	}
	goldenGrantFields = GrantFields{
		Common:   CommonFields{SrcPort: 99, DstPort: 0x8000, SenderID: 3},
		Offset:   20000,
		Priority: 3,
	}
	goldenResendFields = ResendFields{
		Common:   CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		Offset:   0,
		Length:   ResendAll,
		Priority: 7,
	}
)

func TestGolden_encode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		encode func([]byte) int
		want   string
	}{
		{"DATA", goldenDataFields.Encode, goldenData},
		{"GRANT", goldenGrantFields.Encode, goldenGrant},
		{"RESEND", goldenResendFields.Encode, goldenResend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := mustHex(t, tc.want)
			buf := bytes.Repeat([]byte{0xAA}, MaxHeaderLen) // dirty, to catch unwritten bytes
			n := tc.encode(buf)
			if n != len(want) {
				t.Fatalf("Encode wrote %d bytes, want %d", n, len(want))
			}
			if !bytes.Equal(buf[:n], want) {
				t.Errorf("Encode =\n% x\nwant\n% x", buf[:n], want)
			}
			if buf[n] != 0xAA {
				t.Errorf("Encode wrote past its %d bytes", n)
			}
		})
	}
}

func TestGolden_decodeData(t *testing.T) {
	b := mustHex(t, goldenData)
	typ, r := ParseHoma(b)
	if typ != TypeData || r != DropNone {
		t.Fatalf("ParseHoma = %v, %v; want DATA, none", typ, r)
	}
	want := goldenDataFields
	want.Common.Compat = KernelCompat(TypeData)
	if got := Data(b).Fields(); got != want {
		t.Errorf("Fields = %+v\nwant %+v", got, want)
	}
	off, payload := Data(b).Segment()
	if off != 0 || len(payload) != 0 {
		t.Errorf("Segment = %d, %d bytes; want 0, 0 bytes", off, len(payload))
	}
	c := Common(b)
	if c.Doff() != 0xE0 || c.Flags() != 6 || c.Urgent() != 0xb97d || c.Checksum() != 0 {
		t.Errorf("compat bytes doff %#x flags %d urgent %#x checksum %#x", c.Doff(), c.Flags(), c.Urgent(), c.Checksum())
	}
	if !IsClientID(c.SenderID()) || LocalID(c.SenderID()) != 3 {
		t.Errorf("sender_id %d: want a client id whose server id is 3", c.SenderID())
	}
}

func TestGolden_decodeGrant(t *testing.T) {
	b := mustHex(t, goldenGrant)
	if typ, r := ParseHoma(b); typ != TypeGrant || r != DropNone {
		t.Fatalf("ParseHoma = %v, %v; want GRANT, none", typ, r)
	}
	want := goldenGrantFields
	want.Common.Compat = KernelCompat(TypeGrant)
	if got := Grant(b).Fields(); got != want {
		t.Errorf("Fields = %+v\nwant %+v", got, want)
	}
	if IsClientID(Common(b).SenderID()) {
		t.Errorf("sender_id 3 reported as a client id")
	}
}

func TestGolden_decodeResend(t *testing.T) {
	b := mustHex(t, goldenResend)
	if typ, r := ParseHoma(b); typ != TypeResend || r != DropNone {
		t.Fatalf("ParseHoma = %v, %v; want RESEND, none", typ, r)
	}
	want := goldenResendFields
	want.Common.Compat = KernelCompat(TypeResend)
	if got := Resend(b).Fields(); got != want {
		t.Errorf("Fields = %+v\nwant %+v", got, want)
	}
}

// goldenGrantFrame is goldenGrant in an untagged frame from 02:..:01 /
// 10.0.0.1 to 02:..:02 / 10.0.0.2 at priority 7 (TOS 0xe0), DF, TTL 64,
// ID 0. The IPv4 checksum 0x2555 was computed independently of this
// package.
const goldenGrantFrame = `02 00 00 00 00 02 02 00 00 00 00 01 08 00
	45 e0 00 35 00 00 40 00 40 92 25 55 0a 00 00 01 0a 00 00 02` + "\n" + goldenGrant

func TestGolden_grantFrame(t *testing.T) {
	want := mustHex(t, goldenGrantFrame)
	homa := make([]byte, GrantHeaderLen)
	goldenGrantFields.Encode(homa)
	if got := homaFrame(t, homa); !bytes.Equal(got, want) {
		t.Fatalf("frame =\n% x\nwant\n% x", got, want)
	}
	var f Frame
	if r := ParseFrame(want, &f); r != DropNone {
		t.Fatalf("ParseFrame = %v", r)
	}
	if f.Type != TypeGrant || f.Priority() != 7 || f.VLAN != nil || len(f.Payload) != 0 {
		t.Errorf("frame: type %v priority %d vlan %v payload %d", f.Type, f.Priority(), f.VLAN, len(f.Payload))
	}
	if g := Grant(f.Homa); g.Offset() != 20000 || g.Priority() != 3 {
		t.Errorf("grant offset %d priority %d", g.Offset(), g.Priority())
	}
}
