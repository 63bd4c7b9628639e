package homapeer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// sendMetrics is the daemon's /metrics text with the send counters of
// both hosts: 10.0.0.1's copied and zero-copy bytes, 10.0.0.2's others.
func sendMetrics(copied, zeroCopy int) string {
	return fmt.Sprintf(`# HELP homa_data_bytes_copied_total Payload bytes copied.
# TYPE homa_data_bytes_copied_total counter
homa_data_bytes_copied_total{host="10.0.0.1",port="net_ring_a0"} %d
homa_data_bytes_copied_total{host="10.0.0.2",port="net_ring_a1"} 777
# HELP homa_data_bytes_zero_copy_total Payload bytes sent from the message's memory.
# TYPE homa_data_bytes_zero_copy_total counter
homa_data_bytes_zero_copy_total{host="10.0.0.1",port="net_ring_a0"} %d
homa_data_bytes_zero_copy_total{host="10.0.0.2",port="net_ring_a1"} 0
`, copied, zeroCopy)
}

func TestHostSums_oneHostsFamilies(t *testing.T) {
	sums := func(text, host string, families ...string) (map[string]float64, error) {
		samples, err := ParseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return HostSums(samples, host, families...)
	}
	c, err := sums(sendMetrics(10, 2_000_000), "10.0.0.1", metricCopied, metricZeroCopy)
	if err != nil || c[metricCopied] != 10 || c[metricZeroCopy] != 2_000_000 {
		t.Errorf("got %v, %v", c, err)
	}
	if _, err := sums(sendMetrics(1, 1), "10.0.0.1", "homa_nothing_total"); err == nil {
		t.Error("a family the endpoint lacks gave no error")
	}
	if _, err := sums(sendMetrics(1, 1), "10.0.0.9", metricCopied); err == nil {
		t.Error("a host the endpoint lacks gave no error")
	}
}

// Every kind of family gives samples, in the order of the families'
// names; label values keep their commas, spaces and escapes; a broken
// line is an error.
func TestParseMetrics_kindsAndLabels(t *testing.T) {
	text := `# TYPE homa_gap_seconds gauge
homa_gap_seconds{host="10.0.0.1"} 0.25
# TYPE homa_wait_seconds histogram
homa_wait_seconds_bucket{le="1"} 2
homa_wait_seconds_bucket{le="+Inf"} 3
homa_wait_seconds_sum 1.5
homa_wait_seconds_count 3
homa_drops_total{reason="x",port="a, b \"c\""} 1e+06
`
	s, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range s {
		got = append(got, fmt.Sprintf("%s %v", x.Name, x.Value))
	}
	if strings.Join(got, "; ") != "homa_drops_total 1e+06; homa_gap_seconds 0.25; homa_wait_seconds_sum 1.5; homa_wait_seconds_count 3" ||
		s[0].Labels["port"] != `a, b "c"` || s[1].Labels["host"] != "10.0.0.1" {
		t.Errorf("samples %q %+v", got, s)
	}
	if _, err := ParseMetrics(strings.NewReader(`homa_x{host="unterminated} 1` + "\n")); err == nil {
		t.Error("an unterminated label was read")
	}
}

// Each size gets what the sender sent since the reading before it; a
// reading that fails leaves the sizes on either side without counters.
func TestSendReading_differencesAndFailures(t *testing.T) {
	readings := []string{sendMetrics(100, 0), sendMetrics(150, 1_000_000), "", sendMetrics(160, 3_000_000), sendMetrics(170, 4_000_000)}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readings[n]
		n++
		if body == "" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	s := sendReading{d: &Daemon{Metrics: strings.TrimPrefix(srv.URL, "http://")}}
	s.read()
	var got []string
	for range 4 {
		b, why := s.next()
		if b == nil {
			got = append(got, "unread: "+why[:min(len(why), 20)])
			continue
		}
		got = append(got, fmt.Sprintf("copied %d zero-copy %d", b.Copied, b.ZeroCopy))
	}
	want := []string{"copied 50 zero-copy 1000000", "unread: the daemon's metrics", "unread: the daemon's metrics", "copied 10 zero-copy 1000000"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSendBytes_noEndpoint(t *testing.T) {
	if _, err := (&Daemon{}).SendBytes(); err == nil {
		t.Error("a daemon without a metrics endpoint gave counters")
	}
}
