package slowdown

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

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
	out := t.TempDir()
	cfg.Bin, cfg.Log = bin, testLog{t}
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
	if err := res.Report().Write(&sb, out); err != nil {
		t.Fatal(err)
	}
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
	for _, p := range append(res.Plots, "slowdown.json") {
		if st, err := os.Stat(filepath.Join(out, p)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
