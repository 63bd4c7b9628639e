package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demo --lcores N is the old name of --shards N: still taken, hidden from
// the help, with a one-line note of the new name.
func TestDemo_lcoresIsTheOldNameOfShards(t *testing.T) {
	c := rootCmd()
	var out, errOut strings.Builder
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SetArgs([]string{"demo", "--lcores", "17", "--sizes", "100"})
	err := c.Execute()
	if want := "--shards 17: want 1..16"; err == nil || err.Error() != want {
		t.Errorf("demo --lcores 17: %v, want %q (the value reaches --shards)", err, want)
	}
	if want := "Flag --lcores has been deprecated, it is now --shards (a count of shards, not a list of lcores)\n"; out.String() != want {
		t.Errorf("printed %q, want the one line %q", out.String(), want)
	}
	help := demoCmd().Flags().FlagUsages()
	if strings.Contains(help, "--lcores") || !strings.Contains(help, "--shards int") {
		t.Errorf("demo's flags show --lcores, or not --shards:\n%s", help)
	}
}

// The demo serves its metrics where homa-dpdk stats reads by default.
func TestDemo_metricsWhereStatsReads(t *testing.T) {
	demo, stats := demoCmd().Flags().Lookup("metrics"), statsCmd().Flags().Lookup("metrics")
	if demo == nil || demo.DefValue != stats.DefValue {
		t.Fatalf("demo --metrics %v, stats reads %s by default", demo, stats.DefValue)
	}
}

// homa-dpdk demo serves the daemon's metrics while it runs (here on a
// port of its own choosing, where the default's may be taken): its start
// line says where, and homa-dpdk stats reads the hosts' counters there.
func TestDemo_servesMetricsThatStatsReads(t *testing.T) {
	needRoot(t)
	d := startMain(t, "", "demo", "--seconds", "3", "--sizes", "100", "--metrics", "127.0.0.1:0")
	d.waitFor(t, "demo: Homa hosts", 30*time.Second)
	line := regexp.MustCompile(`demo: Homa hosts 10\.0\.0\.1 \(client\) and 10\.0\.0\.2 \(echo server\) on a net_ring pair, 8 TX queues each, one polling loop on lcore 1; ` +
		`8 RPCs outstanding, sizes \[100\], 3s; metrics on http://(127\.0\.0\.1:[0-9]+)/metrics \(homa-dpdk stats --metrics (127\.0\.0\.1:[0-9]+)\)\n`)
	m := line.FindStringSubmatch(d.out.String())
	if m == nil || m[1] != m[2] {
		d.cmd.Process.Kill()
		t.Fatalf("no start line like %s; output:\n%s", line, d.out.String())
	}
	var out strings.Builder
	// The hosts publish their counters every few milliseconds: the first
	// reading may find none sent yet.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out.Reset()
		c := rootCmd()
		c.SetOut(&out)
		c.SetArgs([]string{"stats", "--metrics", m[1], "--filter", "homa_packets_sent_total"})
		if err := c.Execute(); err != nil {
			t.Fatalf("stats --metrics %s: %v", m[1], err)
		}
		if strings.Contains(out.String(), `homa_packets_sent_total{host="10.0.0.1"`) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(out.String(), `homa_packets_sent_total{host="10.0.0.1"`) {
		t.Errorf("stats printed no packets sent by 10.0.0.1:\n%s", out.String())
	}
	if resp, err := http.Get("http://" + m[1] + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %v %v", resp, err)
	}
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("demo: %v; output:\n%s", err, d.out.String())
	}
	if !strings.Contains(d.out.String(), "RPCs/s") {
		t.Errorf("no summary; output:\n%s", d.out.String())
	}
}

// homa-dpdk demo --workers DIR starts, and stops on SIGTERM leaving no
// socket in DIR.
func TestDemoWorkers_startsAndStopsCleanly(t *testing.T) {
	needRoot(t)
	startDemoWorkers(t)
}
