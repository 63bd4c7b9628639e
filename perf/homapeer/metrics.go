package homapeer

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
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

// Sample is one sample of the daemon's metrics: its name, labels and
// value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the samples of a Prometheus text exposition (label
// values may hold commas, spaces and escapes: a memif port's name is its
// device arguments), in the order of their families' names; a histogram
// or summary gives its _sum and _count.
func ParseMetrics(r io.Reader) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("the daemon's metrics: %w", err)
	}
	var out []Sample
	for _, name := range slices.Sorted(maps.Keys(mfs)) {
		for _, m := range mfs[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(name string, v float64) { out = append(out, Sample{Name: name, Labels: labels, Value: v}) }
			switch {
			case m.Counter != nil:
				add(name, m.GetCounter().GetValue())
			case m.Gauge != nil:
				add(name, m.GetGauge().GetValue())
			case m.Untyped != nil:
				add(name, m.GetUntyped().GetValue())
			case m.Histogram != nil:
				add(name+"_sum", m.GetHistogram().GetSampleSum())
				add(name+"_count", float64(m.GetHistogram().GetSampleCount()))
			case m.Summary != nil:
				add(name+"_sum", m.GetSummary().GetSampleSum())
				add(name+"_count", float64(m.GetSummary().GetSampleCount()))
			}
		}
	}
	return out, nil
}

// ScrapeMetrics reads the samples of the daemon's /metrics at addr
// (host:port).
func ScrapeMetrics(addr string) ([]Sample, error) {
	body, err := FetchMetrics(addr)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return ParseMetrics(body)
}

// ScrapeCounters reads the daemon's /metrics at addr (host:port): each of
// families for the Homa host host (its label host), summed over the
// family's other labels. A family the endpoint lacks is an error.
func ScrapeCounters(addr, host string, families ...string) (map[string]float64, error) {
	samples, err := ScrapeMetrics(addr)
	if err != nil {
		return nil, err
	}
	return HostSums(samples, host, families...)
}

// HostSums are families of samples for host, each summed over its
// samples of that host; a family without one is an error.
func HostSums(samples []Sample, host string, families ...string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, name := range families {
		found := false
		for _, s := range samples {
			if s.Name == name && s.Labels["host"] == host {
				out[name] += s.Value
				found = true
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
