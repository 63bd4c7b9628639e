package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// dataFrame builds a DATA frame from 10.0.0.1 port 0x8000 to 10.0.0.2
// port 99 for client RPC 2 of a message of msgLen bytes.
func dataFrame(msgLen, incoming, offset int, payload []byte) []byte {
	src, dst := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	b := make([]byte, frameHomaOffset+wire.DataHeaderLen+len(payload))
	eth := wire.EthernetFields{Dst: testMAC(dst), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 6, wire.DataHeaderLen+len(payload))
	ip.Encode(b[frameIPOffset:])
	d := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		MessageLength: uint32(msgLen), Incoming: uint32(incoming), CutoffVersion: 1, Offset: uint32(offset)}
	d.Encode(b[frameHomaOffset:])
	copy(b[frameHomaOffset+wire.DataHeaderLen:], payload)
	return b
}

func TestIncoming_reassemblyWithGapsDuplicatesOverlaps(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	whole := msg(5000, 3)
	seg := func(off, end int) []byte { return dataFrame(5000, 5000, off, whole[off:end]) }
	steps := []struct {
		frame []byte
		cause DropCause // expected drop, or 0
	}{
		{seg(2000, 3000), 0}, // creates the RPC; gap [0,2000)
		{seg(4000, 5000), 0}, // gap [3000,4000)
		{seg(2000, 3000), DropDuplicate},
		{seg(500, 1000), 0},           // splits [0,2000) into [0,500) [1000,2000)
		{seg(900, 1100), DropOverlap}, // half received
		{dataFrame(5000, 5000, 4500, make([]byte, 501)), DropPastEnd},
		{dataFrame(6000, 6000, 0, whole[:10]), DropBadLength},
		{seg(0, 500), 0},
		{seg(1000, 2000), 0},
		{seg(3000, 3500), 0},
	}
	for i, st := range steps {
		before := s.e.Metrics().Drops
		s.e.Receive(st.frame)
		after := s.e.Metrics().Drops
		for c := range after {
			want := uint64(0)
			if DropCause(c) == st.cause && st.cause != 0 {
				want = 1
			}
			if after[c]-before[c] != want {
				t.Fatalf("step %d: drops_%s +%d, want +%d", i, DropCause(c), after[c]-before[c], want)
			}
		}
	}
	if _, ok := srv.Receive(); ok {
		t.Fatal("delivered with a gap left")
	}
	s.e.Receive(seg(3500, 4000))
	m := receive(t, srv)
	if !bytes.Equal(m.Data, whole) {
		t.Fatal("reassembled bytes differ")
	}
	// A retransmitted request packet after delivery is stale, not a new
	// execution.
	s.e.Receive(seg(0, 500))
	if _, ok := srv.Receive(); ok || s.e.Metrics().Drops[DropStale] != 1 || s.e.Metrics().RequestsReceived != 1 {
		t.Fatal("request executed twice")
	}
}

func TestIncoming_offsetInSequenceForm(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	whole := msg(3000, 9)
	f1 := dataFrame(3000, 3000, 1500, whole[1500:])
	h := wire.Data(f1[frameHomaOffset:])
	h.Common().SetSequence(1500)
	h.SetSegOffset(wire.OffsetInSequence)
	s.e.Receive(f1)
	s.e.Receive(dataFrame(3000, 3000, 0, whole[:1500]))
	if m := receive(t, srv); !bytes.Equal(m.Data, whole) {
		t.Fatal("bytes differ")
	}
}

func TestIncoming_unboundPortGetsICMPAndClientFails(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	cli, _ := c.e.OpenClient()
	id, _ := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 7}, msg(10, 0))
	n.flush()
	wantLog(t, n, `
		c: xmit DATA 10@0 p6
		s: xmit ICMP port-unreachable`)
	m := receive(t, cli)
	if m.ID != id || m.Err != ErrPortUnreachable || c.e.NumRPCs() != 0 || s.e.NumRPCs() != 0 {
		t.Fatalf("result %+v, rpcs %d/%d", m, c.e.NumRPCs(), s.e.NumRPCs())
	}
	if s.e.Metrics().Drops[DropNoPort] != 1 {
		t.Fatal("drop not counted")
	}
}

