package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The header at offset 0 of a region. All fields are little-endian; the
// daemon writes it once before the worker maps the region and never reads
// it back (a worker could overwrite it; the daemon keeps its own Layout).
//
//	off size field        meaning
//	  0  8   Magic        "HOMASHM1" as bytes (Magic as a u64)
//	  8  4   Version      layout version, 1
//	 12  4   HeaderSize   bytes reserved for the header, 4096
//	 16  8   RegionSize   bytes of the whole region (≤ the memfd's size)
//	 24  8   SQOffset     submission ring (worker → engine): RingBytes(SQEntries) bytes
//	 32  8   SQEntries    slots in the submission ring, a power of two
//	 40  8   CQOffset     completion ring (engine → worker): RingBytes(CQEntries) bytes
//	 48  8   CQEntries    slots in the completion ring, a power of two
//	 56  8   ArenaOffset  transmit arena: the worker writes payloads, the engine reads
//	 64  8   ArenaSize    bytes in the transmit arena
//	 72  8   PoolOffset   receive pool: PoolPages pages of PageSize bytes, engine fills
//	 80  8   PoolPages    pages in the receive pool
//	 88  4   EntrySize    bytes per ring slot, 64
//	 92  4   PageSize     bytes per receive-pool page, 65536
//	 96  4   MaxMessage   largest message the entries carry, bytes (see below)
//	100  4   Features     Feature bits: what the daemon's side does beyond version 1's entries
//	104  4   HostIPv4     the host's IPv4 address, network order; zero: none  (FeatureHostInfo)
//	108  4   LinkMbps     the port's link speed, Mbit/s; 0: unknown          (FeatureHostInfo)
//	112 16   HostIPv6     the host's IPv6 address; zero: none                (FeatureHostInfo)
//	128  4   MTU          the port's IP MTU, bytes; 0: unknown               (FeatureHostInfo)
//	132 ...  reserved     zero up to HeaderSize
//
// Every offset is a multiple of CacheLine, every part lies inside
// RegionSize, and no two parts (header included) overlap. NewLayout puts
// each part on a 4 KB boundary in the order header, SQ, CQ, arena, pool.
//
// MaxMessage, in 1..MaxMessageLimit, is the daemon's largest message: no
// submission or completion names a longer one. A message is sent from
// one arena range and received into one run of pool pages, so one longer
// than the arena cannot be sent, and one longer than the pool cannot be
// received (NoBufferSpace); the daemon's config sizes both for it. The
// field was reserved before: a header with 0 there comes from a daemon
// that carried at most DefaultMaxMessage, and ParseHeader reads it as
// that. Above DefaultMaxMessage, a message can go only to peers that run
// homa-dpdk (kernel Homa takes no longer ones); the daemon refuses it
// towards others (ErrCodePeerMessageLength).
//
// HostIPv4 through MTU say which host the region's control socket serves
// (the port the daemon opened it for): a worker learns its own Homa
// address there, and the link it sends on. They mean something only when
// Features has FeatureHostInfo; a daemon from before them leaves the bit
// clear and the bytes zero (reserved then), and ParseHeader reads them
// only with the bit set. With the bit set, HostIPv4 or HostIPv6 (or
// both) is set: a header with neither is refused (HostIPv4).
const (
	hdrMagic       = 0
	hdrVersion     = 8
	hdrHeaderSize  = 12
	hdrRegionSize  = 16
	hdrSQOffset    = 24
	hdrSQEntries   = 32
	hdrCQOffset    = 40
	hdrCQEntries   = 48
	hdrArenaOffset = 56
	hdrArenaSize   = 64
	hdrPoolOffset  = 72
	hdrPoolPages   = 80
	hdrEntrySize   = 88
	hdrPageSize    = 92
	hdrMaxMessage  = 96
	hdrFeatures    = 100
	hdrHostIPv4    = 104
	hdrLinkMbps    = 108
	hdrHostIPv6    = 112
	hdrMTU         = 128
	hdrUsed        = 132 // bytes of the header that carry fields
)

