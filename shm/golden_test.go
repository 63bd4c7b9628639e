package shm

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/entries.golden holds entry vectors that every implementation
// of the worker protocol checks itself against: this package (below) and
// libhoma, the C library in native/ (native/tests/test_golden.c). One
// vector a line:
//
//	NAME sub|comp op=N flags=N port=N length=N cookie=N rpc=N ip=A.B.C.D ip6=HEX32 peer_port=N err=N offset=N page=N pages=N code=N HEX128
//
// the decoded fields, the ErrCode that ParseSubmission or ParseCompletion
// returns against goldenLimits, and the 64 bytes. Regenerate with
// go test ./shm -run TestGolden -update (after changing goldenVectors).

var updateGolden = flag.Bool("update", false, "rewrite testdata/entries.golden from goldenVectors")

const goldenPath = "testdata/entries.golden"

// goldenLimits are the limits every vector's code is computed against
// (testLimits: a 1 MB arena, 16 pool pages, messages up to 1,000,000).
var goldenLimits = Limits{ArenaSize: 1 << 20, PoolPages: 16, MaxMessage: 1_000_000}

type goldenVector struct {
	name string
	sub  bool
	f    fields
}

func sub(name string, s Submission) goldenVector {
	return goldenVector{name, true, fields{op: uint8(s.Op), flags: s.Flags, port: s.Port, length: s.Length,
		cookie: s.Cookie, rpc: s.RPCID, ip: s.PeerIP, ip6: s.PeerIP6, peerPort: s.PeerPort, offset: s.Offset,
		page: s.Page, pages: s.Pages}}
}

func comp(name string, c Completion) goldenVector {
	return goldenVector{name, false, fields{op: uint8(c.Op), flags: c.Flags, port: c.Port, length: c.Length,
		cookie: c.Cookie, rpc: c.RPCID, ip: c.PeerIP, ip6: c.PeerIP6, peerPort: c.PeerPort, err: uint16(c.Err),
		offset: c.Offset, page: c.Page, pages: c.Pages}}
}

var (
	gold6  = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
	goldIP = [4]byte{192, 168, 1, 7}
)