func TestIncoming_notForUsAndBadFramesCounted(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	f := dataFrame(10, 10, 0, msg(10, 0)) // to 10.0.0.2
	c.e.Receive(f)
	c.e.Receive(f[:20])
	m := c.e.Metrics()
	if m.Drops[DropNotForUs] != 1 || m.Drops[DropCause(wire.DropShortIPHeader)] != 1 {
		t.Fatalf("drops %v", m.Drops)
	}
}

// dataFrameFrom builds a DATA frame from src port 0x8000 to 10.0.0.2
// port 99 for client RPC id of a message of msgLen bytes.
func dataFrameFrom(src [4]byte, id uint64, msgLen, incoming, offset int, payload []byte) []byte {
	b := dataFrame(msgLen, incoming, offset, payload)
	ip := wire.IPv4(b[frameIPOffset:])
	f := wire.HomaIPv4Fields(src, ip.Dst(), 6, wire.DataHeaderLen+len(payload))
	f.Encode(b[frameIPOffset:])
	wire.Common(b[frameHomaOffset:]).SetSenderID(id)
	return b
}

// typeCounter is a Transmitter that lends one buffer and counts the
// packets sent by type.
type typeCounter struct {
	buf   []byte
	sent  [numTypes]int
	total int
}

func (s *typeCounter) Buffer() []byte { return s.buf }
func (s *typeCounter) Send(frame []byte, _ int) {
	s.total++
	var f wire.Frame
	if wire.ParseFrame(frame, &f) == wire.DropNone {
		s.sent[f.Type-wire.TypeData]++
	}
}

// newCountingEndpoint returns an endpoint at 10.0.0.2 with server port
// 99 whose clock is *now, sending into a typeCounter.
func newCountingEndpoint(t testing.TB, now *int64, mod func(*Config)) (*Endpoint, *typeCounter) {
	tx := &typeCounter{buf: make([]byte, 2048)}
	cfg := DefaultConfig()
	cfg.IP = [4]byte{10, 0, 0, 2}
	cfg.Clock = func() int64 { return *now }
	cfg.Resolve = allReachable()
	cfg.IDSeed = 100
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg, tx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Bind(99); err != nil {
		t.Fatal(err)
	}
	return e, tx
}

// One-byte DATA segments at every other offset would open one gap per
// packet; the gaps a message may hold are bounded, the packets that
// would open more are dropped and counted, and the timer asks for a
// bounded number of ranges per message at a time.
func TestIncoming_gapsBoundedPerMessage(t *testing.T) {
	var now int64 = 1_000_000_000
	e, tx := newCountingEndpoint(t, &now, nil)
	const attackGaps = 10_000
	src := [4]byte{10, 0, 0, 1}
	for i := range attackGaps + 1 {
		e.Receive(dataFrameFrom(src, 2, 1_000_000, 40_000, 2*i, []byte{byte(i)}))
	}
	r := e.rpcs.get(rpcKey{ip: wire.MapIPv4(src), id: 3})
	if r == nil {
		t.Fatal("no RPC")
	}
	maxGaps := DefaultConfig().MaxGaps
	if got := len(r.in.gaps); got != maxGaps {
		t.Fatalf("%d gaps held, want the bound %d", got, maxGaps)
	}
	if got := e.Metrics().Drops[DropTooManyGaps]; got != attackGaps-uint64(maxGaps) {
		t.Fatalf("drops_too_many_gaps %d, want %d", got, attackGaps-maxGaps)
	}
	// A packet past the highest byte received is refused too.
	e.Receive(dataFrameFrom(src, 2, 1_000_000, 40_000, 3*attackGaps, []byte{1}))
	if got := len(r.in.gaps); got != maxGaps || e.Metrics().Drops[DropTooManyGaps] != attackGaps-uint64(maxGaps)+1 {
		t.Fatalf("%d gaps after one more, want %d", got, maxGaps)
	}
	// Filling a gap still works.
	e.Receive(dataFrameFrom(src, 2, 1_000_000, 40_000, 1, []byte{1}))
	if got := len(r.in.gaps); got != maxGaps-1 {
		t.Fatalf("%d gaps after a fill, want %d", got, maxGaps-1)
	}
	// One resend check asks for at most MaxResendsPerRPC ranges.
	before := tx.sent[wire.TypeResend-wire.TypeData]
	for range DefaultConfig().ResendTicks {
		now += 1_000_000
		e.Run()
	}
	resends := tx.sent[wire.TypeResend-wire.TypeData] - before
	if want := DefaultConfig().MaxResendsPerRPC; resends != want {
		t.Fatalf("%d RESENDs in one check, want %d", resends, want)
	}
	if e.Metrics().ResendsDeferred == 0 {
		t.Fatal("the ranges left for the next check are not counted")
	}
}

