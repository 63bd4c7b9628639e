// Package enginebench measures the Homa engine's own cost, without DPDK:
// two endpoints on one goroutine joined by a link that copies nothing
// (the frame a sender writes into a lent buffer is the one its peer
// reads, as a NIC's DMA would hand it over). Messages are reassembled
// into buffers the port lends again and again (PortHooks.RecvBuf), as
// the worker hub does, so the figures are the engine's work per packet
// and per RPC alone: no host loop, no mbufs, no rings, no copy but the
// engine's own (payload into the frame, frame into the message).
//
// A packet event is one packet sent or one received by either endpoint,
// control packets included; the streaming case also splits them into
// DATA sent (everything the sender's side did, per DATA packet it sent)
// and DATA received (everything the receiver did, grants included, per
// DATA packet it took in). `go test ./perf/enginebench -bench .` runs
// the cases as benchmarks; `homa-dpdk perf engine` (and `perf all`) runs
// them with Run.
package enginebench

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Case is one benchmark: RPCs of ReqLen-byte requests and RespLen-byte
// responses, Window of them in flight.
type Case struct {
	Name            string
	Window          int
	ReqLen, RespLen int
	streaming       bool // time the receiver's batches: ns/data-rx, ns/data-tx
}

// The cases: small RPCs (100 B each way, 16 in flight; the demo runs 64),
// one small RPC at a time (the latency path), and 1 MB requests streamed
// 4 at a time (as demo --concurrency 4) with 100 B responses, the
// per-packet cost of large messages.
var (
	SmallRPC   = Case{Name: "smallRPC", Window: 16, ReqLen: 100, RespLen: 100}
	OneAtATime = Case{Name: "smallRPCOneAtATime", Window: 1, ReqLen: 100, RespLen: 100}
	Stream1MB  = Case{Name: "stream1MB", Window: 4, ReqLen: 1_000_000, RespLen: 100, streaming: true}
	Cases      = []Case{SmallRPC, OneAtATime, Stream1MB}
)

// Result is one case's figures.
type Result struct {
	Case         string  `json:"case"`
	RPCs         int     `json:"rpcs"`
	Seconds      float64 `json:"seconds"`
	NsPerRPC     float64 `json:"ns_per_rpc"`
	NsPerPkt     float64 `json:"ns_per_packet_event"`
	NsPerDataTx  float64 `json:"ns_per_data_tx,omitempty"`
	NsPerDataRx  float64 `json:"ns_per_data_rx,omitempty"`
	Gbps         float64 `json:"gbps,omitempty"` // request bytes
	AllocsPerRPC float64 `json:"allocs_per_rpc"`
}

// link is one direction of the link: Buffer lends the next slot of a
// ring, Send queues it, and deliver hands the queued frames to the peer
// in one batch, as a polling loop would a burst.
type link struct {
	slots [][]byte
	next  int
	queue [][]byte
	steer func(frame []byte) // sees every frame delivered (Sharded: its steering); nil: none
}

func newLink() *link {
	l := &link{slots: make([][]byte, 4096)}
	for i := range l.slots {
		l.slots[i] = make([]byte, 2048)
	}
	return l
}

func (l *link) Buffer() []byte {
	if len(l.queue) == len(l.slots) {
		return nil
	}
	return l.slots[l.next]
}

func (l *link) Send(frame []byte, _ int) {
	l.queue = append(l.queue, frame)
	l.next = (l.next + 1) % len(l.slots)
}

// deliver hands the queued frames to e as one batch at now; it reports
// whether there were any.
func (l *link) deliver(e *engine.Endpoint, now int64) bool {
	if len(l.queue) == 0 {
		return false
	}
	e.BeginBatch(now)
	for _, f := range l.queue {
		if l.steer != nil {
			l.steer(f)
		}
		e.Receive(f)
	}
	l.queue = l.queue[:0]
	e.EndBatch()
	return true
}

// pair is a client and a server endpoint on links, with ports whose
// messages go into reused buffers.
type pair struct {
	c, s         *engine.Endpoint
	toS, toC     *link
	cli, srv     *engine.Port
	dst          engine.Addr
	start        time.Time
	reqs, resps  []engine.Message // delivered, not yet taken
	sBuf, cBuf   []byte           // the receive buffers, lent to every message (their bytes overlap: nothing reads them)
	rxNs, rxData int64            // time in the server's receive batches, DATA packets in them
	timeRx       bool
}

func mac(ip [4]byte) wire.MAC { return wire.MAC{2, 0, ip[0], ip[1], ip[2], ip[3]} }

func newPair(maxLen int) (*pair, error) { return newShardPair(maxLen, engine.Shard{}, engine.Shard{}) }

// newShardPair is newPair for a shard of a client host (cs) and of a
// server host (ss) sharded alike.
func newShardPair(maxLen int, cs, ss engine.Shard) (*pair, error) {
	p := &pair{toS: newLink(), toC: newLink(), start: time.Now(),
		sBuf: make([]byte, maxLen), cBuf: make([]byte, maxLen)}
	var neigh engine.StaticNeighbours
	resolve := func(ip netip.Addr) *engine.Neighbour {
		if nb := neigh.Resolve(ip); nb != nil {
			return nb
		}
		return neigh.Add(ip, mac(ip.Unmap().As4()))
	}
	mk := func(last byte, tx engine.Transmitter, shard engine.Shard) (*engine.Endpoint, error) {
		cfg := engine.DefaultConfig()
		cfg.IP = [4]byte{10, 0, 0, last}
		cfg.MAC = mac(cfg.IP)
		cfg.Clock = p.clock
		cfg.Resolve = resolve
		cfg.IDSeed = 100
		cfg.Shard = shard
		return engine.New(cfg, tx)
	}
	var err error
	if p.c, err = mk(1, p.toS, cs); err != nil {
		return nil, err
	}
	if p.s, err = mk(2, p.toC, ss); err != nil {
		return nil, err
	}
	if p.srv, err = p.s.Bind(99); err != nil {
		return nil, err
	}
	if p.cli, err = p.c.OpenClient(); err != nil {
		return nil, err
	}
	p.dst = engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}
	p.srv.SetHooks(engine.PortHooks{
		Deliver: func(m engine.Message) { p.reqs = append(p.reqs, m) },
		RecvBuf: func(n int) ([]byte, bool) { return p.sBuf[:n], true },
	})
	p.cli.SetHooks(engine.PortHooks{
		Deliver: func(m engine.Message) { p.resps = append(p.resps, m) },
		RecvBuf: func(n int) ([]byte, bool) { return p.cBuf[:n], true },
	})
	return p, nil
}

