package enginebench

import (
	"testing"
	"time"
)

// The cases as benchmarks:
//
//	go test ./perf/enginebench -run '^$' -bench . -benchtime 2s
func bench(b *testing.B, c Case) {
	e, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	r, err := e.Measure(b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.NsPerPkt, "ns/pkt")
	if r.Gbps > 0 {
		b.ReportMetric(r.NsPerDataTx, "ns/data-tx")
		b.ReportMetric(r.NsPerDataRx, "ns/data-rx")
		b.ReportMetric(r.Gbps, "Gbps")
	}
}

func BenchmarkEngine_smallRPC(b *testing.B)           { bench(b, SmallRPC) }
func BenchmarkEngine_smallRPCOneAtATime(b *testing.B) { bench(b, OneAtATime) }
func BenchmarkEngine_stream1MB(b *testing.B)          { bench(b, Stream1MB) }

// Run reports every figure of each case, and a small RPC allocates
// nothing once the pair is warm (the engine's RPC reuse).
func TestRun_reportsEveryFigure(t *testing.T) {
	for _, c := range Cases {
		r, err := Run(c, 20*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if r.RPCs < 1 || r.NsPerRPC <= 0 || r.NsPerPkt <= 0 || r.NsPerPkt >= r.NsPerRPC {
			t.Errorf("%s: %+v", c.Name, r)
		}
		if c.streaming != (r.Gbps > 0 && r.NsPerDataTx > 0 && r.NsPerDataRx > 0) {
			t.Errorf("%s: streaming figures %+v", c.Name, r)
		}
	}
}

func TestMeasure_smallRPCsAllocateNothing(t *testing.T) {
	b, err := New(SmallRPC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Measure(1000); err != nil { // spare RPCs for the window
		t.Fatal(err)
	}
	r, err := b.Measure(1000)
	if err != nil {
		t.Fatal(err)
	}
	if r.AllocsPerRPC > 0.01 {
		t.Errorf("%.3f allocations per small RPC, want 0", r.AllocsPerRPC)
	}
}

func TestNew_refusesAnEmptyCase(t *testing.T) {
	if _, err := New(Case{Name: "x", Window: 0, ReqLen: 1, RespLen: 1}); err == nil {
		t.Error("a window of 0 was accepted")
	}
}
