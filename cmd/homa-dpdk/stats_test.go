package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const statsPage = `# HELP homa_responses_received_total Complete responses delivered to a client.
# TYPE homa_responses_received_total counter
homa_responses_received_total{host="10.0.0.1",port="p0"} %d
# HELP homa_rpc_timeouts_total Client RPCs failed with a timeout.
# TYPE homa_rpc_timeouts_total counter
homa_rpc_timeouts_total{host="10.0.0.1",port="p0"} 0
# HELP homa_worker_sessions Worker sessions attached now.
# TYPE homa_worker_sessions gauge
homa_worker_sessions{host="10.0.0.1",port="p0"} 3
# HELP homa_message_size_bytes Messages received whole.
# TYPE homa_message_size_bytes histogram
homa_message_size_bytes_bucket{host="10.0.0.1",port="p0",le="100"} 2
homa_message_size_bytes_count{host="10.0.0.1",port="p0"} 2
go_goroutines 7
`

func statsServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, statsPage, 2+1000*n.Add(1))
		case "/healthz":
			fmt.Fprintln(w, "ok")
		default:
			http.Error(w, "not ready: the link of p0 (10.0.0.1) is down", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestStats_printsNonZeroHomaSamples(t *testing.T) {
	srv := statsServer(t)
	var out strings.Builder
	if err := printStats(&out, srv.URL+"/metrics", "responses", false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, `homa_responses_received_total{host="10.0.0.1",port="p0"}`) || strings.Contains(got, "worker_sessions") {
		t.Errorf("--filter responses:\n%s", got)
	}
	out.Reset()
	if err := printStats(&out, srv.URL+"/metrics", "", false); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "rpc_timeouts") || strings.Contains(got, "_bucket") || strings.Contains(got, "go_goroutines") ||
		!strings.Contains(got, "homa_worker_sessions") || !strings.Contains(got, "homa_message_size_bytes_count") {
		t.Errorf("stats:\n%s", got)
	}
	out.Reset()
	if err := printStats(&out, srv.URL+"/metrics", "", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rpc_timeouts") || !strings.Contains(out.String(), "_bucket") {
		t.Errorf("stats --all:\n%s", out.String())
	}
	if err := printStats(&out, "http://127.0.0.1:1/metrics", "", false); err == nil || !strings.Contains(err.Error(), "metrics.address") {
		t.Errorf("no daemon: %v", err)
	}
}

// --watch prints each counter's rate: the page's counter grows 1000 a
// scrape, a gauge gets no rate.
func TestStats_watchPrintsRates(t *testing.T) {
	srv := statsServer(t)
	var out strings.Builder
	if err := watchStats(&out, srv.URL+"/metrics", "", false, 100*time.Millisecond, 2); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "-- ") != 2 {
		t.Fatalf("two intervals, got:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "homa_responses_received_total"):
			var rate float64
			if len(f) != 3 || !strings.HasSuffix(f[2], "/s") {
				t.Fatalf("counter line %q", l)
			}
			fmt.Sscanf(strings.TrimSuffix(f[2], "/s"), "%g", &rate)
			if rate < 3000 || rate > 12000 { // 1000 per scrape, a scrape every 0.1 s
				t.Errorf("rate %v in %q", rate, l)
			}
		case strings.HasPrefix(l, "homa_worker_sessions"):
			if len(f) != 2 {
				t.Errorf("gauge line %q has a rate", l)
			}
		}
	}
}

func TestStats_probeAnswersAndFails(t *testing.T) {
	srv := statsServer(t)
	var out strings.Builder
	if err := askProbe(&out, srv.URL, "healthz"); err != nil || out.String() != "ok\n" {
		t.Errorf("healthz: %v %q", err, out.String())
	}
	if err := askProbe(&out, srv.URL, "readyz"); err == nil || err.Error() != "readyz: not ready: the link of p0 (10.0.0.1) is down" {
		t.Errorf("readyz: %v", err)
	}
	if err := askProbe(&out, srv.URL, "alive"); err == nil {
		t.Error("--probe alive accepted")
	}
}
