package shm

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

var testParams = Params{SQEntries: 256, CQEntries: 512, ArenaSize: 1 << 20, PoolPages: 16}

// goodRegion returns a region with a valid header for testParams and the
// layout it holds.
func goodRegion(t *testing.T) ([]byte, Layout) {
	t.Helper()
	l, err := NewLayout(testParams)
	if err != nil {
		t.Fatal(err)
	}
	region := alignedBytes(int(l.RegionSize))
	if err := l.WriteHeader(region); err != nil {
		t.Fatal(err)
	}
	return region, l
}

func TestMagic_bytes(t *testing.T) {
	if Magic != binary.LittleEndian.Uint64([]byte("HOMASHM1")) {
		t.Fatalf("Magic %#x is not \"HOMASHM1\"", Magic)
	}
}

func TestNewLayout_placesParts(t *testing.T) {
	l, err := NewLayout(testParams)
	if err != nil {
		t.Fatal(err)
	}
	want := Layout{
		SQOffset: 4096, SQEntries: 256, // 256+256*64 = 16640 bytes, ends 20736 → next 4 KB 24576
		CQOffset: 24576, CQEntries: 512, // 256+512*64 = 33024, ends 57600 → 61440
		ArenaOffset: 61440, ArenaSize: 1 << 20,
		PoolOffset: 61440 + 1<<20, PoolPages: 16,
		RegionSize: 61440 + 1<<20 + 16*PageSize,
		MaxMessage: DefaultMaxMessage, Features: Features,
	}
	if l != want {
		t.Fatalf("layout\n got %+v\nwant %+v", l, want)
	}
	huge, err := NewLayout(Params{SQEntries: 1, CQEntries: 1, ArenaSize: 1, PoolPages: 1, RegionAlign: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if huge.RegionSize != 2<<20 {
		t.Fatalf("RegionSize %d, want one 2 MB page", huge.RegionSize)
	}
}

func TestNewLayout_badParams(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Params)
	}{
		{"SQEntries", func(p *Params) { p.SQEntries = 0 }},
		{"SQEntries", func(p *Params) { p.SQEntries = 100 }},
		{"SQEntries", func(p *Params) { p.SQEntries = MaxRingEntries * 2 }},
		{"CQEntries", func(p *Params) { p.CQEntries = 3 }},
		{"ArenaSize", func(p *Params) { p.ArenaSize = 0 }},
		{"ArenaSize", func(p *Params) { p.ArenaSize = MaxArenaSize + 1 }},
		{"PoolPages", func(p *Params) { p.PoolPages = 0 }},
		{"PoolPages", func(p *Params) { p.PoolPages = MaxPoolPages + 1 }},
		{"RegionAlign", func(p *Params) { p.RegionAlign = 100 }},
		{"RegionAlign", func(p *Params) { p.RegionAlign = 2048 }},
	} {
		p := testParams
		tc.edit(&p)
		_, err := NewLayout(p)
		checkLayoutErr(t, err, tc.field)
	}
}

func checkLayoutErr(t *testing.T, err error, field string) {
	t.Helper()
	var le *LayoutError
	if !errors.As(err, &le) || !errors.Is(err, ErrLayout) {
		t.Fatalf("err = %v, want a LayoutError for %s", err, field)
	}
	if le.Field != field || !strings.Contains(err.Error(), field) {
		t.Fatalf("err = %v, want field %s", err, field)
	}
}

func TestParseHeader_roundTrip(t *testing.T) {
	region, l := goodRegion(t)
	if string(region[:8]) != "HOMASHM1" {
		t.Fatalf("region starts %q", region[:8])
	}
	got, err := ParseHeader(region)
	if err != nil || got != l {
		t.Fatalf("ParseHeader = %+v, %v; want %+v", got, err, l)
	}
	// A mapping longer than RegionSize (a rounded memfd) is fine.
	longer := alignedBytes(len(region) + 8192)
	copy(longer, region)
	if got, err := ParseHeader(longer); err != nil || got != l {
		t.Fatalf("longer mapping: %+v, %v", got, err)
	}
	// The parts are where the layout says, sized as it says.
	if len(l.SQ(region)) != int(RingBytes(256)) || len(l.CQ(region)) != int(RingBytes(512)) ||
		len(l.Arena(region)) != 1<<20 || len(l.Pool(region)) != 16*PageSize {
		t.Fatal("part sizes")
	}
	if &l.Pool(region)[0] != &region[l.PoolOffset] || cap(l.Arena(region)) != 1<<20 {
		t.Fatal("part placement")
	}
	if _, err := NewConsumer(l.SQ(region), l.SQEntries); err != nil {
		t.Fatalf("SQ of a new region: %v", err)
	}
}

