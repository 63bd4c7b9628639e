package wire

import (
	"bytes"
	"testing"
)

func TestPacketType_headerLen(t *testing.T) {
	for _, tc := range []struct {
		t    PacketType
		want int
		name string
	}{
		{TypeData, 56, "DATA"},
		{TypeGrant, 33, "GRANT"},
		{TypeResend, 37, "RESEND"},
		{TypeRPCUnknown, 28, "RPC_UNKNOWN"},
		{TypeBusy, 28, "BUSY"},
		{TypeCutoffs, 62, "CUTOFFS"},
		{TypeFreeze, 28, "FREEZE"},
		{TypeNeedAck, 28, "NEED_ACK"},
		{TypeAck, 80, "ACK"},
		{0x0F, 0, "TYPE_0x0f"},
		{0x19, 0, "TYPE_0x19"},
		{0x00, 0, "TYPE_0x00"},
		{0xFF, 0, "TYPE_0xff"},
	} {
		if got := tc.t.HeaderLen(); got != tc.want {
			t.Errorf("%#x.HeaderLen() = %d, want %d", uint8(tc.t), got, tc.want)
		}
		if got := tc.t.IsValid(); got != (tc.want != 0) {
			t.Errorf("%#x.IsValid() = %v", uint8(tc.t), got)
		}
		if got := tc.t.String(); got != tc.name {
			t.Errorf("%#x.String() = %q, want %q", uint8(tc.t), got, tc.name)
		}
	}
}

// TestHeaderLen_matchesLayout ties each header length to the offset and
// size of its last field, and to the kernel's 26/90 bounds.
func TestHeaderLen_matchesLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		len, want int
	}{
		{"common", CommonHeaderLen, commonSenderID + 8},
		{"DATA", DataHeaderLen, dataSegOffset + 4},
		{"GRANT", GrantHeaderLen, grantPriority + 1},
		{"RESEND", ResendHeaderLen, resendPriority + 1},
		{"CUTOFFS", CutoffsHeaderLen, cutoffsVersion + 2},
		{"ACK", AckHeaderLen, ackAcks + MaxAcks*AckEntryLen},
		{"DATA doff", DataHeaderLen, DoffData >> 4 * 4},
	} {
		if tc.len != tc.want {
			t.Errorf("%s: length %d, layout says %d", tc.name, tc.len, tc.want)
		}
	}
	for typ := TypeData; typ <= TypeAck; typ++ {
		if n := typ.HeaderLen(); n < MinPacketLen || n > MaxHeaderLen {
			t.Errorf("%v header %d bytes outside the kernel's [%d, %d]", typ, n, MinPacketLen, MaxHeaderLen)
		}
	}
}

func TestCommon_offsets(t *testing.T) {
	c := Common(make([]byte, CommonHeaderLen))
	c.SetSrcPort(0x0102)
	c.SetDstPort(0x0304)
	c.SetSequence(0x05060708)
	c.SetType(0x09)
	c.SetDoff(0x0a)
	c.SetFlags(0x0b)
	c.SetWindow(0x0c0d)
	c.SetChecksum(0x0e0f)
	c.SetUrgent(0x1011)
	c.SetSenderID(0x1213141516171819)
	want := mustHex(t, "01 02 03 04 05 06 07 08 00 00 00 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 18 19")
	if !bytes.Equal(c, want) {
		t.Fatalf("bytes =\n% x\nwant\n% x", []byte(c), want)
	}
	got := c.Fields()
	wantF := CommonFields{SrcPort: 0x0102, DstPort: 0x0304, Sequence: 0x05060708, SenderID: 0x1213141516171819,
		Compat: Compat{Explicit: true, Doff: 0x0a, Flags: 0x0b, Window: 0x0c0d, Checksum: 0x0e0f, Urgent: 0x1011}}
	if got != wantF || c.Type() != 0x09 {
		t.Errorf("Fields = %+v type %#x\nwant %+v", got, c.Type(), wantF)
	}
	if !c.IsValid() || Common(want[:27]).IsValid() {
		t.Errorf("IsValid wrong at 28/27 bytes")
	}
}

func TestCompat_styles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		compat Compat
		typ    PacketType
		want   string // bytes 12..19: doff flags window checksum urgent
	}{
		{"zero value is kernel style, control", Compat{}, TypeBusy, "50 06 00 00 00 00 b9 7d"},
		{"zero value is kernel style, DATA", Compat{}, TypeData, "e0 06 00 00 00 00 b9 7d"},
		{"KernelCompat equals zero value", KernelCompat(TypeNeedAck), TypeNeedAck, "50 06 00 00 00 00 b9 7d"},
		{"upstream subset", UpstreamCompat(TypeData), TypeData, "e0 00 00 00 00 00 00 00"},
		{"explicit", Compat{Explicit: true, Doff: 0x70, Flags: 1, Window: 2, Checksum: 0xbeef, Urgent: 3}, TypeGrant,
			"70 01 00 02 be ef 00 03"},
		{"explicit zero writes zeros", Compat{Explicit: true}, TypeGrant, "00 00 00 00 00 00 00 00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Repeat([]byte{0xAA}, MaxHeaderLen)
			cf := CommonFields{Compat: tc.compat}
			cf.encode(Common(b), tc.typ)
			if got, want := b[12:20], mustHex(t, tc.want); !bytes.Equal(got, want) {
				t.Errorf("bytes 12..19 = % x, want % x", got, want)
			}
			if !bytes.Equal(b[8:11], []byte{0, 0, 0}) || Common(b).Type() != tc.typ {
				t.Errorf("unused % x type %v", b[8:11], Common(b).Type())
			}
		})
	}
}

func TestRPCID_helpers(t *testing.T) {
	for _, tc := range []struct {
		id     uint64
		client bool
		peer   uint64
	}{
		{2, true, 3},
		{3, false, 2},
		{0, true, 1},
		{1<<64 - 1, false, 1<<64 - 2},
	} {
		if IsClientID(tc.id) != tc.client || LocalID(tc.id) != tc.peer {
			t.Errorf("id %d: IsClientID %v LocalID %d", tc.id, IsClientID(tc.id), LocalID(tc.id))
		}
		if tc.client && (ServerID(tc.id) != tc.peer || IsClientID(ServerID(tc.id))) {
			t.Errorf("ServerID(%d) = %d", tc.id, ServerID(tc.id))
		}
	}
}

func TestPayloadPerPacket_mtu(t *testing.T) {
	for _, tc := range []struct{ mtu, ip, want int }{
		{1500, IPv4MinHeaderLen, 1424},
		{9000, IPv4MinHeaderLen, 8924},
		{1500, 40, 1404}, // IPv6
		{76, IPv4MinHeaderLen, 0},
		{77, IPv4MinHeaderLen, 1},
		{10, IPv4MinHeaderLen, 0},
	} {
		if got := PayloadPerPacket(tc.mtu, tc.ip); got != tc.want {
			t.Errorf("PayloadPerPacket(%d, %d) = %d, want %d", tc.mtu, tc.ip, got, tc.want)
		}
	}
}
