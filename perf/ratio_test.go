package perf

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Each Homa series gets its own ratios against the same run's TCP
// series, labelled by link, in the order the series came.
func TestRTTRatios_twoHoma(t *testing.T) {
	series := []RTTSeries{
		{Transport: "homa-memif", Points: []RTTPoint{{Size: 100, P50Us: 10, P99Us: 20}, {Size: 1_000_000, P50Us: 2000, P99Us: 4000}}},
		{Transport: "homa-ring", Points: []RTTPoint{{Size: 100, P50Us: 8, P99Us: 10}, {Size: 1_000_000, P50Us: 500, P99Us: 1000}}},
		{Transport: "tcp-loopback", Points: []RTTPoint{{Size: 100, P50Us: 20, P99Us: 40}, {Size: 1_000_000, P50Us: 1000, P99Us: 2000}}},
		{Transport: "tcp-veth", Points: []RTTPoint{{Size: 100, P50Us: 40, P99Us: 80}}}, // no 1 MB point
	}
	got := rttRatios(series)
	want := []RTTRatio{
		{Homa: "homa-memif", Size: 100, LoopbackP50: 2, LoopbackP99: 2, VethP50: 4, VethP99: 4},
		{Homa: "homa-memif", Size: 1_000_000, LoopbackP50: 0.5, LoopbackP99: 0.5},
		{Homa: "homa-ring", Size: 100, LoopbackP50: 2.5, LoopbackP99: 4, VethP50: 5, VethP99: 8},
		{Homa: "homa-ring", Size: 1_000_000, LoopbackP50: 2, LoopbackP99: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.Homa != w.Homa || g.Size != w.Size || !near(g.LoopbackP50, w.LoopbackP50) || !near(g.LoopbackP99, w.LoopbackP99) ||
			!near(g.VethP50, w.VethP50) || !near(g.VethP99, w.VethP99) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}

	r := &RTTResult{Series: series, Ratios: got}
	rt := r.RatioTable()
	if h := strings.Join(rt.Header, ","); h != "size,lo/homa-memif P50,lo/homa-memif P99,veth/homa-memif P50,veth/homa-memif P99,"+
		"lo/homa-ring P50,lo/homa-ring P99,veth/homa-ring P50,veth/homa-ring P99" {
		t.Errorf("ratio header %s", h)
	}
	if row := strings.Join(rt.Rows[1], ","); row != "1 MB,0.50,0.50,-,-,2.00,2.00,-,-" {
		t.Errorf("1 MB ratios %s (no veth figure: -)", row)
	}
	pt := r.Table()
	if row := strings.Join(pt.Rows[1], ","); row != "1 MB,2000.0,4000.0,500.0,1000.0,1000.0,2000.0,-,-" {
		t.Errorf("1 MB percentiles %s", row)
	}

	// A Homa series with no TCP to compare has ratios of 0, shown "-";
	// TCP series are never the Homa side.
	lone := rttRatios([]RTTSeries{{Transport: "homa-ring", Points: []RTTPoint{{Size: 100, P50Us: 5, P99Us: 6}}},
		{Transport: "tcp-loopback", Points: []RTTPoint{{Size: 1000, P50Us: 5, P99Us: 6}}}})
	if len(lone) != 1 || lone[0].Homa != "homa-ring" || lone[0].LoopbackP50 != 0 {
		t.Errorf("lone ratios %+v", lone)
	}
}

func TestThroughputRatios_twoHoma(t *testing.T) {
	const mb, mb64 = 1_000_000, 64_000_000
	runs := []ThroughputRun{
		{Transport: "homa-memif", Size: mb, Gbps: 2, CPUPerGB: 3},
		{Transport: "homa-memif", Size: mb64, Gbps: 4, CPUPerGB: 2},
		{Transport: "homa-ring", Size: mb, Gbps: 5, CPUPerGB: 1.5},
		{Transport: "homa-ring", Size: mb64, Gbps: 8, CPUPerGB: 1},
		{Transport: "tcp-loopback", Size: mb, Gbps: 20, CPUPerGB: 0.5},
		{Transport: "tcp-loopback", Size: mb64, Gbps: 16, CPUPerGB: 0.5},
		{Transport: "tcp-veth", Size: mb, Gbps: 10, CPUPerGB: 0.75}, // no 64 MB run
	}
	got := throughputRatios(runs)
	want := []ThroughputRatio{
		{Homa: "homa-memif", TCP: "tcp-loopback", Size: mb, Gbps: 0.1, CPUPerGB: 6},
		{Homa: "homa-memif", TCP: "tcp-veth", Size: mb, Gbps: 0.2, CPUPerGB: 4},
		{Homa: "homa-ring", TCP: "tcp-loopback", Size: mb, Gbps: 0.25, CPUPerGB: 3},
		{Homa: "homa-ring", TCP: "tcp-veth", Size: mb, Gbps: 0.5, CPUPerGB: 2},
		{Homa: "homa-memif", TCP: "tcp-loopback", Size: mb64, Gbps: 0.25, CPUPerGB: 4},
		{Homa: "homa-ring", TCP: "tcp-loopback", Size: mb64, Gbps: 0.5, CPUPerGB: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.Homa != w.Homa || g.TCP != w.TCP || g.Size != w.Size || !near(g.Gbps, w.Gbps) || !near(g.CPUPerGB, w.CPUPerGB) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}
	r := &ThroughputResult{Runs: runs, Ratios: got}
	if row := strings.Join(r.RatioTable().Rows[3], ","); row != "1 MB,homa-ring / tcp-veth,0.50,2.00" {
		t.Errorf("ratio row %s", row)
	}
	if row := strings.Join(r.RatioTable().Rows[5], ","); row != "64 MB,homa-ring / tcp-loopback,0.50,2.00" {
		t.Errorf("ratio row %s", row)
	}
	// The table: by size, then by transport.
	var order []string
	for _, row := range r.Table().Rows {
		order = append(order, row[0]+" "+row[1])
	}
	if got := strings.Join(order, ","); got != "1 MB homa-memif,1 MB homa-ring,1 MB tcp-loopback,1 MB tcp-veth,"+
		"64 MB homa-memif,64 MB homa-ring,64 MB tcp-loopback" {
		t.Errorf("table rows %s", got)
	}

	// A skipped run, or one without figures, has no ratios.
	runs[2].Skipped = "no ring"
	runs[3].Skipped = "no ring"
	runs[5] = ThroughputRun{Transport: "tcp-loopback", Size: mb64}
	runs[6] = ThroughputRun{Transport: "tcp-veth", Skipped: "no netns"}
	if got := throughputRatios(runs); len(got) != 1 || got[0].Homa != "homa-memif" || got[0].TCP != "tcp-loopback" || got[0].Size != mb {
		t.Errorf("with skips: %+v", got)
	}
}

// The steps: each link's daemon and sizes, TCP loopback's sizes, the veth
// pair and TCP veth's sizes; through testpmd, memif alone and testpmd.
func TestSteps(t *testing.T) {
	rc := RTTConfigFor(true)
	if n := RTTSteps(rc); n != 2*(1+5)+5+(1+5) {
		t.Errorf("RTTSteps %d", n)
	}
	rc.Testpmd, rc.Veth = "dpdk-testpmd", false
	if n := RTTSteps(rc); n != (1+5)+5+1 {
		t.Errorf("RTTSteps through testpmd without veth: %d", n)
	}
	if n := RTTSteps(RTTConfigFor(false)); n != 2*(1+7)+7+(1+7) {
		t.Errorf("RTTSteps of the default run %d", n)
	}
	tc := ThroughputConfigFor(true)
	if n := ThroughputSteps(tc); n != 2*2+1+2 {
		t.Errorf("ThroughputSteps %d", n)
	}
	if n := ThroughputSteps(ThroughputConfigFor(false)); n != 2*(1+3)+3+(1+3) {
		t.Errorf("ThroughputSteps of the default run %d", n)
	}
	tc.Testpmd = "dpdk-testpmd"
	if n := ThroughputSteps(tc); n != 2+1+2+1 {
		t.Errorf("ThroughputSteps through testpmd: %d", n)
	}
	tc.Testpmd, tc.Links = "", []string{"ring"}
	if n := ThroughputSteps(tc); n != 2+1+2 {
		t.Errorf("ThroughputSteps on ring alone: %d", n)
	}
	if l := LinksFor(nil, "dpdk-testpmd"); len(l) != 1 || l[0] != "memif" || HomaSeries(l[0]) != "homa-memif" {
		t.Errorf("links through testpmd %v", l)
	}
}