// A packet that would split a gap in two when the message holds as many
// as it may is refused as well.
func TestIncoming_gapSplitBounded(t *testing.T) {
	var now int64
	e, _ := newCountingEndpoint(t, &now, func(c *Config) { c.MaxGaps = 1 })
	src := [4]byte{10, 0, 0, 1}
	whole := msg(300, 1)
	seg := func(off, end int) []byte { return dataFrameFrom(src, 2, 300, 300, off, whole[off:end]) }
	e.Receive(seg(0, 10))
	e.Receive(seg(100, 110)) // gap [10,100)
	e.Receive(seg(50, 60))   // would split it
	if got := e.Metrics().Drops[DropTooManyGaps]; got != 1 {
		t.Fatalf("drops_too_many_gaps %d, want 1", got)
	}
	e.Receive(seg(10, 50)) // shrinks it: accepted
	e.Receive(seg(60, 100))
	e.Receive(seg(50, 60))
	e.Receive(seg(110, 300))
	srv := e.ports[99]
	if m := receive(t, srv); !bytes.Equal(m.Data, whole) {
		t.Fatal("bytes differ")
	}
}

// BenchmarkIncoming_gappedData is the cost of a DATA packet that fills
// bytes at the end of one of a committed message's gaps, with one gap and
// with as many as a message may hold.
func BenchmarkIncoming_gappedData(b *testing.B) {
	for _, gaps := range []int{1, DefaultConfig().MaxGaps} {
		b.Run(fmt.Sprintf("gaps=%d", gaps), func(b *testing.B) {
			var now int64
			e, _ := newCountingEndpoint(b, &now, func(c *Config) {
				c.MaxMessageLength = 1 << 30
				c.UnschedBytes = 1 // committed by its first packet
			})
			src := [4]byte{10, 0, 0, 1}
			const width = 1 << 20 // bytes per gap
			length := (gaps + 1) * width
			e.Receive(dataFrameFrom(src, 2, length, 1, 0, make([]byte, 1424)))
			for k := 1; k <= gaps; k++ {
				e.Receive(dataFrameFrom(src, 2, length, 1, k*width, []byte{1}))
			}
			if r := e.first; r == nil || r.in.buf == nil || len(r.in.gaps) != gaps {
				b.Fatal("set-up: gaps not opened")
			}
			f := dataFrameFrom(src, 2, length, 1, 0, []byte{1})
			d := wire.Data(f[frameHomaOffset:])
			b.ResetTimer()
			for i := range b.N {
				k, j := i%gaps, i/gaps
				if j >= width-1500 {
					b.Fatal("benchmark ran past its gaps")
				}
				d.SetSegOffset(uint32((k+1)*width - 1 - j))
				e.Receive(f)
			}
		})
	}
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A DATA packet with a fresh RPC id and a huge claimed length commits no
// memory for the length: 10,000 of them from one address (64 bytes of
// payload each, anywhere in the unscheduled bytes) grow the heap by less
// than 10 MB, and the server RPCs they may start are bounded per peer.
func TestIncoming_freshIDsCommitNoMemoryForClaims(t *testing.T) {
	var now int64
	e, _ := newCountingEndpoint(t, &now, nil)
	src := [4]byte{10, 0, 0, 1}
	const packets = 10_000
	f := dataFrameFrom(src, 2, 1_000_000, 1_000_000, 0, make([]byte, 64))
	d := wire.Data(f[frameHomaOffset:])
	before := heapInUse()
	for i := range packets {
		d.Common().SetSenderID(uint64(2 + 2*i))
		d.SetSegOffset(uint32(i % 28 * 1424))
		e.Receive(f)
	}
	growth := int64(heapInUse()) - int64(before)
	perPeer := DefaultConfig().MaxServerRPCsPerPeer
	t.Logf("heap +%d bytes for %d packets; %d server RPCs, %d bytes staged", growth, packets, e.NumServerRPCs(), e.StagedBytes())
	if growth > 10<<20 {
		t.Fatalf("heap grew by %d bytes, want under 10 MB", growth)
	}
	if e.NumServerRPCs() != perPeer || e.Metrics().Drops[DropPeerRPCLimit] != uint64(packets-perPeer) {
		t.Fatalf("%d server RPCs, drops_peer_rpc_limit %d; want %d and %d",
			e.NumServerRPCs(), e.Metrics().Drops[DropPeerRPCLimit], perPeer, packets-perPeer)
	}
	if e.StagedBytes() > 2*perPeer*stageChunkSize || e.RecvHeapBytes() != 0 {
		t.Fatalf("%d bytes staged, %d committed", e.StagedBytes(), e.RecvHeapBytes())
	}
}

// The server RPCs are bounded per client address and in total, each
// refusal counted; RPCs that end make room again.
func TestIncoming_serverRPCCapsHold(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, func(c *Config) { c.MaxServerRPCs, c.MaxServerRPCsPerPeer = 50, 10 })
	for s := range 20 {
		src := [4]byte{10, 0, 1, byte(s + 1)}
		for i := range 20 {
			e.Receive(dataFrameFrom(src, uint64(2+2*i), 5000, 5000, 0, make([]byte, 100)))
		}
	}
	m := e.Metrics()
	if e.NumServerRPCs() != 50 || m.Drops[DropPeerRPCLimit] != 5*10 || m.Drops[DropServerRPCLimit] != 15*20 {
		t.Fatalf("%d server RPCs, drops_peer_rpc_limit %d (want 50), drops_server_rpc_limit %d (want 300)",
			e.NumServerRPCs(), m.Drops[DropPeerRPCLimit], m.Drops[DropServerRPCLimit])
	}
	// Silent requests are discarded after TimeoutTicks; then new ones fit.
	for range DefaultConfig().TimeoutTicks {
		now += 1_000_000
		e.Run()
	}
	if e.NumServerRPCs() != 0 {
		t.Fatalf("%d server RPCs left after the timeout", e.NumServerRPCs())
	}
	e.Receive(dataFrameFrom([4]byte{10, 0, 1, 30}, 2, 100, 100, 0, make([]byte, 100)))
	if _, ok := e.ports[99].Receive(); !ok {
		t.Fatal("a request after the others ended was refused")
	}
}

