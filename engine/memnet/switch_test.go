package memnet

import (
	"math"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// congest has h1 and h2 send three low-priority frames each to h4 at
// t=0, and h3 one priority-7 frame at t=3000, which reaches the switch at
// 4450 while three low-priority frames wait at h4's port.
func congest(t *testing.T, cfg Config) *tracer {
	n, h := newNet(cfg, 4)
	tr := traced(n)
	for i := range 3 {
		h[0].Send(homaFrame(t, h[0], h[3], 0, 1500, uint32(i)))
		h[1].Send(homaFrame(t, h[1], h[3], 0, 1500, uint32(i)))
	}
	n.At(3000, func() { h[2].Send(homaFrame(t, h[2], h[3], 7, 1500, 0)) })
	n.RunUntilIdle(1e9)
	checkConserved(t, n)
	return tr
}

func TestEgress_strictPriorityOvertakes(t *testing.T) {
	// Port toward h4: h1 1450..2650, h2 ..3850, h1 ..5050 (on the wire when
	// the p7 frame arrives at 4450), then p7 ahead of the three queued.
	checkTrace(t, congest(t, Config{}),
		"t=2900 h1->h4 DATA p0 1500B",
		"t=4100 h2->h4 DATA p0 1500B",
		"t=5300 h1->h4 DATA p0 1500B",
		"t=6500 h3->h4 DATA p7 1500B",
		"t=7700 h2->h4 DATA p0 1500B",
		"t=8900 h1->h4 DATA p0 1500B",
		"t=10100 h2->h4 DATA p0 1500B")
}

func TestEgress_fifoMode(t *testing.T) {
	checkTrace(t, congest(t, Config{FIFO: true}),
		"t=2900 h1->h4 DATA p0 1500B",
		"t=4100 h2->h4 DATA p0 1500B",
		"t=5300 h1->h4 DATA p0 1500B",
		"t=6500 h2->h4 DATA p0 1500B",
		"t=7700 h1->h4 DATA p0 1500B",
		"t=8900 h2->h4 DATA p0 1500B",
		"t=10100 h3->h4 DATA p7 1500B")
}

func TestEgress_sharedQueues(t *testing.T) {
	// h1's p0 frame is on the wire toward h5 from 1450 to 2650; h2's p0
	// (1450), h3's p4 (2450) and h4's p7 (2550) wait. With 2 queues
	// priorities 4..7 share the top one, so p7 stays behind p4; with 8 it
	// overtakes it. Both overtake h2's p0.
	for _, c := range []struct {
		queues        int
		second, third string
	}{
		{2, "t=4100 h3->h5 DATA p4 1500B", "t=5300 h4->h5 DATA p7 1500B"},
		{8, "t=4100 h4->h5 DATA p7 1500B", "t=5300 h3->h5 DATA p4 1500B"},
	} {
		n, h := newNet(Config{Queues: c.queues}, 5)
		tr := traced(n)
		h[0].Send(homaFrame(t, h[0], h[4], 0, 1500, 0))
		h[1].Send(homaFrame(t, h[1], h[4], 0, 1500, 0))
		n.At(1000, func() { h[2].Send(homaFrame(t, h[2], h[4], 4, 1500, 0)) })
		n.At(1100, func() { h[3].Send(homaFrame(t, h[3], h[4], 7, 1500, 0)) })
		n.RunUntilIdle(1e9)
		checkTrace(t, tr, "t=2900 h1->h5 DATA p0 1500B", c.second, c.third, "t=6500 h2->h5 DATA p0 1500B")
	}
}

func TestEgress_tailDropWhenBufferFull(t *testing.T) {
	// Three frames reach h4's port at 1450; 3000 bytes hold two of them.
	n, h := newNet(Config{BufferBytes: 3000}, 4)
	tr := traced(n)
	for i := range 3 {
		h[i].Send(homaFrame(t, h[i], h[3], uint8(7*(i/2)), 1500, 0))
	}
	n.RunUntilIdle(1e9)
	checkTrace(t, tr,
		"t=1450 h3->h4 DATA p7 1500B drop buffer_full", // no push-out, even for p7
		"t=2900 h1->h4 DATA p0 1500B",
		"t=4100 h2->h4 DATA p0 1500B")
	s := checkConserved(t, n)
	if p := s.Ports[3]; p.MaxQueueBytes != 3000 || p.MaxQueueFrames != 2 || p.QueueBytes != 0 {
		t.Errorf("port stats %+v", p)
	}
}

func TestEgress_tailDropIncast(t *testing.T) {
	const buf = 10_000
	n, h := newNet(Config{BufferBytes: buf}, 5)
	for i := range 4 {
		for j := range 20 {
			h[i].Send(homaFrame(t, h[i], h[4], 0, 1000, uint32(j)))
		}
	}
	n.RunUntilIdle(1e9)
	s := checkConserved(t, n)
	if s.Dropped[DropBufferFull] == 0 || s.Delivered < 20 {
		t.Errorf("4:1 incast into 10 kB: %d delivered, %d tail drops", s.Delivered, s.Dropped[DropBufferFull])
	}
	if m := s.Ports[4].MaxQueueBytes; m > buf || m < buf-1000 {
		t.Errorf("max queue %d B, want within one frame of the %d B buffer", m, buf)
	}
}

func TestFaults_exactWhenCertain(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Loss: 1}, []string{"t=1450 h1->h2 DATA p2 1500B drop loss"}},
		{Config{Duplicate: 1}, []string{
			"t=1450 h1->h2 DATA p2 1500B dup",
			"t=2900 h1->h2 DATA p2 1500B",
			"t=4100 h1->h2 DATA p2 1500B"}},
		{Config{Reorder: 1, ReorderDelay: 5000}, []string{
			"t=1450 h1->h2 DATA p2 1500B reorder",
			"t=7900 h1->h2 DATA p2 1500B"}},
	} {
		n, h := newNet(c.cfg, 2)
		tr := traced(n)
		h[0].Send(homaFrame(t, h[0], h[1], 2, 1500, 0))
		n.RunUntilIdle(1e9)
		checkTrace(t, tr, c.want...)
		checkConserved(t, n)
	}
}