// goldenVectors: the valid submissions and the byte layouts pinned in
// entry_test.go, the vectors of python/tests/test_entry.py (GO_SUB,
// GO_COMP, GO_COMP6, GO_ERR), and entries each check refuses.
func goldenVectors() []goldenVector {
	v := []goldenVector{}
	for i, s := range validSubmissions {
		v = append(v, sub(fmt.Sprintf("valid-%s-%d", s.Op, i), s))
	}
	v = append(v,
		sub("pinned-reply", Submission{Op: OpReply, Length: 0x0102, Cookie: 0x1122334455667788, RPCID: 0x0b,
			PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 0x8001, Offset: 0x40}),
		sub("python-go-sub", Submission{Op: OpReply, Length: 0x01020304, Cookie: 0x1122334455667788,
			RPCID: 0x0102030405060709, PeerIP: [4]byte{10, 0, 0, 2}, PeerPort: 0xBEEF, Offset: 0xA0B0C0D0E0F0}),
		sub("quiet-send-with-pages", Submission{Op: OpSend, Flags: SubFlagQuiet, PeerIP: peer, PeerPort: 99,
			Length: 1, Page: 3, Pages: 2}),
		sub("bad-op-zero", Submission{}),
		sub("bad-op-unknown", Submission{Op: opEnd}),
		sub("bad-flags-bind", Submission{Op: OpBind, Port: 1, Flags: 1}),
		sub("bad-flags-unknown", Submission{Op: OpSend, Flags: 0x20, PeerIP: peer, PeerPort: 99, Length: 1}),
		sub("priority-send", Submission{Op: OpSend, Flags: PriorityFlags(6), PeerIP: peer, PeerPort: 99, Length: 1}),
		sub("bad-flags-level-without-priority", Submission{Op: OpSend, Flags: 6 << 2, PeerIP: peer, PeerPort: 99, Length: 1}),
		sub("bad-flags-priority-reply", Submission{Op: OpReply, Flags: PriorityFlags(6), RPCID: 1, PeerIP: peer, PeerPort: 99, Length: 1}),
		sub("bad-reserved-bind-length", Submission{Op: OpBind, Port: 1, Length: 1}),
		sub("bad-port-bind-client", Submission{Op: OpBind, Port: 0x8000}),
		sub("bad-port-send-zero", Submission{Op: OpSend, PeerIP: peer, Length: 1}),
		sub("bad-peer-none", Submission{Op: OpSend, PeerPort: 99, Length: 1}),
		sub("bad-peer-both", Submission{Op: OpSend, PeerIP: peer, PeerIP6: peer6, PeerPort: 99, Length: 1}),
		sub("bad-peer-mapped", Submission{Op: OpSend, PeerIP6: [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 2},
			PeerPort: 99, Length: 1}),
		sub("bad-length-long", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Length: 1_000_001}),
		sub("bad-arena-past", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: 1<<20 - 99, Length: 100}),
		sub("bad-arena-wrap", Submission{Op: OpSend, PeerIP: peer, PeerPort: 99, Offset: ^uint64(0), Length: 2}),
		sub("bad-rpc-reply-even", Submission{Op: OpReply, RPCID: 2, PeerIP: peer, PeerPort: 1, Length: 1}),
		sub("bad-rpc-abort-odd", Submission{Op: OpAbort, RPCID: 3}),
		sub("bad-page-none", Submission{Op: OpReturnPages, Page: 1}),
		sub("bad-page-huge", Submission{Op: OpReturnPages, Page: 1, Pages: ^uint32(0)}),
		sub("bad-page-send-no-pages", Submission{Op: OpSend, Page: 3, PeerIP: peer, PeerPort: 99, Length: 1}),
		goldenVector{"bad-reserved-err", true, fields{op: uint8(OpAbortAll), cookie: 9, err: 1}},
		comp("python-go-comp", Completion{Op: CompResponse, Flags: 1, Port: 0x1234, Length: 70000,
			Cookie: 0xFEDCBA9876543210, RPCID: 42, PeerIP: goldIP, PeerPort: 99, Page: 3, Pages: 2}),
		comp("python-go-comp6", Completion{Op: CompRequest, Port: 99, RPCID: 13, PeerIP6: gold6, PeerPort: 0x8001,
			Length: 5, Page: 1, Pages: 1}),
		comp("python-go-err", Completion{Op: CompError, Cookie: 5, RPCID: 6, Err: ErrCodePeerRestarted, Offset: 64,
			Length: 128}),
		comp("accepted-send", Completion{Op: CompAccepted, Cookie: 1, RPCID: 2}),
		comp("released", Completion{Op: CompReleased, Cookie: 3, Offset: 1<<20 - 64, Length: 64}),
		comp("error-peer-message-length", Completion{Op: CompError, Flags: CompFlagReleased, Cookie: 4,
			Err: ErrCodePeerMessageLength}),
		comp("bad-op-zero", Completion{}),
		comp("bad-op-unknown", Completion{Op: compEnd}),
		comp("bad-flags", Completion{Op: CompAccepted, Flags: 4, Cookie: 1}),
		comp("bad-peer-both", Completion{Op: CompRequest, Port: 1, RPCID: 1, PeerIP: goldIP, PeerIP6: gold6,
			PeerPort: 5, Length: 1, Pages: 1}),
		comp("bad-error-without-code", Completion{Op: CompError, Cookie: 1}),
		comp("bad-code-on-accepted", Completion{Op: CompAccepted, Cookie: 1, Err: ErrCodeTimeout}),
		comp("bad-code-unknown", Completion{Op: CompError, Cookie: 1, Err: 11}),
		comp("bad-code-past-end", Completion{Op: CompError, Cookie: 1, Err: errCodeEnd}),
		comp("bad-length-zero", Completion{Op: CompResponse, RPCID: 2, PeerIP: goldIP, PeerPort: 1, Pages: 1}),
		comp("bad-length-long", Completion{Op: CompResponse, RPCID: 2, PeerIP: goldIP, PeerPort: 1,
			Length: 1_000_001, Pages: 16}),
		comp("bad-page-outside", Completion{Op: CompRequest, Port: 1, RPCID: 1, PeerIP: goldIP, PeerPort: 5,
			Length: 10, Page: 10_000, Pages: 1}),
		comp("bad-page-too-few", Completion{Op: CompRequest, Port: 1, RPCID: 1, PeerIP: goldIP, PeerPort: 5,
			Length: PageSize + 1, Pages: 1}),
		comp("bad-page-run-past", Completion{Op: CompResponse, RPCID: 2, PeerIP: goldIP, PeerPort: 1, Length: 1,
			Page: 15, Pages: 2}),
		comp("bad-arena-released", Completion{Op: CompReleased, Cookie: 1, Offset: 1 << 40, Length: 1}),
		comp("bad-arena-released-wrap", Completion{Op: CompReleased, Cookie: 1, Offset: ^uint64(0), Length: 2}),
	)
	return v
}