// recvBufLog is a port owner's receive memory that logs what the engine
// asks of it.
type recvBufLog struct {
	log []string
	max int // the largest buffer it has
}

func (l *recvBufLog) hooks() PortHooks {
	return PortHooks{
		RecvBuf: func(n int) ([]byte, bool) {
			l.log = append(l.log, fmt.Sprintf("RecvBuf %d", n))
			if n > l.max {
				return nil, false
			}
			return make([]byte, n), true
		},
		FreeRecvBuf: func(buf []byte) { l.log = append(l.log, fmt.Sprintf("FreeRecvBuf %d", len(buf))) },
	}
}

func (l *recvBufLog) take() string {
	s := strings.Join(l.log, "; ")
	l.log = nil
	return s
}

// RecvBuf is asked for a message's length only once the message is
// committed: a single packet that is the whole message at once; a
// message at most earlyCommitRatio times the bytes arrived (a full
// packet at least) then; a longer message no longer than the unscheduled
// bytes when its last byte comes; a longer one once as many bytes as
// those have arrived. The bytes staged before are in the buffer, and
// reassembly is exact.
func TestIncoming_recvBufAskedOnCommit(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, nil)
	l := &recvBufLog{max: 1_000_000}
	e.ports[99].SetHooks(l.hooks())
	src := [4]byte{10, 0, 0, 1}
	feed := func(id uint64, whole []byte, from, to int) {
		for off := from; off < to; off += 1424 {
			end := min(off+1424, len(whole))
			e.Receive(dataFrameFrom(src, id, len(whole), len(whole), off, whole[off:end]))
		}
	}
	one := msg(1000, 1)
	feed(2, one, 0, len(one))
	if got := l.take(); got != "RecvBuf 1000" {
		t.Fatalf("single packet: %q", got)
	}
	small := msg(20_000, 2) // within 16 full packets
	feed(4, small, 1424, 2*1424)
	if got := l.take(); got != "RecvBuf 20000" {
		t.Fatalf("short message at its first full packet: %q", got)
	}
	feed(4, small, 2*1424, len(small))
	feed(4, small, 0, 1424)
	if got := l.take(); got != "" {
		t.Fatalf("short message's later packets: %q", got)
	}
	mid := msg(30_000, 4) // past 16 full packets, within 32
	feed(8, mid, 0, 1424)
	if got := l.take(); got != "" {
		t.Fatalf("30,000 bytes after one packet: %q", got)
	}
	feed(8, mid, 1424, 2*1424)
	if got := l.take(); got != "RecvBuf 30000" {
		t.Fatalf("30,000 bytes after two packets: %q", got)
	}
	feed(8, mid, 2*1424, len(mid))
	tiny := msg(3000, 5) // less than a full packet's payload arrived: staged
	for off := 0; off < len(tiny); off += 1000 {
		e.Receive(dataFrameFrom(src, 10, len(tiny), len(tiny), off, tiny[off:off+1000]))
		want := ""
		if off == 1000 {
			want = "RecvBuf 3000"
		}
		if got := l.take(); got != want {
			t.Fatalf("3,000 bytes in 1,000-byte packets, at %d: %q", off, got)
		}
	}
	big := msg(1_000_000, 3)
	commitAt := DefaultConfig().UnschedBytes/1424*1424 + 1424
	feed(6, big, 0, commitAt-1424)
	if got := l.take(); got != "" {
		t.Fatalf("long message before %d bytes: %q", commitAt, got)
	}
	feed(6, big, commitAt-1424, commitAt)
	if got := l.take(); got != "RecvBuf 1000000" {
		t.Fatalf("long message at %d bytes: %q", commitAt, got)
	}
	srv := e.ports[99]
	for _, want := range [][]byte{one, small, mid, tiny} {
		m := receive(t, srv)
		if !bytes.Equal(m.Data, want) {
			t.Fatalf("%d bytes reassembled wrong", len(want))
		}
	}
	// A message ended before delivery gives its buffer back.
	srv.AbortAll()
	if got := l.take(); got != "FreeRecvBuf 1000000" {
		t.Fatalf("abort: %q", got)
	}
	if e.StagedBytes() != 0 {
		t.Fatalf("%d bytes still staged", e.StagedBytes())
	}
}