func TestWriteHeader_invalid(t *testing.T) {
	l, err := NewLayout(testParams)
	if err != nil {
		t.Fatal(err)
	}
	checkLayoutErr(t, l.WriteHeader(make([]byte, l.RegionSize-1)), "RegionSize")
	l.ArenaOffset++
	checkLayoutErr(t, l.WriteHeader(make([]byte, l.RegionSize)), "ArenaOffset")
}

// TestParseHeader_errors breaks one field at a time of a good header.
func TestParseHeader_errors(t *testing.T) {
	put64 := func(off int, v uint64) func([]byte) {
		return func(h []byte) { binary.LittleEndian.PutUint64(h[off:], v) }
	}
	put32 := func(off int, v uint32) func([]byte) {
		return func(h []byte) { binary.LittleEndian.PutUint32(h[off:], v) }
	}
	_, l := goodRegion(t)
	for _, tc := range []struct {
		name  string
		edit  func([]byte)
		field string
	}{
		{"magic", put64(hdrMagic, 0x1234), "Magic"},
		{"version", put32(hdrVersion, 2), "Version"},
		{"header size", put32(hdrHeaderSize, 8192), "HeaderSize"},
		{"entry size", put32(hdrEntrySize, 128), "EntrySize"},
		{"page size", put32(hdrPageSize, 4096), "PageSize"},
		{"region beyond mapping", put64(hdrRegionSize, l.RegionSize+1), "RegionSize"},
		{"region below header", put64(hdrRegionSize, 100), "RegionSize"},
		{"sq entries zero", put64(hdrSQEntries, 0), "SQEntries"},
		{"sq entries not power of two", put64(hdrSQEntries, 255), "SQEntries"},
		{"sq entries huge", put64(hdrSQEntries, 1<<62), "SQEntries"},
		{"cq entries not power of two", put64(hdrCQEntries, 513), "CQEntries"},
		{"arena size zero", put64(hdrArenaSize, 0), "ArenaSize"},
		{"arena size huge", put64(hdrArenaSize, 1<<63), "ArenaSize"},
		{"pool pages zero", put64(hdrPoolPages, 0), "PoolPages"},
		{"pool pages huge", put64(hdrPoolPages, 1<<40), "PoolPages"},
		{"sq misaligned", put64(hdrSQOffset, l.SQOffset+8), "SQOffset"},
		{"cq misaligned", put64(hdrCQOffset, l.CQOffset+1), "CQOffset"},
		{"arena misaligned", put64(hdrArenaOffset, l.ArenaOffset+32), "ArenaOffset"},
		{"pool misaligned", put64(hdrPoolOffset, l.PoolOffset+63), "PoolOffset"},
		{"sq beyond region", put64(hdrSQOffset, l.RegionSize), "SQOffset"},
		{"sq offset near 2^64", put64(hdrSQOffset, 1<<63), "SQOffset"},
		{"cq offset 2^64-64", put64(hdrCQOffset, ^uint64(63)), "CQOffset"},
		{"arena ends beyond region", put64(hdrArenaSize, l.RegionSize-l.ArenaOffset+1), "ArenaOffset"},
		{"pool ends beyond region", put64(hdrPoolOffset, l.RegionSize-15*PageSize), "PoolOffset"},
		{"sq overlaps header", put64(hdrSQOffset, 0), "SQOffset"},
		{"sq inside header", put64(hdrSQOffset, 4032), "SQOffset"},
		{"cq overlaps sq", put64(hdrCQOffset, l.SQOffset+64), "CQOffset"},
		{"arena overlaps cq", put64(hdrArenaOffset, l.CQOffset+RingBytes(512)-64), "ArenaOffset"},
		{"pool overlaps arena", put64(hdrPoolOffset, l.ArenaOffset), "PoolOffset"},
		{"pool overlaps sq", put64(hdrPoolOffset, l.SQOffset), "PoolOffset"},
		{"sq entries grow into cq", put64(hdrSQEntries, 512), "CQOffset"},
		{"max message above the limit", put32(hdrMaxMessage, 1<<31), "MaxMessage"},
		{"host info without an address", put32(hdrFeatures, Features|FeatureHostInfo), "HostIPv4"},
		{"host info with a speed but no address", func(h []byte) {
			put32(hdrFeatures, Features|FeatureHostInfo)(h)
			put32(hdrLinkMbps, 100000)(h)
			put32(hdrMTU, 1500)(h)
		}, "HostIPv4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			region, _ := goodRegion(t)
			tc.edit(region)
			got, err := ParseHeader(region)
			checkLayoutErr(t, err, tc.field)
			if got != (Layout{}) {
				t.Fatalf("bad header returned a layout: %+v", got)
			}
		})
	}
	checkLayoutErr(t, func() error { _, err := ParseHeader(make([]byte, 100)); return err }(), "RegionSize")
}

