package engine

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// sink is a Transmitter that lends one buffer and keeps nothing.
type sink struct {
	buf  []byte
	sent int
}

func (s *sink) Buffer() []byte       { return s.buf }
func (s *sink) Send(_ []byte, _ int) { s.sent++ }

func newSinkEndpoint(t *testing.T, last byte) (*Endpoint, *sink) {
	tx := &sink{buf: make([]byte, 2048)}
	cfg := DefaultConfig()
	cfg.IP = [4]byte{10, 0, 0, last}
	cfg.Clock = func() int64 { return 0 }
	cfg.Resolve = allReachable()
	cfg.Grant.Increment = 1 // a GRANT per DATA packet
	e, err := New(cfg, tx)
	if err != nil {
		t.Fatal(err)
	}
	return e, tx
}

func TestIncoming_steadyStateDataAllocatesNothing(t *testing.T) {
	e, tx := newSinkEndpoint(t, 2)
	e.Bind(99)
	const length = 1_000_000
	var frames [][]byte
	for off := 0; off < length; off += 1424 {
		frames = append(frames, dataFrame(length, 40_000, off, make([]byte, min(1424, length-off))))
	}
	// The first packets create the RPC, stage, and commit its buffer.
	commit := e.commitBytes / 1424
	for _, f := range frames[:commit] {
		e.Receive(f)
	}
	i := commit
	allocs := testing.AllocsPerRun(500, func() {
		e.Receive(frames[i])
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per DATA packet received", allocs)
	}
	if tx.sent < 500 { // a GRANT per packet
		t.Fatalf("only %d packets sent", tx.sent)
	}
}

// The host's path: it decodes the link header (dispatching on it) and
// hands the decoded link to ReceiveLink.
func TestIncoming_receiveLinkAllocatesNothing(t *testing.T) {
	e, _ := newSinkEndpoint(t, 2)
	e.Bind(99)
	const length = 1_000_000
	var frames [][]byte
	for off := 0; off < length; off += 1424 {
		frames = append(frames, dataFrame(length, 40_000, off, make([]byte, min(1424, length-off))))
	}
	commit := e.commitBytes / 1424
	for _, f := range frames[:commit] {
		e.Receive(f)
	}
	i := commit
	var l wire.Link
	allocs := testing.AllocsPerRun(500, func() {
		if wire.ParseLink(frames[i], &l) != wire.DropNone {
			t.Fatal("link")
		}
		e.BeginBatch(0)
		e.ReceiveLink(&l)
		e.EndBatch()
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per DATA packet received", allocs)
	}
	if r := e.first; r == nil || r.in.g.Received != (commit+501)*1424 {
		t.Fatal("the packets were not taken")
	}
}

// zcSink is a sink that also takes payloads without a copy (DataSender).
type zcSink struct {
	sink
	zc int
}

func (s *zcSink) SendData(_, _ []byte, _ PayloadRef, _ int) bool { s.zc++; return true }

func TestOutgoing_steadyStateDataAllocatesNothing(t *testing.T) {
	e, tx := newSinkEndpoint(t, 1)
	p, _ := e.OpenClient()
	id, _ := p.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, make([]byte, 1_000_000))
	checkGrantedDataAllocatesNothing(t, e, p, id, func() int { return tx.sent })
}

// Zero-copy sends (SendRef through a DataSender) allocate nothing either.
func TestOutgoing_zeroCopyDataAllocatesNothing(t *testing.T) {
	tx := &zcSink{sink: sink{buf: make([]byte, 2048)}}
	cfg := DefaultConfig()
	cfg.IP = [4]byte{10, 0, 0, 1}
	cfg.Clock = func() int64 { return 0 }
	cfg.Resolve = allReachable()
	e, err := New(cfg, tx)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := e.OpenClient()
	id, _ := p.SendRef(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, make([]byte, 1_000_000), 7)
	checkGrantedDataAllocatesNothing(t, e, p, id, func() int { return tx.zc })
	if tx.sent != 0 || e.Metrics().ZeroCopyPackets != uint64(tx.zc) {
		t.Fatalf("%d packets copied, %d zero-copy counted of %d", tx.sent, e.Metrics().ZeroCopyPackets, tx.zc)
	}
}

// checkGrantedDataAllocatesNothing feeds e, whose client port p sent
// RPC id of 1,000,000 bytes to 10.0.0.2, GRANTs that each allow one more
// packet, and checks that sending those packets (sent counts them)
// allocates nothing.
func checkGrantedDataAllocatesNothing(t *testing.T, e *Endpoint, p *Port, id uint64, sent func() int) {
	t.Helper()
	var grants [][]byte
	for off := 40_000; off <= 1_000_000; off += 1424 {
		b := make([]byte, frameHomaOffset+wire.GrantHeaderLen)
		eth := wire.EthernetFields{Dst: testMAC([4]byte{10, 0, 0, 1}), Type: wire.EtherTypeIPv4}
		eth.Encode(b)
		ip := wire.HomaIPv4Fields([4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 7, wire.GrantHeaderLen)
		ip.Encode(b[frameIPOffset:])
		g := wire.GrantFields{Common: wire.CommonFields{SrcPort: 99, DstPort: p.Num(), SenderID: wire.ServerID(id)},
			Offset: uint32(off + 1424), Priority: 2}
		g.Encode(b[frameHomaOffset:])
		grants = append(grants, b)
	}
	before := sent()
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		e.Receive(grants[i])
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per DATA packet sent", allocs)
	}
	if sent()-before < 500 {
		t.Fatalf("only %d DATA packets sent", sent()-before)
	}
}

// Filling gaps in a committed message's bytes allocates nothing, with as
// many gaps as it may hold.
func TestIncoming_gapFillAllocatesNothing(t *testing.T) {
	e, _ := newSinkEndpoint(t, 2)
	e.Bind(99)
	const length = 1_000_000
	frame := func(off, n int) []byte { return dataFrame(length, 40_000, off, make([]byte, n)) }
	for off := 0; off < e.commitBytes; off += 1424 {
		e.Receive(frame(off, 1424))
	}
	base := e.commitBytes
	for k := 1; k <= e.cfg.MaxGaps; k++ { // gaps of 1000 bytes, 10 bytes apart
		e.Receive(frame(base+k*1010, 10))
	}
	var fills [][]byte
	for k := 0; k < e.cfg.MaxGaps; k++ {
		start := base + k*1010
		if k == 0 {
			start = base
		} else {
			start += 10
		}
		for j := 0; j < 10; j++ {
			fills = append(fills, frame(start+j*10, 10))
		}
	}
	if n := mallocs(func() {
		for _, f := range fills {
			e.Receive(f)
		}
	}); n != 0 {
		t.Fatalf("%d allocations filling gaps", n)
	}
	if got := e.Metrics().Drops; got[DropTooManyGaps]+got[DropOverlap]+got[DropDuplicate] != 0 {
		t.Fatalf("set-up: fills refused %v", got)
	}
}

// Answering RESENDs allocates nothing, within the RPC's budget.
func TestOutgoing_resendAllocatesNothing(t *testing.T) {
	var now int64 = 1_000_000_000
	e, tx, id := newResendTarget(t, &now)
	r := e.rpcs.get(rpcKey{id: id})
	e.Receive(grantFrame([4]byte{10, 0, 0, 2}, e.cfg.IP, r.port.num, id^1, 1_000_000))
	var resends [][]byte
	for k := range 200 {
		resends = append(resends, resendFrame([4]byte{10, 0, 0, 2}, e.cfg.IP, r.port.num, id^1, uint32(k*1424), 1424))
	}
	before := tx.sent[0]
	if n := mallocs(func() {
		for _, f := range resends {
			e.Receive(f)
		}
	}); n != 0 {
		t.Fatalf("%d allocations answering 200 RESENDs", n)
	}
	if got := tx.sent[0] - before; got != 200 {
		t.Fatalf("%d packets retransmitted, want 200", got)
	}
}

// mallocs returns the heap allocations f makes, counted exactly (as
// testing.AllocsPerRun counts them, on one P so that other goroutines do
// not run meanwhile, but without dividing by a number of runs).
func mallocs(f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// Finalizers of earlier tests' objects run on a goroutine of their
	// own, which a slow f can be preempted for: run them first.
	runtime.GC()
	runtime.GC()
	runtime.Gosched()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.Mallocs - a.Mallocs
}
