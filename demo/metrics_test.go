package demo

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// demo --workers serves the daemon's metrics: its start line says where,
// and /metrics there has its hosts' counters.
func TestServeWorkers_servesMetrics(t *testing.T) {
	dpdktest.Need(t)
	var out lockedBuilder
	done, ended := make(chan struct{}), make(chan error, 1)
	go func() {
		ended <- ServeWorkers(WorkersConfig{Dir: t.TempDir(), Metrics: "127.0.0.1:0", Stop: done, Out: &out})
	}()
	line := regexp.MustCompile(`; workers attach at [^;]*; metrics on http://(127\.0\.0\.1:[0-9]+)/metrics \(homa-dpdk stats --metrics (127\.0\.0\.1:[0-9]+)\)\n`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m = line.FindStringSubmatch(out.String())
	}
	if m == nil || m[1] != m[2] {
		close(done)
		t.Fatalf("no start line like %s: %v\n%s", line, <-ended, out.String())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `homa_port_link_up{host="10.0.0.2"`) {
			t.Errorf("/metrics has no link of 10.0.0.2:\n%.2000s", body)
		}
	} else {
		t.Error(err)
	}
	close(done)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// The demo whose metrics address is taken (a daemon already serves
// there) runs without an endpoint, and its start line says so.
func TestRunDemo_metricsAddressTakenRunsWithout(t *testing.T) {
	dpdktest.Need(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var out strings.Builder
	if err := Run(Config{Duration: 300 * time.Millisecond, Sizes: []int{100}, Concurrency: 1, Metrics: addr, Out: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := "demo: Homa hosts 10.0.0.1 (client) and 10.0.0.2 (echo server) on a net_ring pair, 8 TX queues each, one polling loop on lcore 1; " +
		"1 RPCs outstanding, sizes [100], 300ms; no metrics: " + addr + " is in use (--metrics ADDR picks another)\n"
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "RPCs/s") {
		t.Errorf("output\n%s\nwant it to start\n%s and end with the summary", out.String(), want)
	}
}
