package slowdown

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestWorkload_loadAndDraw(t *testing.T) {
	for _, name := range []string{"W1", "W2", "W3", "W4", "W5"} {
		w, err := LoadWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.CDF[len(w.CDF)-1] != 1 || w.Sizes[0] < 1 {
			t.Errorf("%s: bad CDF or sizes", name)
		}
		c := w.Clamp(1_000_000)
		if c.Max() > 1_000_000 || c.CDF[len(c.CDF)-1] != 1 {
			t.Errorf("%s clamped: max %d", name, c.Max())
		}
	}
	if _, err := LoadWorkload("W9"); err == nil {
		t.Error("W9 loaded")
	}
	w, err := ParseWorkload("T", strings.NewReader("length_bytes,relative_frequency\n10,1\n100,3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Quantile(0.2) != 10 || w.Quantile(0.3) != 100 || w.Mean(func(s int) float64 { return float64(s) }) != 77.5 {
		t.Errorf("quantiles/mean wrong: %v %v", w.Sizes, w.CDF)
	}
}

// The arrivals offer the asked load: their wire bytes over the period.
func TestPoissonArrivals_offerTheLoad(t *testing.T) {
	w, _ := LoadWorkload("W2")
	period := 20 * time.Second
	arr := PoissonArrivals(w, 3, period, 1e9, 0.8, 1)
	bytes := 0.0
	for _, c := range arr {
		for i, a := range c {
			if i > 0 && a.At < c[i-1].At {
				t.Fatal("arrivals out of order")
			}
			bytes += HomaWireBytes(a.Size)
		}
	}
	got := bytes * 8 / period.Seconds() / 1e9
	if math.Abs(got-0.8) > 0.04 {
		t.Errorf("offered load %.3f, want 0.8", got)
	}
}

func TestUnloaded_interpolatesAndBuckets(t *testing.T) {
	u := &Unloaded{Sizes: []int{100, 10_000}, RTTUs: []float64{10, 1000}}
	for _, c := range []struct {
		size int
		want float64
	}{{50, 10}, {100, 10}, {1000, 100}, {10_000, 1000}, {20_000, 1000}} {
		if got := u.At(c.size); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("At(%d) = %g, want %g", c.size, got, c.want)
		}
	}
	var s []Sample
	for i := 1; i <= 100; i++ {
		s = append(s, Sample{Size: 100, RTT: time.Duration(i*10) * time.Microsecond})
	}
	s = append(s, Sample{Size: 9000, RTT: 2 * time.Millisecond})
	b := Buckets(s, u)
	if len(b) != 2 || b[0].Count != 100 || b[0].P50 != 50 || b[0].P99 != 99 || b[1].Count != 1 {
		t.Errorf("buckets: %+v", b)
	}
	if sh := Short(s, u); sh == nil || sh.Count != 100 {
		t.Errorf("short: %+v", sh)
	}
	if r, err := ParseTCRate("500mbit"); err != nil || r != 500e6 {
		t.Errorf("ParseTCRate: %v %v", r, err)
	}
}

