package cluster

import (
	"math"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// The AI mix offers what it says: rings whose later steps wait for the
// predecessor's chunk, all-to-all rounds of every pair of a group, groups
// that cross racks, and each part's share of the load.
func TestAIMix_offersItsParts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workload, cfg.Duration = workload.AI, 200_000_000
	msgs, err := cfg.AI.Messages(cfg.cluster(), cfg.Messages)
	if err != nil {
		t.Fatal(err)
	}
	rack := func(h int) int { return h / cfg.HostsPerRack }
	for _, g := range cfg.AI.Groups(cfg.cluster()) {
		racks := map[int]bool{}
		for _, h := range g {
			racks[rack(h)] = true
		}
		if len(racks) != cfg.AI.Group {
			t.Fatalf("group %v spans %d racks, want %d", g, len(racks), cfg.AI.Group)
		}
	}
	var wire [4]float64
	g := cfg.AI.Group
	for i, m := range msgs {
		wire[m.Kind] += WireBytes(m.Size) + WireBytes(responseBytes)
		if i > 0 && m.At < msgs[i-1].At {
			t.Fatalf("message %d starts before message %d", i, i-1)
		}
		switch {
		case m.After >= int32(i):
			t.Fatalf("message %d waits for a later one, %d", i, m.After)
		case m.Kind == workload.KindAllReduce && m.After >= 0:
			p := msgs[m.After]
			if p.Kind != workload.KindAllReduce || p.Op != m.Op || p.Dst != m.Src {
				t.Fatalf("ring message %d (%d→%d) waits for %d (%d→%d, op %d), not its predecessor's chunk", i, m.Src, m.Dst, m.After, p.Src, p.Dst, p.Op)
			}
		case m.Kind != workload.KindAllReduce && m.After >= 0:
			t.Fatalf("a %v message waits", m.Kind)
		}
	}
	checkWholeOps(t, msgs, g)
	total := wire[0] + wire[1] + wire[2] + wire[3]
	want := cfg.Load * cfg.LinkBps / 8 * float64(cfg.Hosts()) * float64(cfg.Duration) / 1e9
	if math.Abs(total/want-1) > 0.15 {
		t.Errorf("offered %.3g wire bytes, want %.3g (the load)", total, want)
	}
	for k, share := range []float64{cfg.AI.RPC, cfg.AI.Background, cfg.AI.AllReduce, cfg.AI.AllToAll} {
		if got := wire[k] / total; math.Abs(got-share) > 0.1 {
			t.Errorf("%v: %.3f of the bytes, want %.2f", workload.Kind(k), got, share)
		}
	}
}

// A cut by message count keeps operations whole.
func TestAIMix_cutKeepsOperationsWhole(t *testing.T) {
	cfg := SmokeConfig()
	cfg.Workload, cfg.Messages = workload.AI, 3000
	msgs, err := cfg.AI.Messages(cfg.cluster(), cfg.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) > 3000 || len(msgs) == 0 {
		t.Fatalf("%d messages, want 1..3000", len(msgs))
	}
	checkWholeOps(t, msgs, cfg.AI.Group)
}

// checkWholeOps fails unless every operation of msgs has all its
// messages: a ring's 2(g−1)·g chunks or a round's g(g−1) messages.
func checkWholeOps(t *testing.T, msgs []workload.Msg, g int) {
	t.Helper()
	ops := map[int32]int{}
	for _, m := range msgs {
		if m.Op >= 0 {
			ops[m.Op]++
		}
	}
	for op, n := range ops {
		if n != 2*(g-1)*g && n != g*(g-1) {
			t.Fatalf("operation %d has %d messages: want a ring's %d or a round's %d", op, n, 2*(g-1)*g, g*(g-1))
		}
	}
}

func TestAIMix_refusesBadParameters(t *testing.T) {
	for _, f := range []func(*workload.AIMix){
		func(m *workload.AIMix) { m.Group = 7 },  // 144 hosts are not groups of 7
		func(m *workload.AIMix) { m.RPC = 0.5 },  // shares over 1
		func(m *workload.AIMix) { m.A2AMin = 0 }, // no size
		func(m *workload.AIMix) { m.RPCWorkload = "W9" },
	} {
		m := workload.DefaultAIMix()
		f(&m)
		if err := m.Validate(144); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
}

// An operation's completion over its ideal: a ring that takes exactly its
// steps at the idle time is 1; a round twice its ideal is 2.
func TestAnalyze_collectives(t *testing.T) {
	cfg := SmokeConfig()
	cfg.AI.Group = 2
	d := newIdle(cfg)
	src, dst := 0, cfg.HostsPerRack // across racks
	step := d.ns(cfg.AI.Chunk, true)
	end := int64(1_000_000_000)
	at := end / 2
	msgs := []workload.Msg{
		{Message: msg(at, src, dst, cfg.AI.Chunk), Kind: workload.KindAllReduce, Op: 0, After: -1},
		{Message: msg(at, dst, src, cfg.AI.Chunk), Kind: workload.KindAllReduce, Op: 0, After: -1},
		{Message: msg(at, src, dst, cfg.AI.Chunk), Kind: workload.KindAllReduce, Op: 0, After: 1},
		{Message: msg(at, dst, src, cfg.AI.Chunk), Kind: workload.KindAllReduce, Op: 0, After: 0},
		{Message: msg(at, src, dst, 100_000), Kind: workload.KindAllToAll, Op: 1, After: -1},
		{Message: msg(at, dst, src, 100_000), Kind: workload.KindAllToAll, Op: 1, After: -1},
	}
	a2a := d.ns(100_000, true)
	start := []int64{at, at, at + step, at + step, at, at}
	done := []int64{at + step, at + step, at + 2*step, at + 2*step, at + 2*a2a, at + a2a}
	var r Result
	analyze(&r, cfg, msgs, start, done, end)
	if r.AllReduce == nil || r.AllReduce.Done != 1 || math.Abs(r.AllReduce.Mean-1) > 1e-9 {
		t.Errorf("all-reduce %+v, want 1 done at ratio 1", r.AllReduce)
	}
	if r.AllReduce != nil && (r.AllReduce.Steps != 2 || math.Abs(r.AllReduce.IdealUs-float64(2*step)/1e3) > 1e-9) {
		t.Errorf("all-reduce %+v: want 2 steps of %d ns in its ideal", r.AllReduce, step)
	}
	if r.AllToAll == nil || r.AllToAll.Done != 1 || math.Abs(r.AllToAll.P99-2) > 1e-9 {
		t.Errorf("all-to-all %+v, want 1 done at ratio 2", r.AllToAll)
	}
	done[3] = -1
	analyze(&r, cfg, msgs, start, done, end)
	if r.AllReduce.Ops != 1 || r.AllReduce.Done != 0 {
		t.Errorf("an unfinished ring: %+v, want 1 op, 0 done", r.AllReduce)
	}
}

func msg(at int64, src, dst, size int) workload.Message {
	return workload.Message{At: at, Src: src, Dst: dst, Size: size}
}