const (
	// Magic is the first 8 bytes of a region, "HOMASHM1", read as a
	// little-endian u64.
	Magic uint64 = 0x314d4853414d4f48
	// Version is the layout version this package writes and accepts.
	Version uint32 = 1
	// HeaderSize is the bytes reserved for the header at offset 0.
	HeaderSize = 4096
	// CacheLine is the alignment of every part of the region.
	CacheLine = 64
	// PageSize is the size of one receive-pool page (kernel Homa's bpage).
	PageSize = 65536
	// MaxArenaSize and MaxPoolPages bound a region (1 TB each) so that
	// no offset arithmetic can overflow.
	MaxArenaSize = 1 << 40
	MaxPoolPages = 1 << 24
	// DefaultMaxMessage is the largest message of a region whose Params
	// name none: kernel Homa's HOMA_MAX_MESSAGE_LENGTH, 1,000,000 bytes.
	DefaultMaxMessage = 1_000_000
	// MaxMessageLimit bounds MaxMessage: 2^31 − 1 bytes, the engine's
	// bound (wire.MaxMessageLimit).
	MaxMessageLimit = 1<<31 - 1
	// partAlign is where NewLayout starts each part.
	partAlign = 4096
)

// Feature bits of the header's Features field: what the engine side of a
// region does beyond version 1's entries. A worker uses a feature only
// when the header names it (a daemon from before the field writes 0
// there), and one that needs a feature the daemon lacks says so at
// attach, so an old daemon and a new worker meet with a clear error,
// never a misread entry (as io_uring's feature bits do).
const (
	// FeatureQuietAccept: a Send or Reply may carry SubFlagQuiet; once
	// accepted it is then answered by nothing but its outcome (entry.go).
	FeatureQuietAccept uint32 = 1 << iota
	// FeatureReturnOnSubmit: a Send or Reply may carry a run of receive
	// pages to give back (its Page and Pages fields), sparing a
	// ReturnPages entry.
	FeatureReturnOnSubmit
	// FeatureDoorbell: the daemon's loop may sleep, and a worker that
	// asks for it ("doorbell\n" on the control connection, control_linux.go)
	// gets its session's doorbell, an eventfd of its own, to write when it
	// finds its submission ring's wait flag raised after a push (ring.go,
	// "Sleeping", the other way round). Set by the server only when it
	// offers doorbells (ServerConfig.Doorbell).
	FeatureDoorbell
	// FeatureHostInfo: the header's HostIPv4, LinkMbps, HostIPv6 and MTU
	// say which host the region's socket serves (Layout.Host). Set by
	// the server only when it was told the host (ServerConfig.Host).
	FeatureHostInfo
	// FeaturePriority: a Send may carry SubFlagPriority and a level
	// (PriorityFlags), the priority of its unscheduled packets.
	FeaturePriority
	// Features are the bits this package's engine side implements (hub/
	// and shmtest/ both); FeatureDoorbell and FeatureHostInfo depend on
	// the server.
	Features = FeatureQuietAccept | FeatureReturnOnSubmit | FeaturePriority
)

// ErrLayout is wrapped by every *LayoutError (errors.Is(err, ErrLayout)).
var ErrLayout = errors.New("shm: bad region layout")

// LayoutError says which header field (or Params field) is wrong.
type LayoutError struct {
	Field  string // header field name as in the table, e.g. "ArenaOffset"
	Value  uint64 // the value found
	Reason string // what is wrong with it
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("shm: layout %s = %d: %s", e.Field, e.Value, e.Reason)
}

func (e *LayoutError) Unwrap() error { return ErrLayout }

func layoutErr(field string, v uint64, reason string) error {
	return &LayoutError{Field: field, Value: v, Reason: reason}
}

// Params are the sizes a daemon chooses for one worker's region.
type Params struct {
	SQEntries   uint64 // submission ring slots, a power of two
	CQEntries   uint64 // completion ring slots, a power of two
	ArenaSize   uint64 // transmit arena bytes (> 0)
	PoolPages   uint64 // receive pool pages of PageSize bytes (> 0)
	RegionAlign uint64 // round RegionSize up to this (0: 4096; 2 MB for hugetlb); a power of two
	// MaxMessage is the largest message the region's entries carry, in
	// bytes, 1..MaxMessageLimit (0: DefaultMaxMessage). The daemon's
	// config checks that the arena and the pool hold it.
	MaxMessage uint32
}

// Layout is where each part of a region lives. Offsets and sizes are in
// bytes from the start of the region.
type Layout struct {
	RegionSize  uint64
	SQOffset    uint64
	SQEntries   uint64
	CQOffset    uint64
	CQEntries   uint64
	ArenaOffset uint64
	ArenaSize   uint64
	PoolOffset  uint64
	PoolPages   uint64
	MaxMessage  uint32 // largest message in bytes (see the table)
	Features    uint32 // Feature bits of the engine side (NewLayout: Features)
	// Host is the host the region's socket serves (FeatureHostInfo; zero
	// without it). SetHost sets it and the bit together.
	Host HostInfo
}

