package daemon

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// get fetches a path of a metrics server.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

func TestMetrics_endpointExportsHostEngineQueueAndPort(t *testing.T) {
	a, b := ringHosts(t, 4)
	runRPCs(t, a, b, []int{100, 50_000, 200_000})
	col := &Collector{Hosts: []*host.Host{a, b}}
	srv, err := ServeMetrics("127.0.0.1:19464", col, col.Health, col.Readiness)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, text := get(t, "http://127.0.0.1:19464/metrics")
	pa := `port="` + a.Port().Name + `"`
	for _, want := range []string{
		`homa_packets_sent_total{host="10.0.0.1",` + pa + `,type="DATA"}`,
		`homa_responses_received_total{host="10.0.0.1",` + pa + `} 3`,
		`homa_arp_packets_received_total{host="10.0.0.2",`,
		`homa_txq_sent_packets_total{host="10.0.0.1",` + pa + `,queue="0"}`,
		`homa_port_sent_packets_total{host="10.0.0.1",`,
		`homa_drops_total{host="10.0.0.1",` + pa + `,reason="fault_injected",stage="host"}`,
		`homa_drops_total{host="10.0.0.1",` + pa + `,reason="duplicate_data",stage="engine"}`,
		`homa_faults_injected_total{fault="drop",`,
		`homa_port_link_events_total{event="down",host="10.0.0.1"`,
		`homa_port_link_up{host="10.0.0.2",port="` + b.Port().Name + `"} 1`,
		`homa_burst_guard_waits_total `,
		`homa_intr_repairs_total `,
		`homa_rpc_round_trip_seconds_bucket{host="10.0.0.1",` + pa + `,le="0.001"}`,
		`homa_rpc_round_trip_seconds_count{host="10.0.0.1",` + pa + `} 3`,
		`homa_message_size_bytes_bucket{host="10.0.0.2",port="` + b.Port().Name + `",le="100"} 1`,
		`homa_message_size_bytes_count{host="10.0.0.2",port="` + b.Port().Name + `"} 3`,
		`homa_build_info{commit=`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	line := `homa_packets_sent_total{host="10.0.0.1",` + pa + `,type="DATA"} `
	i := strings.Index(text, line)
	if i < 0 {
		t.Fatalf("no line %q", line)
	}
	if v := strings.Fields(text[i+len(line):])[0]; v == "0" {
		t.Error("DATA sent is exported as 0 after three RPCs")
	}
	// Every family the alert rules and the dashboard use is one the
	// collector exports (with hubs and loops, as the daemon has them).
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.name] = true
	}
	for k := range engine.CounterHelp {
		exported["homa_"+k+"_total"] = true
	}
	for _, f := range []string{"../deploy/prometheus/alerts.yaml", "../deploy/grafana/homa-dpdk.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`homa_[a-z_]+`).FindAllString(string(b), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if !exported[base] {
				t.Errorf("%s uses %s, which the collector does not export", f, name)
			}
		}
	}
	if code, body := get(t, "http://127.0.0.1:19464/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, "http://127.0.0.1:19464/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz with both links up: %d %q", code, body)
	}

	// promtool, Prometheus' own checker, finds nothing to say about the
	// names, types, units and help (Debian's prometheus package has it).
	if _, err := exec.LookPath("promtool"); err != nil {
		if dpdktest.Required() {
			t.Fatal("promtool is missing (scripts/setup.sh installs Debian's prometheus package)")
		}
		t.Skip("promtool is missing")
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestMetrics_addressInUseNamed(t *testing.T) {
	a, _ := ringHosts(t, 1)
	col := &Collector{Hosts: []*host.Host{a}}
	s1, err := ServeMetrics("127.0.0.1:19465", col, col.Health, col.Readiness)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := ServeMetrics("127.0.0.1:19465", col, col.Health, col.Readiness); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Fatalf("second bind: %v", err)
	}
}

// /readyz says what is wrong: here a probe that reports a reason.
func TestMetrics_readyzNamesTheReason(t *testing.T) {
	a, _ := ringHosts(t, 1)
	s, err := ServeMetrics("127.0.0.1:19466", &Collector{Hosts: []*host.Host{a}}, func() string { return "" }, func() string { return "the link of p0 is down" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, body := get(t, "http://127.0.0.1:19466/readyz"); code != 503 || !strings.Contains(body, "not ready: the link of p0 is down") {
		t.Errorf("/readyz: %d %q", code, body)
	}
}

// allFamilies emits one sample of every family the collector declares,
// hubs' and loops' too, as the collector types them.
type allFamilies struct{}

func (a allFamilies) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(a, ch) }

func (a allFamilies) Collect(ch chan<- prometheus.Metric) {
	type fam struct {
		name string
		lv   []string
	}
	var all []fam
	for _, f := range families {
		var lv []string
		if f.perHost {
			lv = []string{"10.0.0.1", "p0"}
		}
		for range f.extra {
			lv = append(lv, "x")
		}
		all = append(all, fam{f.name, lv})
	}
	for k := range engine.CounterHelp {
		all = append(all, fam{"homa_" + k + "_total", []string{"10.0.0.1", "p0"}})
	}
	for _, f := range all {
		d := desc(f.name)
		switch {
		case f.name == "homa_rpc_round_trip_seconds":
			ch <- histogram(d, &engine.Histogram{}, engine.RoundTripBoundsNs[:], 1e-9, f.lv...)
		case f.name == "homa_message_size_bytes":
			ch <- histogram(d, &engine.Histogram{}, engine.MessageSizeBounds[:], 1, f.lv...)
		case strings.HasSuffix(f.name, "_total"):
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, 1, f.lv...)
		default:
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 1, f.lv...)
		}
	}
}

// Every family the collector declares, those of hubs and loops included,
// passes promtool's checks of names, types, units and help.
func TestMetrics_everyFamilyPassesPromtool(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		if dpdktest.Required() {
			t.Fatal("promtool is missing (scripts/setup.sh installs Debian's prometheus package)")
		}
		t.Skip("promtool is missing")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(allFamilies{})
	var b strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := len(mfs), len(families)+len(engine.CounterHelp); got != want {
		t.Fatalf("%d families gathered, %d declared", got, want)
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
