package memnet

import "testing"

func TestTxTime_exactNs(t *testing.T) {
	for _, c := range []struct {
		bps      float64
		overhead int
		size     int
		want     int64
	}{
		{10e9, 0, 1500, 1200},
		{10e9, 0, 101, 81}, // 80.8 ns rounds up
		{10e9, 24, 1500, 1220},
		{25e9, 0, 1500, 480},
		{100e9, 0, 64, 6}, // 5.12 ns
		{1e9, 0, 9000, 72000},
		{10e9, 0, 0, 0},
	} {
		n := New(Config{LinkBps: c.bps, FrameOverhead: c.overhead})
		if got := n.TxTime(c.size); got != c.want {
			t.Errorf("TxTime(%d) at %g b/s + %d B = %d ns, want %d", c.size, c.bps, c.overhead, got, c.want)
		}
	}
}

func TestQueueOf_sharing(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want [8]int
	}{
		{Config{}, [8]int{0, 1, 2, 3, 4, 5, 6, 7}},
		{Config{Queues: 2}, [8]int{0, 0, 0, 0, 1, 1, 1, 1}},
		{Config{Queues: 3}, [8]int{0, 0, 0, 1, 1, 1, 2, 2}},
		{Config{FIFO: true}, [8]int{}},
	} {
		n := New(c.cfg)
		for p := range 8 {
			if got := n.queueOf(uint8(p)); got != c.want[p] {
				t.Errorf("%+v: queueOf(%d) = %d, want %d", c.cfg, p, got, c.want[p])
			}
		}
	}
}

func TestPort_strictPriorityFIFOWithin(t *testing.T) {
	var pt port
	mk := func(size int) *packet { return &packet{buf: make([]byte, size)} }
	a, b, c, d := mk(10), mk(20), mk(30), mk(40)
	pt.push(a, 0)
	pt.push(b, 5)
	pt.push(c, 0)
	pt.push(d, 5)
	if pt.bytes != 100 || pt.frames != 4 || pt.maxBytes != 100 {
		t.Errorf("occupancy %d B %d frames max %d", pt.bytes, pt.frames, pt.maxBytes)
	}
	for i, want := range []*packet{b, d, a, c, nil} {
		if got := pt.pop(); got != want {
			t.Fatalf("pop %d: got %p, want %p", i, got, want)
		}
	}
}

func TestAlloc_reusesBuffers(t *testing.T) {
	n := New(Config{})
	frame := make([]byte, 1500)
	p := n.alloc(frame)
	buf := &p.buf[:1][0]
	n.release(p)
	q := n.alloc(frame[:100])
	if &q.buf[:1][0] != buf || len(q.buf) != 100 {
		t.Errorf("alloc after release did not reuse the buffer (len %d)", len(q.buf))
	}
	big := n.alloc(make([]byte, 9000)) // larger than minBufCap: its own buffer
	if len(big.buf) != 9000 {
		t.Errorf("jumbo frame copied as %d bytes", len(big.buf))
	}
}
