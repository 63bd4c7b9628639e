package wire

import (
	"bytes"
	"testing"
)

// splitData returns a DATA frame carrying payload, cut after its headers
// into the first piece and the payload.
func splitData(t *testing.T, payload []byte) (head, tail []byte) {
	t.Helper()
	hdr := make([]byte, DataHeaderLen)
	(&DataFields{Common: CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		MessageLength: 100_000, Incoming: 100_000, Offset: 1424}).Encode(hdr)
	whole := homaFrame(t, append(hdr, payload...))
	n := EthernetHeaderLen + IPv4MinHeaderLen + DataHeaderLen
	return whole[:n], whole[n:]
}

// A frame in two pieces, headers then payload (a chained mbuf whose
// payload is an external buffer), parses without joining them: the same
// headers, and the payload is the second piece, cut to the IPv4 total
// length (what follows is padding).
func TestParseHomaIPv4_splitFrame(t *testing.T) {
	payload := bytes.Repeat([]byte{0x5a}, 1424)
	head, tail := splitData(t, payload)
	var l Link
	if ParseLink(head, &l) != DropNone || !SplitFits(&l, len(tail)) {
		t.Fatal("split frame not recognised")
	}
	l.Tail = append(tail, 0, 0, 0) // padding after the packet
	var f Frame
	if r := ParseHomaIPv4(&l, &f, true); r != DropNone {
		t.Fatalf("split frame: %v", r)
	}
	if f.Type != TypeData || Data(f.Homa).Offset() != 1424 || !bytes.Equal(f.Payload, payload) {
		t.Fatalf("split frame parsed as %v offset %d, %d payload bytes", f.Type, Data(f.Homa).Offset(), len(f.Payload))
	}
	if ParseLink(head, &l); l.Tail != nil {
		t.Fatal("ParseLink kept a Tail")
	}
}

func TestParseHomaIPv4_splitFrameRefusals(t *testing.T) {
	payload := bytes.Repeat([]byte{1}, 100)
	head, tail := splitData(t, payload)
	for _, c := range []struct {
		name       string
		head, tail []byte
		fits       bool // SplitFits
		want       DropReason
	}{
		// The first piece holds a payload byte too.
		{"headers and a byte", append(head[:len(head):len(head)], tail[0]), tail[1:], false, DropSplitHeaders},
		// The first piece stops inside the DATA header: that header is short.
		{"short headers", head[:len(head)-1], append([]byte{head[len(head)-1]}, tail...), false, DropShortHomaHeader},
		// The second piece is shorter than the total length says.
		{"short tail", head, tail[:len(tail)-1], true, DropBadTotalLength},
	} {
		var l Link
		ParseLink(c.head, &l)
		if got := SplitFits(&l, len(c.tail)); got != c.fits {
			t.Errorf("%s: SplitFits = %v", c.name, got)
		}
		l.Tail = c.tail
		var f Frame
		if r := ParseHomaIPv4(&l, &f, true); r != c.want {
			t.Errorf("%s: %v, want %v", c.name, r, c.want)
		}
	}
}

func TestParseHomaIPv4_splitFrameAllocatesNothing(t *testing.T) {
	head, tail := splitData(t, make([]byte, 1424))
	var l Link
	var f Frame
	if n := testing.AllocsPerRun(100, func() {
		ParseLink(head, &l)
		l.Tail = tail
		ParseHomaIPv4(&l, &f, true)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzParseSplit cuts a frame in two at any point: when SplitFits says the
// pieces can be parsed apart, ParseHomaIPv4 on them accepts exactly what
// it accepts on the whole frame, with the same header and payload bytes.
func FuzzParseSplit(f *testing.F) {
	for _, typ := range allTypes {
		f.Add(homaFrame(f, sampleHoma(typ)), uint16(EthernetHeaderLen+IPv4MinHeaderLen+typ.HeaderLen()))
	}
	hdr := make([]byte, DataHeaderLen)
	(&DataFields{Common: CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2}, MessageLength: 5000, Incoming: 5000}).Encode(hdr)
	f.Add(homaFrame(f, append(hdr, bytes.Repeat([]byte{7}, 1000)...)), uint16(EthernetHeaderLen+IPv4MinHeaderLen+DataHeaderLen))
	f.Fuzz(func(t *testing.T, frame []byte, cut uint16) {
		if int(cut) > len(frame) {
			return
		}
		var l Link
		if ParseLink(frame[:cut], &l) != DropNone || !SplitFits(&l, len(frame)-int(cut)) {
			return
		}
		l.Tail = frame[cut:]
		var split, whole Frame
		rs := ParseHomaIPv4(&l, &split, true)
		rw := ParseFrame(frame, &whole)
		if (rs == DropNone) != (rw == DropNone) {
			t.Fatalf("split: %v, whole: %v", rs, rw)
		}
		if rs == DropNone && (split.Type != whole.Type || !bytes.Equal(split.Homa, whole.Homa[:len(split.Homa)]) ||
			!bytes.Equal(split.Payload, whole.Payload)) {
			t.Fatalf("split and whole frames differ: %v %d+%d, %v %d+%d", split.Type, len(split.Homa), len(split.Payload),
				whole.Type, len(whole.Homa), len(whole.Payload))
		}
	})
}

// splitData6 is splitData over IPv6 (the fixed header, then Homa).
func splitData6(t *testing.T, payload []byte, proto uint8) (head, tail []byte) {
	t.Helper()
	hdr := make([]byte, DataHeaderLen)
	(&DataFields{Common: CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		MessageLength: 100_000, Incoming: 100_000, Offset: 1404}).Encode(hdr)
	whole := v6frame(append(hdr, payload...), proto)
	n := EthernetHeaderLen + IPv6HeaderLen + DataHeaderLen
	return whole[:n], whole[n:]
}

// Over IPv6 a frame in two pieces parses in place too, hijacked or not;
// one whose first piece holds more than the headers, or a short second
// piece, is refused.
func TestParseHomaIP_splitFrameIPv6(t *testing.T) {
	payload := bytes.Repeat([]byte{0x5a}, 1404)
	for _, proto := range []uint8{IPProtoHoma, IPProtoTCP} {
		head, tail := splitData6(t, payload, proto)
		var l Link
		if ParseLink(head, &l) != DropNone || !SplitFits(&l, len(tail)) {
			t.Fatalf("proto %d: split frame not recognised", proto)
		}
		l.Tail = append(tail, 0, 0) // padding
		var f Frame
		if r := ParseHomaIP(&l, &f, true); r != DropNone || f.IPv6 == nil || f.Type != TypeData ||
			!bytes.Equal(f.Payload, payload) || f.Src() != goldenV6Src || f.Hijacked != (proto == IPProtoTCP) {
			t.Fatalf("proto %d: %v, %+v", proto, r, f)
		}
	}
	head, tail := splitData6(t, payload, IPProtoHoma)
	for _, c := range []struct {
		name       string
		head, tail []byte
		fits       bool
		want       DropReason
	}{
		{"headers and a byte", append(head[:len(head):len(head)], tail[0]), tail[1:], false, DropSplitHeaders},
		{"short tail", head, tail[:len(tail)-1], true, DropBadTotalLength},
	} {
		var l Link
		ParseLink(c.head, &l)
		if got := SplitFits(&l, len(c.tail)); got != c.fits {
			t.Errorf("%s: SplitFits = %v", c.name, got)
		}
		l.Tail = c.tail
		var f Frame
		if r := ParseHomaIP(&l, &f, true); r != c.want || f.Type != 0 {
			t.Errorf("%s: %v, want %v", c.name, r, c.want)
		}
	}
}