// HostInfo is what a header says of the host whose control socket made
// the region (FeatureHostInfo): its addresses, and its port's link. A
// worker puts its address in what it tells its peers (an NCCL connection
// handle) and reports the link's speed. At least one address is set.
type HostInfo struct {
	IPv4     [4]byte  // the host's IPv4 address, network order; zero: none
	IPv6     [16]byte // the host's IPv6 address; zero: none
	LinkMbps uint32   // the port's link speed, Mbit/s; 0: unknown
	MTU      uint32   // the port's IP MTU, bytes; 0: unknown
}

// SetHost makes the header say h (FeatureHostInfo set), or, for the zero
// HostInfo, say nothing (the bit clear).
func (l *Layout) SetHost(h HostInfo) {
	l.Host = h
	if h == (HostInfo{}) {
		l.Features &^= FeatureHostInfo
	} else {
		l.Features |= FeatureHostInfo
	}
}

// checkHost: a header that says its host names an address.
func (l *Layout) checkHost() error {
	if l.Features&FeatureHostInfo == 0 && l.Host == (HostInfo{}) {
		return nil
	}
	if l.Host.IPv4 == [4]byte{} && l.Host.IPv6 == [16]byte{} {
		return layoutErr("HostIPv4", 0, "zero, and HostIPv6 too, in a header with FeatureHostInfo")
	}
	return nil
}

