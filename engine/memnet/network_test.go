package memnet

import (
	"bytes"
	"testing"
)

func TestSend_idlePathTiming(t *testing.T) {
	n, h := newNet(Config{}, 2)
	tr := traced(n)
	f := homaFrame(t, h[0], h[1], 7, 1500, 0)
	var got []byte
	var at int64
	h[1].SetReceive(func(b []byte) { got, at = append([]byte(nil), b...), n.Now() })
	h[0].Send(f)
	n.RunUntilIdle(1e9)
	if at != 2900 || !bytes.Equal(got, f) {
		t.Errorf("delivered at %d (want 2900), bytes equal %v", at, bytes.Equal(got, f))
	}
	checkTrace(t, tr, "t=2900 h1->h2 DATA p7 1500B")
	checkConserved(t, n)
}

func TestSend_serializationBackToBack(t *testing.T) {
	// Uplink: A 0..1200, B 1200..1281 (101 B = 80.8 ns, rounded up), C 1281..2481.
	// Switch: A 1450..2650, B arrives 1531 and waits until 2650..2731,
	// C arrives 2731 and goes at once, 2731..3931. Each lands 250 ns later.
	n, h := newNet(Config{}, 2)
	tr := traced(n)
	h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, 1))
	h[0].Send(homaFrame(t, h[0], h[1], 0, 101, 2))
	h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, 3))
	if q := h[0].QueuedBytes(); q != 3101 {
		t.Errorf("QueuedBytes after sending = %d, want 3101", q)
	}
	n.RunUntilIdle(1e9)
	checkTrace(t, tr,
		"t=2900 h1->h2 DATA p0 1500B",
		"t=2981 h1->h2 DATA p0 101B",
		"t=4181 h1->h2 DATA p0 1500B")
	if q := h[0].QueuedBytes(); q != 0 {
		t.Errorf("QueuedBytes when idle = %d", q)
	}
}

func TestSend_propagationDelay(t *testing.T) {
	for _, c := range []struct {
		prop int64
		want int64
	}{{10_000, 2*480 + 2*10_000}, {-1, 2 * 480}} {
		n, h := newNet(Config{LinkBps: 25e9, PropDelay: c.prop}, 2)
		var at int64 = -1
		h[1].SetReceive(func([]byte) { at = n.Now() })
		n.At(1000, func() { h[0].Send(homaFrame(t, h[0], h[1], 3, 1500, 0)) })
		n.RunUntilIdle(1e9)
		if at != 1000+c.want {
			t.Errorf("PropDelay %d: delivered at %d, want %d", c.prop, at, 1000+c.want)
		}
	}
}

func TestSend_nicStrictPriority(t *testing.T) {
	// A is on the wire at once; C (p7) then overtakes B (p0) in the NIC.
	n, h := newNet(Config{}, 2)
	var order []uint32
	h[1].SetReceive(func(b []byte) { order = append(order, seqOf(t, b)) })
	h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, 'A'))
	h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, 'B'))
	h[0].Send(homaFrame(t, h[0], h[1], 7, 1500, 'C'))
	n.RunUntilIdle(1e9)
	if string(rune(order[0]))+string(rune(order[1]))+string(rune(order[2])) != "ACB" {
		t.Errorf("NIC order %c, want ACB", order)
	}
	if s := n.Stats(); s.Ports[0].NICMaxQueueFrames != 3 || s.Ports[0].NICMaxQueueBytes != 4500 {
		t.Errorf("NIC high-water marks %+v", s.Ports[0])
	}
}

func TestSend_copiesFrame(t *testing.T) {
	n, h := newNet(Config{}, 2)
	f := homaFrame(t, h[0], h[1], 0, 200, 42)
	want := append([]byte(nil), f...)
	var got []byte
	h[1].SetReceive(func(b []byte) { got = append([]byte(nil), b...) })
	h[0].Send(f)
	clear(f)
	n.RunUntilIdle(1e9)
	if !bytes.Equal(got, want) {
		t.Error("frame changed after Send changed what was delivered")
	}
}

