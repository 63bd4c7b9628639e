package shm

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

var testLimits = Limits{ArenaSize: 1 << 20, PoolPages: 16, MaxMessage: 1_000_000}

var (
	peer  = [4]byte{10, 0, 0, 2}
	peer6 = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
)

// validSubmissions has one good submission per op.
var validSubmissions = []Submission{
	{Op: OpBind, Port: 99, Cookie: 1},
	{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: 0, Length: 100, Cookie: 2},
	{Op: OpSend, PeerIP: peer, PeerPort: 0x7fff, Offset: 1<<20 - 1_000_000, Length: 1_000_000},
	{Op: OpReply, RPCID: 7, PeerIP: peer, PeerPort: 0x8001, Offset: 1<<20 - 1, Length: 1, Cookie: ^uint64(0)},
	{Op: OpSend, PeerIP6: peer6, PeerPort: 99, Length: 100, Cookie: 8},
	{Op: OpReply, RPCID: 9, PeerIP6: peer6, PeerPort: 0x8001, Length: 1},
	{Op: OpAbort, RPCID: 6},
	{Op: OpAbortAll, Cookie: 5},
	{Op: OpReturnPages, Page: 3, Pages: 13},
	{Op: OpReturnPages, Page: 15, Pages: 1},
}

func TestSubmission_roundTrip(t *testing.T) {
	for _, s := range validSubmissions {
		var slot Slot
		for i := range slot {
			slot[i] = 0xee // Encode must write every byte
		}
		s.Encode(&slot)
		got, code := ParseSubmission(&slot, &testLimits)
		if code != ErrCodeNone || got != s {
			t.Errorf("%v: got %+v, %v; want %+v", s.Op, got, code, s)
		}
	}
}

// The byte layout is shared with the Python client: pin it.
func TestSubmission_golden(t *testing.T) {
	s := Submission{Op: OpReply, Port: 0, Length: 0x0102, Cookie: 0x1122334455667788, RPCID: 0x0b,
		PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 0x8001, Offset: 0x40}
	var slot Slot
	s.Encode(&slot)
	want := "03 00 0000 02010000 8877665544332211 0b00000000000000" +
		"0a000002 0180 0000 4000000000000000 00000000 00000000" +
		strings.Repeat("00", 16)
	if got := hex.EncodeToString(slot[:]); got != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("encoded\n got %s\nwant %s", got, strings.ReplaceAll(want, " ", ""))
	}
}