// Staging is bounded in total and per message, and the heap buffers of
// committed messages are bounded too; each refusal is counted.
func TestIncoming_recvMemoryBounded(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, func(c *Config) { c.MaxStagingBytes = 4 * stageChunkSize })
	src := [4]byte{10, 0, 0, 1}
	// A message may stage only its first bytes and what it was granted.
	e.Receive(dataFrameFrom(src, 100, 1_000_000, 1_000_000, 0, []byte{1}))
	e.Receive(dataFrameFrom(src, 100, 1_000_000, 1_000_000, 900_000, []byte{1}))
	if got := e.Metrics().Drops[DropPastStaging]; got != 1 {
		t.Fatalf("drops_rx_past_staging %d", got)
	}
	e.ports[99].AbortAll()
	// Each one-byte packet of a new message takes one chunk: four fit.
	for i := range 6 {
		e.Receive(dataFrameFrom(src, uint64(2+2*i), 100_000, 100_000, 0, []byte{1}))
	}
	if got := e.Metrics().Drops[DropStagingFull]; got != 2 || e.StagedBytes() != 4*stageChunkSize {
		t.Fatalf("drops_rx_staging_full %d, staged %d", got, e.StagedBytes())
	}
	// Two 1 MB messages commit past the heap bound: the second ends.
	e, _ = newCountingEndpoint(t, &now, func(c *Config) { c.MaxRecvHeapBytes = 1_500_000 })
	for _, id := range []uint64{20, 22} {
		whole := msg(1_000_000, byte(id))
		for off := 0; off < e.commitBytes; off += 1424 {
			e.Receive(dataFrameFrom(src, id, 1_000_000, 1_000_000, off, whole[off:off+1424]))
		}
	}
	if got := e.Metrics().Drops[DropRecvHeapFull]; got != 1 || e.RecvHeapBytes() != 1_000_000 || e.NumServerRPCs() != 1 {
		t.Fatalf("drops_rx_heap_full %d, heap %d, %d RPCs", got, e.RecvHeapBytes(), e.NumServerRPCs())
	}
	e.ports[99].AbortAll()
	if e.RecvHeapBytes() != 0 || e.StagedBytes() != 0 {
		t.Fatalf("after abort: heap %d, staged %d", e.RecvHeapBytes(), e.StagedBytes())
	}
}

