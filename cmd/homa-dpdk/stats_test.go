package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStats_printsNonZeroHomaCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP homa_engine_total Homa engine counters.
# TYPE homa_engine_total counter
homa_engine_total{counter="responses_received",host="10.0.0.1",port="p0"} 2
homa_engine_total{counter="rpc_timeouts",host="10.0.0.1",port="p0"} 0
homa_port_total{counter="opackets",host="10.0.0.1",port="p0"} 9
go_goroutines 7
`)
	}))
	defer srv.Close()
	var out strings.Builder
	if err := printStats(&out, srv.URL+"/metrics", "homa_engine_total", false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, `counter="responses_received"`) || strings.Contains(got, "homa_port_total") ||
		strings.Contains(got, "rpc_timeouts") || strings.Contains(got, "go_goroutines") {
		t.Errorf("stats output:\n%s", got)
	}
	out.Reset()
	if err := printStats(&out, srv.URL+"/metrics", "", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rpc_timeouts") || !strings.Contains(out.String(), "homa_port_total") {
		t.Errorf("stats --all output:\n%s", out.String())
	}
	if err := printStats(&out, "http://127.0.0.1:1/metrics", "", false); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Errorf("no daemon: %v", err)
	}
}
