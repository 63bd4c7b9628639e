package pmd

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// peerEnv makes a re-executed test binary act as the memif traffic peer,
// standing in for `homa-dpdk perf pmd-peer`.
const peerEnv = "HOMA_PERF_TEST_PEER"

func TestMain(m *testing.M) {
	if os.Getenv(peerEnv) == "1" {
		os.Exit(runTestPeer())
	}
	dpdktest.Main(m)
}

// runTestPeer parses the arguments startMemifPeer gives `perf pmd-peer`.
func runTestPeer() int {
	args := os.Args[1:]
	var sock string
	var eal []string
	for i, a := range args {
		switch a {
		case "--socket":
			sock = args[i+1]
		case "--":
			eal = args[i+1:]
		}
	}
	if _, err := dpdk.Init(eal); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	if err := RunMemifPeer(sock, 32, 0, os.Stdout, os.Stdin); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// TestRun_smoke runs the whole pmd scenario once, short, on every
// device: both forwarders must move packets and the report must end with
// the ratio line. It measures nothing (see `homa-dpdk perf pmd`).
func TestRun_smoke(t *testing.T) {
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("pmd needs two CPUs")
	}
	os.Setenv(peerEnv, "1")
	defer os.Unsetenv(peerEnv)
	var out strings.Builder
	cfg := DefaultConfig()
	cfg.Measure, cfg.Warmup, cfg.Trials = time.Second, time.Second, 1
	cfg.Self = os.Args[0]
	cfg.Mem = dpdk.ProbeMemory()
	cfg.Out = &out
	res, err := Run(cfg)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs, want 3", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.OursMpps <= 0 || r.TestpmdMpps <= 0 || r.Ratio <= 0 {
			t.Errorf("%s: ours %.2f testpmd %.2f Mpps: a forwarder moved nothing", r.Device, r.OursMpps, r.TestpmdMpps)
		}
	}
	var rep strings.Builder
	res.Report().Text(&rep)
	lines := strings.Split(strings.TrimSpace(rep.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ours/testpmd: net_null ") {
		t.Errorf("last line %q of the report is not the ratio line:\n%s", last, rep.String())
	}
}

func TestParseDevices(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  string
	}{
		{"all", "null,memif,ring", ""},
		{"null", "null", ""},
		{"net_memif,ring", "memif,ring", ""},
		{"tap", "", `unknown device "tap"`},
	} {
		got, err := ParseDevices(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%q: got %v, %v", tc.in, got, err)
		}
	}
}

func TestParseTestpmdStats_sumsPortsPerPeriod(t *testing.T) {
	const sample = `Port statistics ====================================
  ######################## NIC statistics for port 0  ########################
  RX-packets: 0          RX-missed: 0          RX-bytes:  0
  Throughput (since last show)
  Rx-pps:            0          Rx-bps:            0
  Tx-pps:            0          Tx-bps:            0
  ############################################################################
  ######################## NIC statistics for port 1  ########################
  Tx-pps:            0          Tx-bps:            0
  ############################################################################
Port statistics ====================================
  ######################## NIC statistics for port 0  ########################
  Tx-pps:     24928744          Tx-bps:            0
  ######################## NIC statistics for port 1  ########################
  Tx-pps:     24928868          Tx-bps:            0
  ############################################################################
Telling cores to stop...
  ---------------------- Forward statistics for port 0  ----------------------
  TX-packets: 283303168      TX-dropped: 0             TX-total: 283303168
`
	ch := make(chan float64, 10)
	parseTestpmdStats(strings.NewReader(sample), ch)
	var got []float64
	for v := range ch {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 24928744+24928868 {
		t.Fatalf("periods %v", got)
	}
}

func TestMedian(t *testing.T) {
	if m := perf.Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %v", m)
	}
	if m := perf.Median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	if perf.Median(nil) != 0 {
		t.Error("median of nothing")
	}
}

func TestForwarderPass_noAllocsAndForwards(t *testing.T) {
	dpdktest.Need(t)
	pool, err := newMempool()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Free() // after the ports are removed
	var ports [2]*dpdk.Port
	for i, name := range []string{"net_null_fwdt0", "net_null_fwdt1"} {
		p, err := dpdk.NewVdev(name, "size=64")
		if err != nil {
			t.Fatal(err)
		}
		defer dpdk.RemoveVdev(name)
		if err := setupPort(p, pool); err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	f, err := newForwarder(ports, 32)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(1000, func() { f.pass() }); allocs != 0 {
		t.Errorf("a forwarding pass allocates %.1f times, want 0", allocs)
	}
	f.drain()
	var sent uint64
	for _, p := range ports {
		st, _ := p.Stats()
		sent += st.OPackets
	}
	// Every pass received a burst on each port; all but the last were sent
	// by the following pass, and drain sent the last.
	if want := uint64(1001 * 64); sent != want || f.dropped != 0 {
		t.Errorf("sent %d, dropped %d; want %d sent (1001 passes of a burst per port)", sent, f.dropped, want)
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use after drain", pool.InUse())
	}
}