// line formats a vector: its fields, the code its parse gives, its bytes.
func (g goldenVector) line() string {
	var s Slot
	g.f.encode(&s)
	code := g.parse(&s)
	dir := "comp"
	if g.sub {
		dir = "sub"
	}
	f := g.f
	return fmt.Sprintf("%s %s op=%d flags=%d port=%d length=%d cookie=%d rpc=%d ip=%s ip6=%s peer_port=%d err=%d offset=%d page=%d pages=%d code=%d %s",
		g.name, dir, f.op, f.flags, f.port, f.length, f.cookie, f.rpc, netip.AddrFrom4(f.ip), hex.EncodeToString(f.ip6[:]),
		f.peerPort, f.err, f.offset, f.page, f.pages, code, hex.EncodeToString(s[:]))
}

func (g goldenVector) parse(s *Slot) ErrCode {
	if g.sub {
		_, code := ParseSubmission(s, &goldenLimits)
		return code
	}
	_, code := ParseCompletion(s, &goldenLimits)
	return code
}

// parseGolden reads one line back into a vector, its code and bytes.
func parseGolden(line string) (goldenVector, ErrCode, Slot, error) {
	var g goldenVector
	var s Slot
	w := strings.Fields(line)
	if len(w) != 17 || (w[1] != "sub" && w[1] != "comp") {
		return g, 0, s, fmt.Errorf("want 17 words, NAME sub|comp ... HEX")
	}
	g.name, g.sub = w[0], w[1] == "sub"
	kv := map[string]string{}
	for _, x := range w[2:16] {
		k, v, ok := strings.Cut(x, "=")
		if !ok {
			return g, 0, s, fmt.Errorf("%q is not key=value", x)
		}
		kv[k] = v
	}
	num := func(k string, bits int) uint64 {
		n, err := strconv.ParseUint(kv[k], 10, bits)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", k, err))
		}
		return n
	}
	var code ErrCode
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		g.f = fields{op: uint8(num("op", 8)), flags: uint8(num("flags", 8)), port: uint16(num("port", 16)),
			length: uint32(num("length", 32)), cookie: num("cookie", 64), rpc: num("rpc", 64),
			peerPort: uint16(num("peer_port", 16)), err: uint16(num("err", 16)), offset: num("offset", 64),
			page: uint32(num("page", 32)), pages: uint32(num("pages", 32))}
		code = ErrCode(num("code", 16))
		return nil
	}()
	if err != nil {
		return g, 0, s, err
	}
	a, err := netip.ParseAddr(kv["ip"])
	if err != nil || !a.Is4() {
		return g, 0, s, fmt.Errorf("ip %q", kv["ip"])
	}
	g.f.ip = a.As4()
	b, err := hex.DecodeString(kv["ip6"])
	if err != nil || len(b) != 16 {
		return g, 0, s, fmt.Errorf("ip6 %q", kv["ip6"])
	}
	g.f.ip6 = [16]byte(b)
	b, err = hex.DecodeString(w[16])
	if err != nil || len(b) != EntrySize {
		return g, 0, s, fmt.Errorf("bytes %q", w[16])
	}
	s = Slot(b)
	return g, code, s, nil
}

