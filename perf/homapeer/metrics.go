package homapeer

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ClientHost is the host the client worker of a pair is on (DialPair):
// the sending side of a stream.
const ClientHost = "10.0.0.1"

// MetricsSettle is how long a reading of the daemon's counters waits for
// its loop to publish what has just happened: hosts and hubs publish
// their counters every 100 ms (host.PublishEvery).
const MetricsSettle = 250 * time.Millisecond

// The engine's counters of DATA payload bytes sent, retransmissions
// included: copied into the frame, and sent from the message's own
// memory (engine.Metrics DataBytesCopied, DataBytesZeroCopy).
const (
	metricCopied   = "homa_data_bytes_copied_total"
	metricZeroCopy = "homa_data_bytes_zero_copy_total"
)

// FreeLoopbackPort is a TCP address on 127.0.0.1 free a moment ago, for
// the daemon's metrics endpoint (HOMA_METRICS_ADDRESS).
func FreeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// FetchMetrics reads the daemon's /metrics at addr (host:port), the
// text format, for the caller to parse and close.
func FetchMetrics(addr string) (io.ReadCloser, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("the daemon's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("the daemon's metrics at %s: %s", addr, resp.Status)
	}
	return resp.Body, nil
}

// ScrapeCounters reads the daemon's /metrics at addr (host:port): each of
// families for the Homa host host (its label host), summed over the
// family's other labels. A family the endpoint lacks is an error.
func ScrapeCounters(addr, host string, families ...string) (map[string]float64, error) {
	body, err := FetchMetrics(addr)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return hostCounters(body, host, families)
}

// hostCounters are families of the metrics text in r for host, each
// summed over its samples of that host.
func hostCounters(r io.Reader, host string, families []string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("the daemon's metrics: %w", err)
	}
	out := map[string]float64{}
	for _, name := range families {
		mf, ok := mfs[name]
		if !ok {
			return nil, fmt.Errorf("the daemon's metrics have no %s", name)
		}
		found := false
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "host" && l.GetValue() == host {
					out[name] += m.GetCounter().GetValue()
					found = true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("the daemon's metrics have no %s for host %s", name, host)
		}
	}
	return out, nil
}

// SendBytes reads the sending host's (ClientHost's) DATA payload bytes
// so far, copied and zero-copy, from the daemon's metrics endpoint, once
// its loop has published them (MetricsSettle).
func (d *Daemon) SendBytes() (perf.SendBytes, error) {
	if d.Metrics == "" {
		return perf.SendBytes{}, fmt.Errorf("the daemon was started without a metrics endpoint")
	}
	time.Sleep(MetricsSettle)
	c, err := ScrapeCounters(d.Metrics, ClientHost, metricCopied, metricZeroCopy)
	if err != nil {
		return perf.SendBytes{}, err
	}
	return perf.SendBytes{Copied: uint64(c[metricCopied]), ZeroCopy: uint64(c[metricZeroCopy])}, nil
}