// NewLayout places the parts of a region for p and checks the result.
func NewLayout(p Params) (Layout, error) {
	round := p.RegionAlign
	if round == 0 {
		round = partAlign
	}
	if round < partAlign || round&(round-1) != 0 || round > 1<<30 {
		return Layout{}, layoutErr("RegionAlign", round, "not a power of two in 4096..1<<30")
	}
	if err := checkRingEntries("SQEntries", p.SQEntries); err != nil {
		return Layout{}, err
	}
	if err := checkRingEntries("CQEntries", p.CQEntries); err != nil {
		return Layout{}, err
	}
	if err := checkArenaSize(p.ArenaSize); err != nil {
		return Layout{}, err
	}
	if err := checkPoolPages(p.PoolPages); err != nil {
		return Layout{}, err
	}
	l := Layout{SQEntries: p.SQEntries, CQEntries: p.CQEntries, ArenaSize: p.ArenaSize, PoolPages: p.PoolPages,
		MaxMessage: p.MaxMessage, Features: Features}
	if l.MaxMessage == 0 {
		l.MaxMessage = DefaultMaxMessage
	}
	off := uint64(HeaderSize)
	l.SQOffset, off = off, alignUp(off+RingBytes(p.SQEntries), partAlign)
	l.CQOffset, off = off, alignUp(off+RingBytes(p.CQEntries), partAlign)
	l.ArenaOffset, off = off, alignUp(off+p.ArenaSize, partAlign)
	l.PoolOffset, off = off, off+p.PoolPages*PageSize
	l.RegionSize = alignUp(off, round)
	return l, l.Validate(l.RegionSize)
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

func checkMaxMessage(n uint32) error {
	if n == 0 || n > MaxMessageLimit {
		return layoutErr("MaxMessage", uint64(n), fmt.Sprintf("not in 1..%d", MaxMessageLimit))
	}
	return nil
}

func checkRingEntries(field string, n uint64) error {
	if n == 0 || n&(n-1) != 0 || n > MaxRingEntries {
		return layoutErr(field, n, fmt.Sprintf("not a power of two in 1..%d", MaxRingEntries))
	}
	return nil
}

func checkArenaSize(n uint64) error {
	if n == 0 || n > MaxArenaSize {
		return layoutErr("ArenaSize", n, fmt.Sprintf("not in 1..%d", uint64(MaxArenaSize)))
	}
	return nil
}

func checkPoolPages(n uint64) error {
	if n == 0 || n > MaxPoolPages {
		return layoutErr("PoolPages", n, fmt.Sprintf("not in 1..%d", MaxPoolPages))
	}
	return nil
}

// span is one part of the region, for the range and overlap checks.
type span struct {
	field     string // the offset field that places it
	off, size uint64
}

func (l *Layout) spans() [5]span {
	return [5]span{
		{"HeaderSize", 0, HeaderSize},
		{"SQOffset", l.SQOffset, RingBytes(l.SQEntries)},
		{"CQOffset", l.CQOffset, RingBytes(l.CQEntries)},
		{"ArenaOffset", l.ArenaOffset, l.ArenaSize},
		{"PoolOffset", l.PoolOffset, l.PoolPages * PageSize},
	}
}

// Validate checks l for a region of regionLen bytes: sizes in range,
// ring entries powers of two, offsets cache-line aligned, every part
// inside RegionSize, RegionSize ≤ regionLen, no overlaps, and an address
// in a Host that is said (FeatureHostInfo, or Host set). The error is a
// *LayoutError naming the first bad field.
func (l *Layout) Validate(regionLen uint64) error {
	if l.RegionSize < HeaderSize || l.RegionSize > regionLen {
		return layoutErr("RegionSize", l.RegionSize, fmt.Sprintf("not in %d..%d (the mapped length)", HeaderSize, regionLen))
	}
	// Sizes first: they bound the arithmetic of the span checks.
	if err := checkRingEntries("SQEntries", l.SQEntries); err != nil {
		return err
	}
	if err := checkRingEntries("CQEntries", l.CQEntries); err != nil {
		return err
	}
	if err := checkArenaSize(l.ArenaSize); err != nil {
		return err
	}
	if err := checkPoolPages(l.PoolPages); err != nil {
		return err
	}
	if err := checkMaxMessage(l.MaxMessage); err != nil {
		return err
	}
	sp := l.spans()
	for _, s := range sp[1:] {
		if s.off%CacheLine != 0 {
			return layoutErr(s.field, s.off, "not a multiple of 64 (cache line)")
		}
		if s.off > l.RegionSize || s.size > l.RegionSize-s.off {
			return layoutErr(s.field, s.off, fmt.Sprintf("part of %d bytes ends beyond RegionSize %d", s.size, l.RegionSize))
		}
	}
	for i := range sp {
		for j := i + 1; j < len(sp); j++ {
			a, b := sp[i], sp[j]
			if a.off < b.off+b.size && b.off < a.off+a.size {
				return layoutErr(b.field, b.off, fmt.Sprintf("overlaps the part at %s %d", a.field, a.off))
			}
		}
	}
	return l.checkHost()
}

// WriteHeader validates l against len(region) and writes the header into
// region[:HeaderSize], zeroing its reserved bytes. A Host that is set is
// written with FeatureHostInfo, whether or not l.Features has it (SetHost
// keeps the two together).
func (l *Layout) WriteHeader(region []byte) error {
	if err := l.Validate(uint64(len(region))); err != nil {
		return err
	}
	h := region[:HeaderSize:HeaderSize]
	clear(h)
	le := binary.LittleEndian
	le.PutUint64(h[hdrMagic:], Magic)
	le.PutUint32(h[hdrVersion:], Version)
	le.PutUint32(h[hdrHeaderSize:], HeaderSize)
	le.PutUint64(h[hdrRegionSize:], l.RegionSize)
	le.PutUint64(h[hdrSQOffset:], l.SQOffset)
	le.PutUint64(h[hdrSQEntries:], l.SQEntries)
	le.PutUint64(h[hdrCQOffset:], l.CQOffset)
	le.PutUint64(h[hdrCQEntries:], l.CQEntries)
	le.PutUint64(h[hdrArenaOffset:], l.ArenaOffset)
	le.PutUint64(h[hdrArenaSize:], l.ArenaSize)
	le.PutUint64(h[hdrPoolOffset:], l.PoolOffset)
	le.PutUint64(h[hdrPoolPages:], l.PoolPages)
	le.PutUint32(h[hdrEntrySize:], EntrySize)
	le.PutUint32(h[hdrPageSize:], PageSize)
	le.PutUint32(h[hdrMaxMessage:], l.MaxMessage)
	features := l.Features
	if l.Host != (HostInfo{}) {
		features |= FeatureHostInfo
	}
	le.PutUint32(h[hdrFeatures:], features)
	if features&FeatureHostInfo != 0 {
		copy(h[hdrHostIPv4:], l.Host.IPv4[:])
		le.PutUint32(h[hdrLinkMbps:], l.Host.LinkMbps)
		copy(h[hdrHostIPv6:], l.Host.IPv6[:])
		le.PutUint32(h[hdrMTU:], l.Host.MTU)
	}
	return nil
}

// ParseHeader reads and validates the header at the start of region,
// which may be untrusted (any bytes, any length). The result is a copy:
// later writes to the region do not change it.
func ParseHeader(region []byte) (Layout, error) {
	if len(region) < HeaderSize {
		return Layout{}, layoutErr("RegionSize", uint64(len(region)), "mapped length below the 4096-byte header")
	}
	le := binary.LittleEndian
	h := region[:HeaderSize:HeaderSize]
	if v := le.Uint64(h[hdrMagic:]); v != Magic {
		return Layout{}, layoutErr("Magic", v, `not "HOMASHM1"`)
	}
	if v := le.Uint32(h[hdrVersion:]); v != Version {
		return Layout{}, layoutErr("Version", uint64(v), fmt.Sprintf("this build reads version %d", Version))
	}
	if v := le.Uint32(h[hdrHeaderSize:]); v != HeaderSize {
		return Layout{}, layoutErr("HeaderSize", uint64(v), fmt.Sprintf("want %d", HeaderSize))
	}
	if v := le.Uint32(h[hdrEntrySize:]); v != EntrySize {
		return Layout{}, layoutErr("EntrySize", uint64(v), fmt.Sprintf("want %d", EntrySize))
	}
	if v := le.Uint32(h[hdrPageSize:]); v != PageSize {
		return Layout{}, layoutErr("PageSize", uint64(v), fmt.Sprintf("want %d", PageSize))
	}
	l := Layout{
		RegionSize:  le.Uint64(h[hdrRegionSize:]),
		SQOffset:    le.Uint64(h[hdrSQOffset:]),
		SQEntries:   le.Uint64(h[hdrSQEntries:]),
		CQOffset:    le.Uint64(h[hdrCQOffset:]),
		CQEntries:   le.Uint64(h[hdrCQEntries:]),
		ArenaOffset: le.Uint64(h[hdrArenaOffset:]),
		ArenaSize:   le.Uint64(h[hdrArenaSize:]),
		PoolOffset:  le.Uint64(h[hdrPoolOffset:]),
		PoolPages:   le.Uint64(h[hdrPoolPages:]),
		MaxMessage:  le.Uint32(h[hdrMaxMessage:]),
		Features:    le.Uint32(h[hdrFeatures:]), // unknown bits are the daemon's; a worker uses those it knows
	}
	if l.MaxMessage == 0 {
		l.MaxMessage = DefaultMaxMessage // a daemon from before the field
	}
	if l.Features&FeatureHostInfo != 0 { // without the bit the bytes are reserved: an older daemon's zero
		copy(l.Host.IPv4[:], h[hdrHostIPv4:])
		l.Host.LinkMbps = le.Uint32(h[hdrLinkMbps:])
		copy(l.Host.IPv6[:], h[hdrHostIPv6:])
		l.Host.MTU = le.Uint32(h[hdrMTU:])
	}
	if err := l.Validate(uint64(len(region))); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// The accessors below return views of region (its length must be at least
// RegionSize, as Validate checked). The views alias the shared memory and
// are valid while it stays mapped.

// SQ returns the submission ring's bytes, for NewConsumer (engine) or
// NewProducer (worker).
func (l *Layout) SQ(region []byte) []byte { return part(region, l.SQOffset, RingBytes(l.SQEntries)) }

// CQ returns the completion ring's bytes, for NewProducer (engine) or
// NewConsumer (worker).
func (l *Layout) CQ(region []byte) []byte { return part(region, l.CQOffset, RingBytes(l.CQEntries)) }

// Arena returns the transmit arena.
func (l *Layout) Arena(region []byte) []byte { return part(region, l.ArenaOffset, l.ArenaSize) }

// Pool returns the receive pool: page i is Pool[i*PageSize:(i+1)*PageSize].
func (l *Layout) Pool(region []byte) []byte {
	return part(region, l.PoolOffset, l.PoolPages*PageSize)
}

// Limits returns what entries are checked against in this region: its
// sizes, and the largest message, l.MaxMessage or maxMessage if smaller
// (an engine that takes less than the region carries; 0: l.MaxMessage).
func (l *Layout) Limits(maxMessage uint32) Limits {
	mm := l.MaxMessage
	if maxMessage != 0 && maxMessage < mm {
		mm = maxMessage
	}
	return Limits{ArenaSize: l.ArenaSize, PoolPages: l.PoolPages, MaxMessage: mm}
}

func part(region []byte, off, size uint64) []byte { return region[off : off+size : off+size] }
