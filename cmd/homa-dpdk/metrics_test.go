package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetrics_endpointExportsHostEngineQueueAndPort(t *testing.T) {
	a, b := ringHosts(t, 4, 0)
	attachBoxes([]*hostLoop{a, b})
	runRPCs(t, a, b, []int{100, 50_000, 200_000})
	for _, h := range []*hostLoop{a, b} {
		h.nextPublish = 0
		h.publish()
	}
	srv, err := serveMetrics("127.0.0.1:19464", &collector{hosts: []*hostLoop{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://127.0.0.1:19464/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`homa_engine_total{counter="packets_sent_DATA",host="10.0.0.1"`,
		`homa_engine_total{counter="responses_received",host="10.0.0.1"`,
		`homa_host_stack_total{counter="arp_requests",host="10.0.0.2"`,
		`homa_txq_packets_total{event="sent",host="10.0.0.1"`,
		`homa_port_total{counter="opackets",host="10.0.0.1"`,
		`homa_rx_drops_total{cause="fault_injected"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	line := `homa_engine_total{counter="packets_sent_DATA",host="10.0.0.1",port="` + a.port.Name + `"} `
	i := strings.Index(text, line)
	if i < 0 {
		t.Fatalf("no line %q", line)
	}
	if v := strings.Fields(text[i+len(line):])[0]; v == "0" {
		t.Error("DATA sent is exported as 0 after three RPCs")
	}
}

func TestMetrics_addressInUseNamed(t *testing.T) {
	a, _ := ringHosts(t, 1, 0)
	attachBoxes([]*hostLoop{a})
	s1, err := serveMetrics("127.0.0.1:19465", &collector{hosts: []*hostLoop{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := serveMetrics("127.0.0.1:19465", &collector{hosts: []*hostLoop{a}}); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Fatalf("second bind: %v", err)
	}
}

func TestStats_printsNonZeroHomaCounters(t *testing.T) {
	a, b := ringHosts(t, 2, 0)
	attachBoxes([]*hostLoop{a, b})
	runRPCs(t, a, b, []int{100, 3000})
	a.nextPublish = 0
	a.publish()
	srv, err := serveMetrics("127.0.0.1:19466", &collector{hosts: []*hostLoop{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var out strings.Builder
	if err := printStats(&out, "http://127.0.0.1:19466/metrics", "homa_engine_total", false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `counter="responses_received"`) || strings.Contains(out.String(), "homa_port_total") {
		t.Errorf("stats output:\n%s", out.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasSuffix(l, " 0") {
			t.Errorf("zero counter printed without --all: %s", l)
		}
	}
	if err := printStats(&out, "http://127.0.0.1:1/metrics", "", false); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Errorf("no daemon: %v", err)
	}
}