// Two adjacent parts touching end to start do not overlap.
func TestLayout_adjacentPartsAllowed(t *testing.T) {
	l := Layout{SQOffset: HeaderSize, SQEntries: 4, CQEntries: 4, ArenaSize: 64, PoolPages: 1, MaxMessage: 64}
	l.CQOffset = l.SQOffset + RingBytes(4)
	l.ArenaOffset = l.CQOffset + RingBytes(4)
	l.PoolOffset = l.ArenaOffset + 64
	l.RegionSize = l.PoolOffset + PageSize
	if err := l.Validate(l.RegionSize); err != nil {
		t.Fatal(err)
	}
}

// TestNewLayout_maxMessage: the header carries the region's largest
// message: 1,000,000 bytes by default, up to MaxMessageLimit (64 MiB in a
// region sized for it: 64 MiB of arena, 1024 pages), and NewLayout
// refuses more, naming MaxMessage.
func TestNewLayout_maxMessage(t *testing.T) {
	const mib64 = 64 << 20
	for _, tc := range []struct {
		name  string
		p     Params
		want  uint32
		field string // refused, naming it
	}{
		{"default", testParams, DefaultMaxMessage, ""},
		{"64 MiB", Params{SQEntries: 16, CQEntries: 16, ArenaSize: mib64, PoolPages: 1024, MaxMessage: mib64}, mib64, ""},
		{"at the limit", Params{SQEntries: 16, CQEntries: 16, ArenaSize: 1 << 16, PoolPages: 1, MaxMessage: MaxMessageLimit}, MaxMessageLimit, ""},
		{"above the limit", Params{SQEntries: 16, CQEntries: 16, ArenaSize: 1 << 16, PoolPages: 1, MaxMessage: MaxMessageLimit + 1}, 0, "MaxMessage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(tc.p)
			if tc.field != "" {
				checkLayoutErr(t, err, tc.field)
				return
			}
			if err != nil || l.MaxMessage != tc.want {
				t.Fatalf("MaxMessage %d, err %v; want %d", l.MaxMessage, err, tc.want)
			}
			region := alignedBytes(int(l.RegionSize))
			if err := l.WriteHeader(region); err != nil {
				t.Fatal(err)
			}
			if got, err := ParseHeader(region); err != nil || got != l {
				t.Fatalf("ParseHeader = %+v, %v; want %+v", got, err, l)
			}
			if lim := l.Limits(0); lim.MaxMessage != tc.want {
				t.Fatalf("Limits(0).MaxMessage = %d", lim.MaxMessage)
			}
			if lim := l.Limits(100); lim.MaxMessage != 100 {
				t.Fatalf("Limits(100).MaxMessage = %d, want the engine's smaller limit", lim.MaxMessage)
			}
		})
	}
}

// TestParseHeader_maxMessageZeroFromOlderDaemon: a header whose
// MaxMessage bytes are zero (reserved before the field) reads as
// DefaultMaxMessage.
func TestParseHeader_maxMessageZeroFromOlderDaemon(t *testing.T) {
	region, l := goodRegion(t)
	binary.LittleEndian.PutUint32(region[hdrMaxMessage:], 0)
	got, err := ParseHeader(region)
	if err != nil || got != l || got.MaxMessage != DefaultMaxMessage {
		t.Fatalf("ParseHeader = %+v, %v; want MaxMessage %d", got, err, DefaultMaxMessage)
	}
}

