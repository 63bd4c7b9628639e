package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/host"
)

func TestMetrics_endpointExportsHostEngineQueueAndPort(t *testing.T) {
	a, b := ringHosts(t, 4)
	runRPCs(t, a, b, []int{100, 50_000, 200_000})
	srv, err := ServeMetrics("127.0.0.1:19464", &Collector{Hosts: []*host.Host{a, b}})
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
		`homa_faults_injected_total{fault="drop"`,
		`homa_port_link_total{event="down",host="10.0.0.1"`,
		`homa_port_link_up{host="10.0.0.2",port="` + b.Port().Name + `"} 1`,
		`homa_burst_guard_total{event="wait"}`,
		`homa_intr_repair_total{event="unregistered"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	line := `homa_engine_total{counter="packets_sent_DATA",host="10.0.0.1",port="` + a.Port().Name + `"} `
	i := strings.Index(text, line)
	if i < 0 {
		t.Fatalf("no line %q", line)
	}
	if v := strings.Fields(text[i+len(line):])[0]; v == "0" {
		t.Error("DATA sent is exported as 0 after three RPCs")
	}
}

func TestMetrics_addressInUseNamed(t *testing.T) {
	a, _ := ringHosts(t, 1)
	s1, err := ServeMetrics("127.0.0.1:19465", &Collector{Hosts: []*host.Host{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := ServeMetrics("127.0.0.1:19465", &Collector{Hosts: []*host.Host{a}}); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Fatalf("second bind: %v", err)
	}
}