// TestGolden_fileIsCurrent checks that testdata/entries.golden holds
// exactly the vectors of goldenVectors, as -update writes them (so the
// file libhoma's test reads cannot lag the Go side's vectors).
func TestGolden_fileIsCurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Entry vectors of the worker protocol (shm/entry.go), checked by shm/golden_test.go and\n" +
		"# native/tests/test_golden.c. One a line: NAME sub|comp, the fields, the ErrCode of\n" +
		"# ParseSubmission/ParseCompletion against Limits{ArenaSize: 1 MiB, PoolPages: 16,\n" +
		"# MaxMessage: 1000000}, and the 64 bytes. Generated: go test ./shm -run TestGolden -update\n")
	for _, g := range goldenVectors() {
		b.WriteString(g.line() + "\n")
	}
	if *updateGolden {
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Errorf("%s is not what goldenVectors gives: go test ./shm -run TestGolden -update", goldenPath)
	}
}

// TestGolden_entries checks this package's Encode and Parse functions
// against every vector of the file: the same bytes from the fields, the
// same fields and code from the bytes.
func TestGolden_entries(t *testing.T) {
	fd, err := os.Open(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	sc := bufio.NewScanner(fd)
	n, subs, comps := 0, 0, 0
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		g, code, want, err := parseGolden(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", goldenPath, ln, err)
		}
		n++
		var got Slot
		if g.sub {
			subs++
			if g.f.err == 0 { // a Submission has no error field: that vector is bytes only
				s := Submission{Op: Op(g.f.op), Flags: g.f.flags, Port: g.f.port, Length: g.f.length,
					Cookie: g.f.cookie, RPCID: g.f.rpc, PeerIP: g.f.ip, PeerIP6: g.f.ip6, PeerPort: g.f.peerPort,
					Offset: g.f.offset, Page: g.f.page, Pages: g.f.pages}
				s.Encode(&got)
				if got != want {
					t.Errorf("%s: Encode\n got %x\nwant %x", g.name, got, want)
				}
			}
			s, c := ParseSubmission(&want, &goldenLimits)
			if c != code {
				t.Errorf("%s: ParseSubmission code %v, want %v", g.name, c, code)
			}
			back := sub("", s).f
			back.err = g.f.err
			if back != g.f {
				t.Errorf("%s: ParseSubmission fields %+v, want %+v", g.name, back, g.f)
			}
			continue
		}
		comps++
		c := Completion{Op: CompOp(g.f.op), Flags: g.f.flags, Port: g.f.port, Length: g.f.length,
			Cookie: g.f.cookie, RPCID: g.f.rpc, PeerIP: g.f.ip, PeerIP6: g.f.ip6, PeerPort: g.f.peerPort,
			Err: ErrCode(g.f.err), Offset: g.f.offset, Page: g.f.page, Pages: g.f.pages}
		c.Encode(&got)
		if got != want {
			t.Errorf("%s: Encode\n got %x\nwant %x", g.name, got, want)
		}
		p, pc := ParseCompletion(&want, &goldenLimits)
		if pc != code {
			t.Errorf("%s: ParseCompletion code %v, want %v", g.name, pc, code)
		}
		if comp("", p).f != g.f {
			t.Errorf("%s: ParseCompletion fields %+v, want %+v", g.name, comp("", p).f, g.f)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if subs < 20 || comps < 15 {
		t.Fatalf("%d vectors (%d submissions, %d completions): the file lost some", n, subs, comps)
	}
}

// TestGolden_pinned checks that the file still holds the byte layouts
// pinned elsewhere (entry_test.go, python/tests/test_entry.py).
func TestGolden_pinned(t *testing.T) {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{
		"03000000020100008877665544332211" + "0b000000000000000a00000201800000" + "4000000000000000" + strings.Repeat("00", 24),
		"0300000004030201887766554433221109070605040302010a000002efbe0000f0e0d0c0b0a00000" + strings.Repeat("00", 24),
		"03013412701101001032547698badcfe2a00000000000000c0a80107630000000000000000000000030000000200000000000000000000000000000000000000",
		"020063000500000000000000000000000d0000000000000000000000018000000000000000000000010000000100000020010db8000000000000000000000002",
		"04000000800000000500000000000000060000000000000000000000000018004000000000000000000000000000000000000000000000000000000000000000",
	} {
		if !strings.Contains(string(b), " "+h+"\n") {
			t.Errorf("%s lacks the pinned entry %s", goldenPath, h)
		}
	}
}
