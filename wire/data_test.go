package wire

import (
	"bytes"
	"testing"
	"testing/quick"
)

// withDecodedCompat returns what Fields reports for a header encoded from
// cf: the zero Compat comes back as the explicit kernel values.
func withDecodedCompat(cf CommonFields, t PacketType) CommonFields {
	if !cf.Compat.Explicit {
		cf.Compat = KernelCompat(t)
	}
	return cf
}

func TestData_offsetBothForms(t *testing.T) {
	for _, tc := range []struct {
		name           string
		seq, segOffset uint32
		want           uint32
	}{
		{"seg.offset form", 7, 2848, 2848},
		{"sequence form", 2848, OffsetInSequence, 2848},
		{"sequence form at 0", 0, OffsetInSequence, 0},
		{"seg.offset 0 ignores sequence", 1424, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := DataFields{Common: CommonFields{Sequence: tc.seq}, MessageLength: 5000, Offset: tc.segOffset}
			b := make([]byte, DataHeaderLen+3)
			f.Encode(b)
			copy(b[DataHeaderLen:], "abc")
			d := Data(b)
			off, payload := d.Segment()
			if d.Offset() != tc.want || off != tc.want || string(payload) != "abc" || string(d.Payload()) != "abc" {
				t.Errorf("Offset %d Segment %d %q; want %d \"abc\"", d.Offset(), off, payload, tc.want)
			}
			if d.SegOffset() != tc.segOffset {
				t.Errorf("SegOffset = %#x, want %#x", d.SegOffset(), tc.segOffset)
			}
		})
	}
}

func TestData_offsets(t *testing.T) {
	d := Data(make([]byte, DataHeaderLen))
	d.SetMessageLength(0x01020304)
	d.SetIncoming(0x05060708)
	d.Ack().SetClientID(0x090a0b0c0d0e0f10)
	d.Ack().SetServerPort(0x1112)
	d.SetCutoffVersion(0x1314)
	d.SetRetransmit(0x15)
	d.SetSegOffset(0x16171819)
	want := mustHex(t, `01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 00 00 00 16 17 18 19`)
	if got := d[CommonHeaderLen:]; !bytes.Equal(got, want) {
		t.Errorf("bytes 28..55 =\n% x\nwant\n% x", []byte(got), want)
	}
	if !d.IsValid() || Data(d[:DataHeaderLen-1]).IsValid() {
		t.Errorf("IsValid wrong at 56/55 bytes")
	}
}

func TestDataFields_roundTrip(t *testing.T) {
	check := func(f DataFields) bool {
		b := make([]byte, DataHeaderLen)
		if f.Encode(b) != DataHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeData)
		return Common(b).Type() == TypeData && Data(b).Fields() == want
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestDataFields_encodeCleansDirtyBuffer(t *testing.T) {
	b := bytes.Repeat([]byte{0xFF}, DataHeaderLen)
	f := DataFields{}
	f.Encode(b)
	if !bytes.Equal(b[commonUnused:commonUnused+3], []byte{0, 0, 0}) || !bytes.Equal(b[dataPad:dataPad+3], []byte{0, 0, 0}) {
		t.Errorf("unused % x pad % x; want zeros", b[commonUnused:commonUnused+3], b[dataPad:dataPad+3])
	}
	if Data(b).Ack().ClientID() != 0 || Data(b).SegOffset() != 0 {
		t.Errorf("zero fields not written over 0xFF")
	}
}

func TestDataFields_shortBuffer(t *testing.T) {
	b := bytes.Repeat([]byte{0xAA}, DataHeaderLen-1)
	if n := goldenDataFields.Encode(b); n != 0 || !bytes.Equal(b, bytes.Repeat([]byte{0xAA}, len(b))) {
		t.Errorf("Encode into 55 bytes = %d and wrote to the buffer", n)
	}
}

func TestDataFields_encodeAllocs(t *testing.T) {
	f := goldenDataFields
	f.Ack = AckEntryFields{ClientID: 42, ServerPort: 99}
	b := make([]byte, DataHeaderLen)
	if n := testing.AllocsPerRun(1000, func() { f.Encode(b) }); n != 0 {
		t.Errorf("DataFields.Encode allocates %v times per call", n)
	}
}

func BenchmarkDataFields_encode(b *testing.B) {
	f := goldenDataFields
	buf := make([]byte, DataHeaderLen)
	b.ReportAllocs()
	for b.Loop() {
		f.Common.Sequence += 1424
		f.Encode(buf)
	}
}

// BenchmarkData_patchTemplate is the alternative to encoding every
// header: copy a prepared header and patch the fields that change.
func BenchmarkData_patchTemplate(b *testing.B) {
	tmpl := make([]byte, DataHeaderLen)
	goldenDataFields.Encode(tmpl)
	buf := make([]byte, DataHeaderLen)
	var seq uint32
	b.ReportAllocs()
	for b.Loop() {
		seq += 1424
		copy(buf, tmpl)
		Common(buf).SetSequence(seq)
	}
}

func TestData_padRoundTrip(t *testing.T) {
	b := make([]byte, DataHeaderLen)
	f := goldenDataFields
	f.Pad = [3]byte{0x81, 0x02, 0x71}
	f.Encode(b)
	d := Data(b)
	if d.Pad() != f.Pad || !bytes.Equal(b[49:52], f.Pad[:]) {
		t.Fatalf("Pad = % x, bytes 49..51 % x; want % x", d.Pad(), b[49:52], f.Pad)
	}
	if d.SegOffset() != f.Offset || d.Retransmit() != f.Retransmit {
		t.Error("Pad disturbed its neighbours")
	}
	d.SetPad([3]byte{})
	if d.Pad() != ([3]byte{}) || d.Fields().Pad != ([3]byte{}) {
		t.Errorf("SetPad(zero) left % x", d.Pad())
	}
}