func TestSubmission_validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Submission
		want ErrCode
	}{
		{"op zero", Submission{}, ErrCodeBadOp},
		{"op unknown", Submission{Op: opEnd}, ErrCodeBadOp},
		{"flags", Submission{Op: OpBind, Port: 1, Flags: 1}, ErrCodeBadFlags},
		{"bind with length", Submission{Op: OpBind, Port: 1, Length: 1}, ErrCodeBadReserved},
		{"bind with peer", Submission{Op: OpBind, Port: 1, PeerPort: 1}, ErrCodeBadReserved},
		{"send with port", Submission{Op: OpSend, Port: 5, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadReserved},
		{"send with rpc", Submission{Op: OpSend, RPCID: 2, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadReserved},
		{"send giving back a page", Submission{Op: OpSend, Page: 3, Pages: 1, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeNone},
		{"send giving back pages outside the pool", Submission{Op: OpSend, Page: 16, Pages: 1, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadPage},
		{"send giving back no page from page 3", Submission{Op: OpSend, Page: 3, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadPage},
		{"quiet send", Submission{Op: OpSend, Flags: SubFlagQuiet, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeNone},
		{"unknown send flag", Submission{Op: OpSend, Flags: 0x20, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadFlags},
		{"send at priority 5", Submission{Op: OpSend, Flags: PriorityFlags(5) | SubFlagQuiet, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeNone},
		{"send with a level but no priority flag", Submission{Op: OpSend, Flags: 5 << 2, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadFlags},
		{"reply at a priority", Submission{Op: OpReply, Flags: PriorityFlags(1), RPCID: 1, PeerIP: peer, PeerPort: 99, Length: 1}, ErrCodeBadFlags},
		{"quiet return", Submission{Op: OpReturnPages, Flags: SubFlagQuiet, Page: 1, Pages: 1}, ErrCodeBadFlags},
		{"abort with offset", Submission{Op: OpAbort, RPCID: 2, Offset: 64}, ErrCodeBadReserved},
		{"abort-all with rpc", Submission{Op: OpAbortAll, RPCID: 2}, ErrCodeBadReserved},
		{"bind with page", Submission{Op: OpBind, Port: 1, Page: 1}, ErrCodeBadReserved},
		{"bind port 0", Submission{Op: OpBind}, ErrCodeBadPort},
		{"bind client port", Submission{Op: OpBind, Port: 0x8000}, ErrCodeBadPort},
		{"send to client port", Submission{Op: OpSend, PeerIP: peer, PeerPort: 0x8000, Length: 1}, ErrCodeBadPort},
		{"send to port 0", Submission{Op: OpSend, PeerIP: peer, Length: 1}, ErrCodeBadPort},
		{"reply to port 0", Submission{Op: OpReply, RPCID: 1, PeerIP: peer, Length: 1}, ErrCodeBadPort},
		{"send to 0.0.0.0", Submission{Op: OpSend, PeerPort: 99, Length: 1}, ErrCodeBadPeer},
		{"send to both families", Submission{Op: OpSend, PeerIP: peer, PeerIP6: peer6, PeerPort: 99, Length: 1}, ErrCodeBadPeer},
		{"send to a mapped IPv6 address", Submission{Op: OpSend, PeerIP6: [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 2}, PeerPort: 99, Length: 1}, ErrCodeBadPeer},
		{"abort with an IPv6 peer", Submission{Op: OpAbort, RPCID: 2, PeerIP6: peer6}, ErrCodeBadReserved},
		{"send length 0", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99}, ErrCodeBadLength},
		{"send too long", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Length: 1_000_001}, ErrCodeBadLength},
		{"send past arena", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: 1<<20 - 99, Length: 100}, ErrCodeBadArena},
		{"send offset beyond arena", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: 1<<20 + 1, Length: 1}, ErrCodeBadArena},
		{"send offset near 2^64", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: ^uint64(0), Length: 2}, ErrCodeBadArena},
		{"reply even id", Submission{Op: OpReply, RPCID: 2, PeerIP: peer, PeerPort: 1, Length: 1}, ErrCodeBadRPC},
		{"reply id 0", Submission{Op: OpReply, PeerIP: peer, PeerPort: 1, Length: 1}, ErrCodeBadRPC},
		{"abort odd id", Submission{Op: OpAbort, RPCID: 3}, ErrCodeBadRPC},
		{"abort id 0", Submission{Op: OpAbort}, ErrCodeBadRPC},
		{"return 0 pages", Submission{Op: OpReturnPages, Page: 1}, ErrCodeBadPage},
		{"return page beyond pool", Submission{Op: OpReturnPages, Page: 16, Pages: 1}, ErrCodeBadPage},
		{"return range past pool", Submission{Op: OpReturnPages, Page: 10, Pages: 7}, ErrCodeBadPage},
		{"return huge range", Submission{Op: OpReturnPages, Page: 1, Pages: ^uint32(0)}, ErrCodeBadPage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Validate(&testLimits); got != tc.want {
				t.Fatalf("Validate = %v, want %v", got, tc.want)
			}
			var slot Slot
			tc.s.Encode(&slot)
			if _, got := ParseSubmission(&slot, &testLimits); got != tc.want {
				t.Fatalf("ParseSubmission = %v, want %v", got, tc.want)
			}
		})
	}
}

// Bytes a Submission cannot express: the error field and the reserved
// tail must be zero; the cookie comes back for the error completion.
func TestParseSubmission_rawBytes(t *testing.T) {
	for _, off := range []int{entErr, entErr + 1, entPeerIP6, EntrySize - 1} {
		var slot Slot
		s := Submission{Op: OpAbortAll, Cookie: 42}
		s.Encode(&slot)
		slot[off] = 1
		got, code := ParseSubmission(&slot, &testLimits)
		if code != ErrCodeBadReserved || got.Cookie != 42 {
			t.Errorf("byte %d set: %v cookie %d, want %v cookie 42", off, code, got.Cookie, ErrCodeBadReserved)
		}
	}
	var slot Slot
	slot[entOp] = 0xff
	if _, code := ParseSubmission(&slot, &testLimits); code != ErrCodeBadOp {
		t.Errorf("op 0xff: %v", code)
	}
}

var validCompletions = []Completion{
	{Op: CompAccepted, Cookie: 2, RPCID: 10},
	{Op: CompAccepted, Cookie: 2, RPCID: 10, Flags: CompFlagReleased},
	{Op: CompRequest, Port: 99, RPCID: 11, PeerIP: peer, PeerPort: 0x8001, Length: 65537, Page: 4, Pages: 2},
	{Op: CompResponse, Cookie: 2, RPCID: 10, PeerIP: peer, PeerPort: 99, Length: 1_000_000, Page: 0, Pages: 16},
	{Op: CompRequest, Port: 99, RPCID: 13, PeerIP6: peer6, PeerPort: 0x8001, Length: 1, Page: 4, Pages: 1},
	{Op: CompError, Cookie: 3, Err: ErrCodeBadArena},
	{Op: CompError, Cookie: 3, RPCID: 12, Err: ErrCodeTimeout},
	{Op: CompReleased, Cookie: 2, Offset: 1<<20 - 100, Length: 100},
}

func TestCompletion_roundTrip(t *testing.T) {
	for _, c := range validCompletions {
		var slot Slot
		for i := range slot {
			slot[i] = 0xee
		}
		c.Encode(&slot)
		got, code := ParseCompletion(&slot, &testLimits)
		if code != ErrCodeNone || got != c {
			t.Errorf("%v: got %+v, %v; want %+v", c.Op, got, code, c)
		}
	}
}

func TestParseCompletion_errors(t *testing.T) {
	msg := Completion{Op: CompResponse, RPCID: 10, PeerIP: peer, PeerPort: 99, Length: 100, Page: 1, Pages: 1}
	with := func(edit func(*Completion)) Completion { c := msg; edit(&c); return c }
	for _, tc := range []struct {
		name string
		c    Completion
		want ErrCode
	}{
		{"op zero", Completion{}, ErrCodeBadOp},
		{"op unknown", Completion{Op: compEnd}, ErrCodeBadOp},
		{"unknown flag", with(func(c *Completion) { c.Flags = 2 }), ErrCodeBadFlags},
		{"error code on a message", with(func(c *Completion) { c.Err = ErrCodeTimeout }), ErrCodeBadCompError},
		{"error without code", Completion{Op: CompError, Cookie: 1}, ErrCodeBadCompError},
		{"unknown error code", Completion{Op: CompError, Err: 12}, ErrCodeBadCompError},
		{"error code past the end", Completion{Op: CompError, Err: errCodeEnd}, ErrCodeBadCompError},
		{"length 0", with(func(c *Completion) { c.Length = 0 }), ErrCodeBadLength},
		{"too long", with(func(c *Completion) { c.Length, c.Pages = 1_000_001, 16 }), ErrCodeBadLength},
		{"no pages", with(func(c *Completion) { c.Pages = 0 }), ErrCodeBadPage},
		{"pages past pool", with(func(c *Completion) { c.Page = 15; c.Pages = 2 }), ErrCodeBadPage},
		{"too few pages for length", with(func(c *Completion) { c.Length = PageSize + 1 }), ErrCodeBadPage},
		{"release past arena", Completion{Op: CompReleased, Offset: 1 << 20, Length: 1}, ErrCodeBadArena},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slot Slot
			tc.c.Encode(&slot)
			if _, got := ParseCompletion(&slot, &testLimits); got != tc.want {
				t.Fatalf("ParseCompletion = %v, want %v", got, tc.want)
			}
		})
	}
	// An entry cannot name a peer of both families.
	var slot Slot
	msg.Encode(&slot)
	slot[EntrySize-1] = 1
	if _, got := ParseCompletion(&slot, &testLimits); got != ErrCodeBadPeer {
		t.Fatalf("an IPv6 byte beside an IPv4 peer: %v", got)
	}
}