func (p *pair) clock() int64 { return int64(time.Second) + int64(time.Since(p.start)) }

// pass delivers what each side has queued, then runs both endpoints.
func (p *pair) pass() {
	now := p.clock()
	if p.timeRx {
		n := int64(len(p.toS.queue))
		t0 := time.Now()
		if p.toS.deliver(p.s, now) {
			p.rxNs += int64(time.Since(t0))
			p.rxData += n
		}
	} else {
		p.toS.deliver(p.s, now)
	}
	p.toC.deliver(p.c, now)
	p.c.Run()
	p.s.Run()
}

// packets is the packet events so far: every packet sent or received by
// either endpoint, and the DATA packets the client sent and the server
// received.
func (p *pair) packets() (events, dataSent, dataRcvd uint64) {
	for _, e := range []*engine.Endpoint{p.c, p.s} {
		m := e.Metrics()
		for i := range m.PacketsSent {
			events += m.PacketsSent[i] + m.PacketsRcvd[i]
		}
	}
	return events, p.c.Metrics().PacketsSent[0], p.s.Metrics().PacketsRcvd[0]
}

// rpcs runs n RPCs, keeping window in flight.
func (p *pair) rpcs(n, window int, req, resp []byte) error {
	sent, done := 0, 0
	for done < n {
		for sent < n && sent-done < window {
			if _, err := p.cli.Send(p.dst, req); err != nil {
				return err
			}
			sent++
		}
		p.pass()
		for _, m := range p.reqs {
			if err := p.srv.Reply(m, resp); err != nil {
				return err
			}
		}
		p.reqs = p.reqs[:0]
		for _, m := range p.resps {
			if m.Err != nil {
				return m.Err
			}
			done++
		}
		p.resps = p.resps[:0]
	}
	return nil
}

// Bench is one case ready to run: its pair warmed up (peers known,
// cutoffs and first buffers in place).
type Bench struct {
	c         Case
	p         *pair
	req, resp []byte
}

// New sets up c and warms it up.
func New(c Case) (*Bench, error) {
	if c.Window < 1 || c.ReqLen < 1 || c.RespLen < 1 {
		return nil, fmt.Errorf("enginebench: case %q: window and lengths must be positive", c.Name)
	}
	p, err := newPair(max(c.ReqLen, c.RespLen))
	if err != nil {
		return nil, err
	}
	b := &Bench{c: c, p: p, req: make([]byte, c.ReqLen), resp: make([]byte, c.RespLen)}
	if err := p.rpcs(2*c.Window, c.Window, b.req, b.resp); err != nil {
		return nil, err
	}
	p.timeRx = c.streaming
	return b, nil
}

// Measure runs n RPCs and returns their figures.
func (b *Bench) Measure(n int) (Result, error) {
	if n < 1 {
		return Result{}, errors.New("enginebench: measure at least one RPC")
	}
	p := b.p
	ev0, tx0, rx0 := p.packets()
	rxNs0 := p.rxNs
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	err := p.rpcs(n, b.c.Window, b.req, b.resp)
	el := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return Result{}, err
	}
	ev, tx, rx := p.packets()
	r := Result{Case: b.c.Name, RPCs: n, Seconds: el.Seconds(),
		NsPerRPC:     float64(el.Nanoseconds()) / float64(n),
		NsPerPkt:     float64(el.Nanoseconds()) / float64(ev-ev0),
		AllocsPerRPC: float64(m1.Mallocs-m0.Mallocs) / float64(n)}
	if b.c.streaming {
		rxNs := p.rxNs - rxNs0
		r.NsPerDataTx = float64(el.Nanoseconds()-rxNs) / float64(tx-tx0)
		r.NsPerDataRx = float64(rxNs) / float64(rx-rx0)
		r.Gbps = float64(b.c.ReqLen) * 8 * float64(n) / el.Seconds() / 1e9
	}
	return r, nil
}

// Run measures c for about d: it grows the count of RPCs until one round
// lasts d/4 or more, then measures a round of about d.
func Run(c Case, d time.Duration) (Result, error) {
	b, err := New(c)
	if err != nil {
		return Result{}, err
	}
	return measureFor(b.Measure, d)
}

// measureFor grows the count n given to measure until a round lasts d/4
// or more, then measures a round of about d.
func measureFor(measure func(n int) (Result, error), d time.Duration) (Result, error) {
	n := 1
	for {
		r, err := measure(n)
		if err != nil {
			return Result{}, err
		}
		if el := time.Duration(r.Seconds * float64(time.Second)); el >= d/4 || n >= 1<<30 {
			n = max(1, int(float64(n)*float64(d)/max(float64(el), 1)))
			break
		}
		n *= 4
	}
	return measure(n)
}