func TestFaults_fractionsWithinTolerance(t *testing.T) {
	const frames = 20_000
	cfg := Config{Seed: 3, Loss: 0.1, Duplicate: 0.05, Reorder: 0.05, ReorderDelay: 5000}
	n, h := newNet(cfg, 2)
	var last uint32
	inversions, got := 0, 0
	h[1].SetReceive(func(b []byte) {
		s := seqOf(t, b)
		if got > 0 && s < last {
			inversions++
		}
		last, got = s, got+1
	})
	for i := range frames {
		n.At(int64(i)*300, func() { h[0].Send(homaFrame(t, h[0], h[1], 0, 300, uint32(i))) })
	}
	n.RunUntilIdle(1e12)
	s := checkConserved(t, n)
	passed := frames - s.Dropped[DropLoss]
	checkFraction(t, "loss", s.Dropped[DropLoss], frames, cfg.Loss)
	checkFraction(t, "duplicate", s.Duplicated, passed, cfg.Duplicate)
	checkFraction(t, "reorder", s.Reordered, passed+s.Duplicated, cfg.Reorder)
	if s.Delivered != uint64(got) || s.TotalDropped() != s.Dropped[DropLoss] {
		t.Errorf("delivered %d (received %d), drops %v", s.Delivered, got, s.Dropped)
	}
	// A held frame is overtaken by the ~16 sent in the next 5 µs.
	if inversions < int(s.Reordered)/2 {
		t.Errorf("%d frames arrived out of order for %d held back", inversions, s.Reordered)
	}
}

// checkFraction checks count/of against want within 5 standard deviations.
func checkFraction(t *testing.T, what string, count, of uint64, want float64) {
	t.Helper()
	sd := math.Sqrt(want * (1 - want) / float64(of))
	if got := float64(count) / float64(of); math.Abs(got-want) > 5*sd {
		t.Errorf("%s: %d of %d = %.4f, want %.4f ± %.4f", what, count, of, got, want, 5*sd)
	}
}

// faultyRun runs all-to-all traffic over a faulty, congested network and
// returns its trace.
func faultyRun(t *testing.T, seed int64) []string {
	cfg := Config{Seed: seed, Loss: 0.05, Duplicate: 0.02, Reorder: 0.05, BufferBytes: 20_000}
	n, h := newNet(cfg, 4)
	tr := traced(n)
	for i := range 400 {
		src, dst := h[i%4], h[(i*7+1)%4]
		if src == dst {
			dst = h[(i+1)%4]
		}
		n.At(int64(i*97), func() { src.Send(homaFrame(t, src, dst, uint8(i%8), 100+i*3, uint32(i))) })
	}
	n.RunUntilIdle(1e12)
	checkConserved(t, n)
	return tr.lines
}