func TestEntry_names(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{OpSend.String(), "send"},
		{Op(0).String(), "op(0)"},
		{opEnd.String(), "op(7)"},
		{CompRequest.String(), "request"},
		{CompOp(9).String(), "comp(9)"},
		{ErrCodeBadArena.String(), "range outside the transmit arena"},
		{ErrCodeClosed.String(), "closed"},
		{ErrCode(12).String(), "error(12)"},
		{ErrCode(999).String(), "error(999)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
	for e := ErrCode(0); e < errCodeEnd; e++ {
		if e.known() != !strings.HasPrefix(e.String(), "error(") {
			t.Errorf("ErrCode %d: known %v but named %q", e, e.known(), e)
		}
	}
}

func TestEntry_allocs(t *testing.T) {
	var slot Slot
	s := validSubmissions[1]
	c := validCompletions[2]
	if n := testing.AllocsPerRun(1000, func() {
		s.Encode(&slot)
		ParseSubmission(&slot, &testLimits)
		c.Encode(&slot)
		ParseCompletion(&slot, &testLimits)
	}); n != 0 {
		t.Fatalf("%v allocations per encode/parse", n)
	}
}

// A peer address goes into the field of its family and comes back.
func TestPeerFields_roundTrip(t *testing.T) {
	for _, s := range []string{"10.0.0.2", "::ffff:10.0.0.2", "2001:db8::2"} {
		a := netip.MustParseAddr(s)
		ip, ip6 := PeerFields(a)
		if got := PeerAddr(ip, ip6); got != a.Unmap() || (ip == [4]byte{}) == a.Unmap().Is4() || !onePeer(ip, ip6) {
			t.Errorf("%s: fields %v %v, back %v", s, ip, ip6, got)
		}
	}
	if ip, ip6 := PeerFields(netip.Addr{}); ip != [4]byte{} || ip6 != [16]byte{} || PeerAddr(ip, ip6).IsValid() {
		t.Error("the zero Addr")
	}
}
