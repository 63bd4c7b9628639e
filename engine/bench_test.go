package engine

import (
	"testing"
	"time"
)

// The engine's own cost, without DPDK: two endpoints on one goroutine
// joined by benchLink, a link that copies nothing (the frame a sender
// writes into a lent buffer is the one its peer reads, as a NIC's DMA
// would hand it over). Messages are reassembled into buffers the port
// lends again and again (PortHooks.RecvBuf), as the worker hub does, so
// the figures are the engine's work per packet and per RPC alone:
//
//	go test ./engine -run '^$' -bench BenchmarkEngine -benchtime 2s
//
// Each reports ns per op and ns per packet event ("ns/pkt": one packet
// sent or one received by either endpoint, control packets included);
// the streaming ones also split the packet events into DATA sent
// ("ns/data-tx": everything the sender's side did, per DATA packet it
// sent) and DATA received ("ns/data-rx": everything the receiver did,
// grants included, per DATA packet it took in).

// benchLink is one direction of the link: Buffer lends the next slot of
// a ring, Send queues it, and deliver hands the queued frames to the
// peer in one batch, as a polling loop would a burst.
type benchLink struct {
	slots [][]byte
	next  int
	queue [][]byte
}

func newBenchLink() *benchLink {
	l := &benchLink{slots: make([][]byte, 4096)}
	for i := range l.slots {
		l.slots[i] = make([]byte, 2048)
	}
	return l
}

func (l *benchLink) Buffer() []byte {
	if len(l.queue) == len(l.slots) {
		return nil
	}
	return l.slots[l.next]
}

func (l *benchLink) Send(frame []byte, _ int) {
	l.queue = append(l.queue, frame)
	l.next = (l.next + 1) % len(l.slots)
}

// deliver hands the queued frames to e as one batch at now; it reports
// whether there were any.
func (l *benchLink) deliver(e *Endpoint, now int64) bool {
	if len(l.queue) == 0 {
		return false
	}
	e.BeginBatch(now)
	for _, f := range l.queue {
		e.Receive(f)
	}
	l.queue = l.queue[:0]
	e.EndBatch()
	return true
}

// benchPair is a client and a server endpoint on benchLinks, with ports
// whose messages go into reused buffers.
type benchPair struct {
	c, s         *Endpoint
	toS, toC     *benchLink
	cli, srv     *Port
	dst          Addr
	start        time.Time
	reqs, resps  []Message // delivered, not yet taken
	sBuf, cBuf   []byte    // the receive buffers, lent to every message (their bytes overlap: nothing reads them)
	rxNs, rxData int64     // time in the server's receive batches, DATA packets in them
	timeRx       bool
}

func newBenchPair(b testing.TB, maxLen int) *benchPair {
	p := &benchPair{toS: newBenchLink(), toC: newBenchLink(), start: time.Now(),
		sBuf: make([]byte, maxLen), cBuf: make([]byte, maxLen)}
	clock := func() int64 { return int64(time.Second) + int64(time.Since(p.start)) }
	mk := func(last byte, tx Transmitter) *Endpoint {
		cfg := DefaultConfig()
		cfg.IP, cfg.MAC = [4]byte{10, 0, 0, last}, testMAC([4]byte{10, 0, 0, last})
		cfg.Clock = clock
		cfg.Resolve = allReachable()
		cfg.IDSeed = 100
		e, err := New(cfg, tx)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	p.c, p.s = mk(1, p.toS), mk(2, p.toC)
	p.srv, _ = p.s.Bind(99)
	p.cli, _ = p.c.OpenClient()
	p.dst = Addr{IP: [4]byte{10, 0, 0, 2}, Port: 99}
	p.srv.SetHooks(PortHooks{
		Deliver: func(m Message) { p.reqs = append(p.reqs, m) },
		RecvBuf: func(n int) ([]byte, bool) { return p.sBuf[:n], true },
	})
	p.cli.SetHooks(PortHooks{
		Deliver: func(m Message) { p.resps = append(p.resps, m) },
		RecvBuf: func(n int) ([]byte, bool) { return p.cBuf[:n], true },
	})
	return p
}

// pass delivers what each side has queued, then runs both endpoints.
func (p *benchPair) pass() {
	now := int64(time.Second) + int64(time.Since(p.start))
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
// either endpoint.
func (p *benchPair) packets() (events, dataSent, dataRcvd uint64) {
	for _, e := range []*Endpoint{p.c, p.s} {
		m := e.Metrics()
		for i := range m.PacketsSent {
			events += m.PacketsSent[i] + m.PacketsRcvd[i]
		}
	}
	return events, p.c.Metrics().PacketsSent[0], p.s.Metrics().PacketsRcvd[0]
}

// rpcs runs n RPCs of reqLen and respLen bytes, keeping window in flight.
func (p *benchPair) rpcs(b testing.TB, n, window int, req, resp []byte) {
	sent, done := 0, 0
	for done < n {
		for sent < n && sent-done < window {
			if _, err := p.cli.Send(p.dst, req); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		p.pass()
		for _, m := range p.reqs {
			if err := p.srv.Reply(m, resp); err != nil {
				b.Fatal(err)
			}
		}
		p.reqs = p.reqs[:0]
		for _, m := range p.resps {
			if m.Err != nil {
				b.Fatal(m.Err)
			}
			done++
		}
		p.resps = p.resps[:0]
	}
}

func benchRPCs(b *testing.B, window, reqLen, respLen int) {
	p := newBenchPair(b, max(reqLen, respLen))
	req, resp := make([]byte, reqLen), make([]byte, respLen)
	p.rpcs(b, 2*window, window, req, resp) // peers, cutoffs, first buffers
	ev0, tx0, rx0 := p.packets()
	p.timeRx = reqLen > 100_000
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	p.rpcs(b, b.N, window, req, resp)
	el := time.Since(t0)
	b.StopTimer()
	ev, tx, rx := p.packets()
	b.ReportMetric(float64(el.Nanoseconds())/float64(ev-ev0), "ns/pkt")
	if p.timeRx {
		b.ReportMetric(float64(el.Nanoseconds()-p.rxNs)/float64(tx-tx0), "ns/data-tx")
		b.ReportMetric(float64(p.rxNs)/float64(rx-rx0), "ns/data-rx")
		b.ReportMetric(float64(reqLen)*8*float64(b.N)/el.Seconds()/1e9, "Gbps")
	}
}

// Small RPCs, 100 B each way, 16 in flight (the demo runs 64).
func BenchmarkEngine_smallRPC(b *testing.B) { benchRPCs(b, 16, 100, 100) }

// One small RPC at a time: the latency path.
func BenchmarkEngine_smallRPCOneAtATime(b *testing.B) { benchRPCs(b, 1, 100, 100) }

// 1 MB requests streamed (4 in flight, as demo --concurrency 4), 100 B
// responses: the per-packet cost of large messages.
func BenchmarkEngine_stream1MB(b *testing.B) { benchRPCs(b, 4, 1_000_000, 100) }