// testHost is a host with both addresses, a 100 Gb/s link and jumbo frames.
var testHost = HostInfo{IPv4: [4]byte{10, 0, 0, 2}, IPv6: [16]byte{0xfd, 15: 2}, LinkMbps: 100000, MTU: 9000}

// TestParseHeader_hostInfo: a layout that says its host is written at
// the table's offsets (the IPv4 address in network order) with
// FeatureHostInfo, and read back whole; either address alone is enough.
func TestParseHeader_hostInfo(t *testing.T) {
	for _, h := range []HostInfo{
		testHost,
		{IPv4: [4]byte{192, 168, 1, 7}}, // speed and MTU unknown
		{IPv6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, MTU: 1500}, // an IPv6-only port
	} {
		l, err := NewLayout(testParams)
		if err != nil {
			t.Fatal(err)
		}
		l.SetHost(h)
		if l.Features != Features|FeatureHostInfo {
			t.Fatalf("SetHost: Features %#x", l.Features)
		}
		region := alignedBytes(int(l.RegionSize))
		if err := l.WriteHeader(region); err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		if le.Uint32(region[100:]) != Features|FeatureHostInfo || string(region[104:108]) != string(h.IPv4[:]) ||
			le.Uint32(region[108:]) != h.LinkMbps || string(region[112:128]) != string(h.IPv6[:]) ||
			le.Uint32(region[128:]) != h.MTU {
			t.Fatalf("header bytes 100..132: % x", region[100:132])
		}
		if got, err := ParseHeader(region); err != nil || got != l {
			t.Fatalf("ParseHeader = %+v, %v; want %+v", got, err, l)
		}
	}
	// A Host set without the bit in Features is written with it.
	l, _ := NewLayout(testParams)
	l.Host = testHost
	region := alignedBytes(int(l.RegionSize))
	if err := l.WriteHeader(region); err != nil {
		t.Fatal(err)
	}
	if got, err := ParseHeader(region); err != nil || got.Host != testHost || got.Features&FeatureHostInfo == 0 {
		t.Fatalf("ParseHeader = %+v, %v; want the host and FeatureHostInfo", got, err)
	}
	// SetHost of the zero HostInfo says nothing again.
	l.SetHost(HostInfo{})
	if l.Features&FeatureHostInfo != 0 || l.Host != (HostInfo{}) {
		t.Fatalf("SetHost(zero): %+v", l)
	}
}

// TestParseHeader_hostInfoFromOlderDaemon: without FeatureHostInfo the
// bytes after Features are reserved (an older daemon's zero): Host reads
// as zero, whatever they hold.
func TestParseHeader_hostInfoFromOlderDaemon(t *testing.T) {
	region, l := goodRegion(t)
	if l.Features&FeatureHostInfo != 0 || binary.LittleEndian.Uint32(region[hdrFeatures:])&FeatureHostInfo != 0 {
		t.Fatal("a layout without a host has FeatureHostInfo")
	}
	for i := hdrHostIPv4; i < hdrUsed; i++ {
		if region[i] != 0 {
			t.Fatalf("byte %d of a header without a host is %#x", i, region[i])
		}
		region[i] = 0xa5
	}
	got, err := ParseHeader(region)
	if err != nil || got != l || got.Host != (HostInfo{}) {
		t.Fatalf("ParseHeader = %+v, %v; want %+v", got, err, l)
	}
}

// TestWriteHeader_hostWithoutAddress: a Host with no address is refused,
// naming HostIPv4, as ParseHeader would refuse the header.
func TestWriteHeader_hostWithoutAddress(t *testing.T) {
	l, err := NewLayout(testParams)
	if err != nil {
		t.Fatal(err)
	}
	l.SetHost(HostInfo{LinkMbps: 10000, MTU: 1500})
	checkLayoutErr(t, l.WriteHeader(alignedBytes(int(l.RegionSize))), "HostIPv4")
	l.Host = HostInfo{}
	checkLayoutErr(t, l.Validate(l.RegionSize), "HostIPv4") // the bit alone
}