func TestSend_replyFromReceive(t *testing.T) {
	n, h := newNet(Config{}, 2)
	var rtt int64
	h[1].SetReceive(func(b []byte) { h[1].Send(homaFrame(t, h[1], h[0], 0, len(b), 0)) })
	h[0].SetReceive(func([]byte) { rtt = n.Now() })
	h[0].Send(homaFrame(t, h[0], h[1], 0, 1000, 0))
	n.RunUntilIdle(1e9)
	if want := 2 * (2*800 + 2*250); rtt != int64(want) {
		t.Errorf("round trip %d ns, want %d", rtt, want)
	}
}

func TestSend_unparseableAndNoRoute(t *testing.T) {
	n, h := newNet(Config{}, 2)
	tr := traced(n)
	h[0].Send([]byte("not a frame"))
	bad := homaFrame(t, h[0], h[1], 0, 200, 0)
	bad[14] = 0x65 // IPv4 version 6
	h[0].Send(bad)
	ghost := &Host{ip: addr(9), mac: [6]byte{2, 0, 10, 0, 0, 9}}
	h[0].Send(homaFrame(t, h[0], ghost, 0, 200, 0))
	n.RunUntilIdle(1e9)
	s := checkConserved(t, n)
	if s.Dropped[DropUnparseable] != 2 || s.Dropped[DropNoRoute] != 1 || s.Delivered != 0 {
		t.Errorf("drops %v delivered %d", s.Dropped, s.Delivered)
	}
	checkTrace(t, tr,
		"t=259 h1->? ? p0 11B drop unparseable",
		"t=419 h1->? ? p0 200B drop unparseable",
		"t=579 h1->? DATA p0 200B drop no_route")
}

func TestAddHost_addresses(t *testing.T) {
	n := New(Config{})
	h := n.AddHost([4]byte{192, 168, 1, 7})
	if h.MAC() != [6]byte{2, 0, 192, 168, 1, 7} || h.IP() != [4]byte{192, 168, 1, 7} || h.Name() != "h1" {
		t.Errorf("host %v %v %s", h.MAC(), h.IP(), h.Name())
	}
	if n.Host(h.IP()) != h || n.Host(addr(1)) != nil || len(n.Hosts()) != 1 {
		t.Error("Host/Hosts lookup wrong")
	}
	defer func() {
		if recover() == nil {
			t.Error("AddHost with a taken address did not panic")
		}
	}()
	n.AddHost([4]byte{192, 168, 1, 7})
}

// steadyFlow sends frames from three senders to one receiver (a congested
// port, both queues busy) and runs the network until idle.
func steadyFlow(t testing.TB, n *Network, h []*Host, frames [][]byte, rounds int) {
	for range rounds {
		for i, f := range frames {
			h[i%3].Send(f)
		}
	}
	if !n.RunUntilIdle(n.Now() + 1e12) {
		t.Fatal("steady flow did not finish")
	}
}

func flowFrames(t testing.TB, h []*Host) [][]byte {
	var frames [][]byte
	for i := range 3 {
		frames = append(frames, homaFrame(t, h[i], h[3], uint8(i*3), 1500, 0), homaFrame(t, h[i], h[3], 7, 0, 0))
	}
	return frames
}

func TestSend_steadyStateAllocatesNothing(t *testing.T) {
	n, h := newNet(Config{Loss: 0.01, Duplicate: 0.01, Reorder: 0.01}, 4)
	received := 0
	h[3].SetReceive(func([]byte) { received++ })
	frames := flowFrames(t, h)
	steadyFlow(t, n, h, frames, 200) // warm up: grow the heap and the free list
	allocs := testing.AllocsPerRun(20, func() { steadyFlow(t, n, h, frames, 50) })
	if allocs != 0 {
		t.Errorf("steady flow allocates %.1f times per run of %d frames", allocs, 50*len(frames))
	}
	if received == 0 {
		t.Fatal("nothing received")
	}
	checkConserved(t, n)
}

// BenchmarkNetwork_flow reports the cost of one frame through the
// network, from Send to delivery, with a congested egress port.
func BenchmarkNetwork_flow(b *testing.B) {
	n, h := newNet(Config{}, 4)
	frames := flowFrames(b, h)
	steadyFlow(b, n, h, frames, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		steadyFlow(b, n, h, frames, 100)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100*len(frames)), "ns/frame")
}
