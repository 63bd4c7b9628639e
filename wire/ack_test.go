package wire

import (
	"bytes"
	"testing"
	"testing/quick"
)

func TestAckEntry_offsets(t *testing.T) {
	a := AckEntry(make([]byte, AckEntryLen))
	a.SetClientID(0x0102030405060708)
	a.SetServerPort(0x090a)
	if want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !bytes.Equal(a, want) {
		t.Errorf("bytes = % x, want % x", []byte(a), want)
	}
	if a.Fields() != (AckEntryFields{ClientID: 0x0102030405060708, ServerPort: 0x090a}) {
		t.Errorf("Fields = %+v", a.Fields())
	}
	if !a.IsValid() || AckEntry(a[:9]).IsValid() {
		t.Errorf("IsValid wrong at 10/9 bytes")
	}
	if n := (&AckEntryFields{ClientID: 1}).Encode(make([]byte, 9)); n != 0 {
		t.Errorf("AckEntryFields.Encode into 9 bytes = %d", n)
	}
}

func TestAck_entries(t *testing.T) {
	f := AckFields{
		Common:  CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		NumAcks: 2,
		Acks:    [MaxAcks]AckEntryFields{{ClientID: 4, ServerPort: 99}, {ClientID: 6, ServerPort: 100}},
	}
	b := make([]byte, AckHeaderLen)
	if n := f.Encode(b); n != AckHeaderLen {
		t.Fatalf("Encode = %d", n)
	}
	want := mustHex(t, `80 00 00 63 00 00 00 00 00 00 00 18 50 06 00 00 00 00 b9 7d 00 00 00 00 00 00 00 02
		00 02
		00 00 00 00 00 00 00 04 00 63
		00 00 00 00 00 00 00 06 00 64
		00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00`)
	if !bytes.Equal(b, want) {
		t.Fatalf("bytes =\n% x\nwant\n% x", b, want)
	}
	a := Ack(b)
	if !a.IsValid() || a.NumAcks() != 2 || a.Entry(1).ClientID() != 6 || a.Entry(1).ServerPort() != 100 || a.Entry(2).ClientID() != 0 {
		t.Errorf("decoded %+v", a.Fields())
	}
}

func TestAck_numAcksBound(t *testing.T) {
	b := make([]byte, AckHeaderLen)
	a := Ack(b)
	a.SetNumAcks(MaxAcks)
	if !a.IsValid() {
		t.Errorf("IsValid = false with num_acks %d", MaxAcks)
	}
	a.SetNumAcks(MaxAcks + 1)
	if a.IsValid() {
		t.Errorf("IsValid = true with num_acks %d", MaxAcks+1)
	}
	a.SetNumAcks(1)
	if Ack(b[:AckHeaderLen-1]).IsValid() {
		t.Errorf("IsValid = true at 79 bytes")
	}
	f := AckFields{NumAcks: MaxAcks + 1}
	out := make([]byte, AckHeaderLen)
	if n := f.Encode(out); n != 0 || !bytes.Equal(out, make([]byte, AckHeaderLen)) {
		t.Errorf("Encode with NumAcks 6 = %d and wrote to the buffer", n)
	}
	if n := (&AckFields{}).Encode(make([]byte, AckHeaderLen-1)); n != 0 {
		t.Errorf("Encode into 79 bytes = %d", n)
	}
}

func TestAck_entryOutOfRangePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("Entry(MaxAcks) did not panic")
		}
	}()
	Ack(make([]byte, AckHeaderLen+AckEntryLen)).Entry(MaxAcks)
}

func TestAckFields_roundTrip(t *testing.T) {
	check := func(f AckFields) bool {
		f.NumAcks %= MaxAcks + 1
		b := make([]byte, AckHeaderLen)
		if f.Encode(b) != AckHeaderLen {
			return false
		}
		want := f
		want.Common = withDecodedCompat(f.Common, TypeAck)
		return Common(b).Type() == TypeAck && Ack(b).Fields() == want
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}