// TestRun_smoke runs the scenario with the smoke configuration:
// namespaces, the tc bottleneck, three Homa daemons, then kernel TCP.
func TestRun_smoke(t *testing.T) {
	need := func(why string) {
		if dpdktest.Required() {
			t.Fatalf("HOMA_REQUIRE_DPDK=1 but %s", why)
		}
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		need("not root")
	}
	for _, p := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(p); err != nil {
			need(p + " is missing")
		}
	}
	bin := filepath.Join(t.TempDir(), "homa-dpdk")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/homa-dpdk/homa-dpdk/cmd/homa-dpdk").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := SmokeConfig()
	cfg.Bin, cfg.Out, cfg.Log = bin, t.TempDir(), testLog{t}
	cfg.Prefix = "sdt" + strconv.Itoa(os.Getpid()%100000)
	t.Cleanup(func() { // namespaces go even if Run panicked
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], cfg.Prefix) {
				exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	})
	start := time.Now()
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke took %v", time.Since(start))
	var sb strings.Builder
	Print(&sb, res)
	t.Log("\n" + sb.String())
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want homa and tcp", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Sampled < 50 || r.Short == nil || len(r.Buckets) < 3 {
			t.Errorf("%s: %d samples, %d buckets", r.Transport, r.Sampled, len(r.Buckets))
		}
		// The machine is shared: CPU stalls can fail a few RPCs (logged in
		// the JSON); more than 10% is a broken harness.
		if r.Failed+r.Lost > r.Offered/10 {
			t.Errorf("%s: %d failed, %d unanswered of %d (%s)", r.Transport, r.Failed, r.Lost, r.Offered, r.FirstErr)
		}
		used := 0
		for _, b := range r.Bands {
			if b.Packets > 0 {
				used++
			}
		}
		// Homa's priorities reach the qdisc as distinct bands; TCP uses one.
		if r.Transport == "homa" && used < 2 {
			t.Errorf("homa used %d bottleneck bands: %+v", used, r.Bands)
		}
		if r.Transport == "tcp" && used > 2 {
			t.Errorf("tcp used %d bottleneck bands: %+v", used, r.Bands)
		}
	}
	if len(res.Plots) != 1 {
		t.Errorf("plots: %v", res.Plots)
	}
	for _, p := range append(res.Plots, filepath.Join(cfg.Out, "slowdown.json")) {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// Each workload gets the rate at which its highest load offers RPCRate
// RPCs per second, capped by RateBps; the protocol and the queues follow
// the rate.
func TestRateFor_perWorkload(t *testing.T) {
	cfg := DefaultConfig()
	for _, c := range []struct {
		w         string
		lo, hi    float64 // Mb/s
		rpcPerSec float64
		atRateCap bool
	}{{"W1", 4, 4.5, 1500, false}, {"W2", 7.5, 8.5, 1500, false}, {"W3", 39, 40.5, 1500, false}, {"W4", 200, 200, 0, true}, {"W5", 200, 200, 0, true}} {
		w, _ := LoadWorkload(c.w)
		w = w.Clamp(cfg.MaxMessage)
		r := rateFor(cfg, w)
		if r < c.lo*1e6 || r > c.hi*1e6 {
			t.Errorf("%s: rate %.3f Mb/s, want %g..%g", c.w, r/1e6, c.lo, c.hi)
		}
		rps := 0.8 * r / 8 / w.Mean(HomaWireBytes)
		if !c.atRateCap && math.Abs(rps-c.rpcPerSec) > 2 {
			t.Errorf("%s: %.1f RPC/s at 80%%, want %g", c.w, rps, c.rpcPerSec)
		}
		if c.atRateCap && rps >= cfg.RPCRate {
			t.Errorf("%s: %.1f RPC/s at the rate cap", c.w, rps)
		}
	}
	cfg.RPCRate = 0
	w, _ := LoadWorkload("W1")
	if r := rateFor(cfg, w); r != cfg.RateBps {
		t.Errorf("RPCRate 0: rate %g, want --rate", r)
	}
	if l := bandLimit(40e6); l != 250_000 {
		t.Errorf("band limit at 40 Mb/s: %d bytes, want 50 ms = 250000", l)
	}
	if l := bandLimit(1e6); l != 16*1514 {
		t.Errorf("band limit at 1 Mb/s: %d bytes, want 16 frames", l)
	}
	p := Protocol(4.2e6)
	for _, want := range []string{fmt.Sprintf("unsched_bytes: %d\n", 2*homaPerPacketPayload), fmt.Sprintf("max_incoming: %d\n", 8*homaPerPacketPayload), "resend_ticks: 100\n", "request_ack_ticks: 100\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("Protocol(4.2 Mb/s) lacks %q:\n%s", want, p)
		}
	}
	if p := Protocol(200e6); !strings.Contains(p, "unsched_bytes: 25000\n") {
		t.Errorf("Protocol(200 Mb/s):\n%s", p)
	}
}