// Staging a message's first packets, once the pool has chunks, allocates
// nothing; nor do packets after the commit.
func TestIncoming_stagedDataAllocatesNothing(t *testing.T) {
	var now int64
	e, _ := newCountingEndpoint(t, &now, nil)
	src := [4]byte{10, 0, 0, 1}
	const length = 1_000_000 // commits at commitBytes (not early: more than 16 times those)
	frames := func(id uint64) [][]byte {
		var fs [][]byte
		for off := 0; off < length; off += 1424 {
			fs = append(fs, dataFrameFrom(src, id, length, 40_000, off, make([]byte, min(1424, length-off))))
		}
		return fs
	}
	for _, f := range frames(2) { // one message fills the pool
		e.Receive(f)
	}
	receive(t, e.ports[99])
	fs := frames(4)
	e.Receive(fs[0]) // starts the RPC
	commit := e.commitBytes / 1424
	if n := mallocs(func() {
		for _, f := range fs[1 : commit-1] {
			e.Receive(f)
		}
	}); n != 0 {
		t.Fatalf("%d allocations staging %d packets", n, commit-2)
	}
	if r := e.rpcs.get(rpcKey{ip: wire.MapIPv4(src), id: 5}); r == nil || r.in.buf != nil {
		t.Fatal("set-up: committed early")
	}
	e.Receive(fs[commit-1]) // commits: the message's buffer
	e.Receive(fs[commit])
	if n := mallocs(func() {
		for _, f := range fs[commit+1 : commit+101] {
			e.Receive(f)
		}
	}); n != 0 {
		t.Fatalf("%d allocations for 100 packets after the commit", n)
	}
}

// Requests that never finish cannot hold the server RPCs or the staging
// pool: at either bound, the request silent longest, if for ResendTicks,
// makes room for a new one (RequestsEvicted); fresher ones do not.
func TestIncoming_staleRequestsMakeRoom(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, func(c *Config) {
		c.MaxServerRPCs = 10
		c.MaxStagingBytes = 12 * stageChunkSize
	})
	flood := func(from byte) {
		for i := range 10 {
			e.Receive(dataFrameFrom([4]byte{172, 16, from, byte(i + 1)}, 2, 1_000_000, 1_000_000, 0, []byte{1}))
		}
	}
	flood(1)
	real := [4]byte{10, 0, 0, 1}
	// 120,000 bytes stage five packets (four chunks, more than the three
	// the flood leaves once one of its RPCs is gone) before the sixth
	// commits them (at 16 times the bytes arrived).
	whole := msg(120_000, 7)
	send := func() {
		for off := 0; off < len(whole); off += 1424 {
			e.Receive(dataFrameFrom(real, 2, len(whole), len(whole), off, whole[off:min(off+1424, len(whole))]))
		}
	}
	send() // the flood is fresh: refused
	if m := e.Metrics(); m.Drops[DropServerRPCLimit] == 0 || m.RequestsEvicted != 0 {
		t.Fatalf("fresh flood: drops_server_rpc_limit %d, requests_evicted %d", m.Drops[DropServerRPCLimit], m.RequestsEvicted)
	}
	for range DefaultConfig().ResendTicks {
		now += 1_000_000
		e.Run()
	}
	send() // a stale one makes room, and stale staging gives up chunks
	if m := receive(t, e.ports[99]); !bytes.Equal(m.Data, whole) {
		t.Fatal("request bytes differ")
	}
	m := e.Metrics()
	t.Logf("requests_evicted %d, drops_rx_staging_full %d", m.RequestsEvicted, m.Drops[DropStagingFull])
	if m.RequestsEvicted < 2 || m.Drops[DropStagingFull] != 0 || e.NumServerRPCs() > 10 {
		t.Fatalf("requests_evicted %d (want room for the RPC and its chunks), drops_rx_staging_full %d, %d server RPCs",
			m.RequestsEvicted, m.Drops[DropStagingFull], e.NumServerRPCs())
	}
}