func TestFaults_seededDeterminism(t *testing.T) {
	a, b, c := faultyRun(t, 1), faultyRun(t, 1), faultyRun(t, 2)
	if len(a) < 400 {
		t.Fatalf("only %d trace lines", len(a))
	}
	if len(a) != len(b) {
		t.Fatalf("same seed, %d and %d trace lines", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, line %d differs: %q vs %q", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Error("seeds 1 and 2 gave the same trace")
	}
}

func TestPartition_dropsBothWays(t *testing.T) {
	// h1's three frames to h2: the first is on h2's downlink when h2 is
	// cut off at 2000 and is lost on arrival (2900); the others reach the
	// switch at 2650 and 3850 and are lost there, as is what h2 sends
	// while cut off. After reconnecting at 5000 traffic flows again.
	n, h := newNet(Config{}, 2)
	tr := traced(n)
	for i := range 3 {
		h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, uint32(i)))
	}
	n.At(2000, func() {
		n.Partition(h[1].IP(), true)
		h[1].Send(homaFrame(t, h[1], h[0], 0, 1500, 9))
	})
	n.At(5000, func() {
		n.Partition(h[1].IP(), false)
		h[1].Send(homaFrame(t, h[1], h[0], 0, 1500, 10))
	})
	n.RunUntilIdle(1e9)
	checkTrace(t, tr,
		"t=2650 h1->h2 DATA p0 1500B drop partition",
		"t=2900 h1->h2 DATA p0 1500B drop partition",
		"t=3450 h2->h1 DATA p0 1500B drop partition",
		"t=3850 h1->h2 DATA p0 1500B drop partition",
		"t=7900 h2->h1 DATA p0 1500B")
	checkConserved(t, n)
}

func TestRestart_dropsQueuedForReceiver(t *testing.T) {
	// h1 and h3 each send 4 frames to h2, which restarts at 3000: h3's
	// first frame is then on h2's downlink and h1's and h3's second wait at
	// the port; all three are lost. Frames arriving later are delivered.
	n, h := newNet(Config{}, 3)
	restarts := 0
	h[1].OnRestart(func() { restarts++ })
	for i := range 4 {
		h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, uint32(i)))
		h[2].Send(homaFrame(t, h[2], h[1], 0, 1500, uint32(i)))
	}
	n.At(3000, func() { n.Restart(h[1].IP()) })
	n.RunUntilIdle(1e9)
	s := checkConserved(t, n)
	if restarts != 1 || s.Delivered != 5 || s.Dropped[DropRestart] != 3 {
		t.Errorf("restarts %d, delivered %d, restart drops %d; want 1, 5, 3",
			restarts, s.Delivered, s.Dropped[DropRestart])
	}
}

func TestRestart_dropsSenderNIC(t *testing.T) {
	// h1 restarts at 600, half-way through its first frame: all three of
	// its frames are lost. What it sends afterwards goes through.
	n, h := newNet(Config{}, 2)
	tr := traced(n)
	for i := range 3 {
		h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, uint32(i)))
	}
	n.At(600, func() {
		n.Restart(h[0].IP()) // no hook set
		h[0].Send(homaFrame(t, h[0], h[1], 0, 1500, 7))
	})
	n.RunUntilIdle(1e9)
	checkTrace(t, tr,
		"t=600 h1->? DATA p0 1500B drop restart",
		"t=600 h1->? DATA p0 1500B drop restart",
		"t=1200 h1->? DATA p0 1500B drop restart",
		"t=4100 h1->h2 DATA p0 1500B")
	checkConserved(t, n)
}

func TestDropNext_byCountAndMatch(t *testing.T) {
	n, h := newNet(Config{}, 2)
	isGrant := func(b []byte) bool {
		var f wire.Frame
		return wire.ParseFrame(b, &f) == wire.DropNone && f.Type == wire.TypeGrant
	}
	n.DropNext(2, isGrant)
	n.DropNext(1, nil)
	n.DropNext(0, nil) // no effect
	var got []uint32
	h[1].SetReceive(func(b []byte) { got = append(got, seqOf(t, b)) })
	for i := range 8 {
		size := 200
		if i%2 == 1 {
			size = 0 // GRANT with offset i
		}
		h[0].Send(homaFrame(t, h[0], h[1], 0, size, uint32(i)))
	}
	n.RunUntilIdle(1e9)
	// Frame 0 (DATA) goes to the match-all rule; 1 and 3 (GRANTs) to the
	// first rule; everything after passes.
	want := []uint32{2, 4, 5, 6, 7}
	if len(got) != len(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delivered %v, want %v", got, want)
		}
	}
	if s := checkConserved(t, n); s.Dropped[DropInjected] != 3 {
		t.Errorf("injected drops %d, want 3", s.Dropped[DropInjected])
	}
}
