package demo

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// TestRunDemo_homaHostsExchangeRPCs runs the Homa demo's data path (two
// hosts on a ring pair, one polling loop on lcore 1) for a short time and
// checks its report. It measures nothing.
func TestRunDemo_homaHostsExchangeRPCs(t *testing.T) {
	dpdktest.Need(t)
	var out strings.Builder
	capture := filepath.Join(t.TempDir(), "demo.pcapng")
	// 5 % of the packets each host receives are dropped, so that RESENDs
	// recover them (and show in the capture).
	err := Run(Config{Duration: time.Second, Sizes: []int{100, 10_000, 100_000}, Concurrency: 2, Out: &out,
		Capture: capture, CaptureLast: 20000, Drop: 0.05})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P99 µs", "RPCs/s", "packets_sent_DATA="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The capture opens in tshark and holds Homa (IPv4 protocol 146)
	// DATA, GRANT, and ACK or NEED_ACK packets.
	if _, err := exec.LookPath("tshark"); err != nil {
		if dpdktest.Required() {
			t.Fatal("tshark is missing (scripts/setup.sh installs it)")
		}
		t.Skip("tshark is missing")
	}
	raw, err := exec.Command("tshark", "-r", capture, "-Y", "ip.proto == 146", "-T", "fields", "-e", "data.data").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", capture, err)
	}
	types := map[string]int{}
	for _, l := range strings.Fields(string(raw)) {
		if len(l) >= 24 {
			types[l[22:24]]++ // the Homa type is byte 11
		}
	}
	if types["10"] == 0 || types["11"] == 0 || types["17"]+types["18"] == 0 {
		t.Errorf("capture holds Homa types %v; want DATA (10), GRANT (11) and ACK (18) or NEED_ACK (17)", types)
	}
	checkDissector(t, capture)
}

// The demo with each host as two shards (demo --shards 2): its RPCs
// complete with 5 % of the packets dropped, and the report counts both
// shards' packets. Its metrics address is taken (a daemon serves there
// already): it runs without an endpoint, and its start line says so.
func TestRunDemo_twoShardsAHost(t *testing.T) {
	dpdktest.Need(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	var out strings.Builder
	err = Run(Config{Duration: time.Second, Sizes: []int{100, 10_000, 100_000}, Concurrency: 4, Out: &out,
		Drop: 0.05, Shards: 2, Metrics: taken})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if want := "sizes [100 10000 100000], 1s; no metrics: " + taken + " is in use (--metrics ADDR picks another)"; !strings.HasSuffix(first, want) {
		t.Errorf("start line %q, want it to end %q", first, want)
	}
	for _, want := range []string{"2 shards each", "RPCs/s", "packet events: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestWorkersConfig_validate(t *testing.T) {
	for _, c := range []struct {
		cfg  WorkersConfig
		want string // "" for valid
	}{
		{WorkersConfig{}, ""},
		{WorkersConfig{Link: "memif"}, ""},
		{WorkersConfig{Link: "ring"}, ""},
		{WorkersConfig{Link: "memif", MemifPeers: "a,b"}, ""},
		{WorkersConfig{Link: "tap"}, `--link "tap": want memif or ring`},
		{WorkersConfig{Link: "ring", MemifPeers: "a,b"}, "--link ring with --memif-peers"},
		{WorkersConfig{Link: "ring", MTU: 9000}, ""},
		{WorkersConfig{Link: "memif", MTU: 9000}, ""},
		{WorkersConfig{MTU: 9001}, "--mtu 9001: want 576..9000"},
		{WorkersConfig{Hosts: 4}, ""},
		{WorkersConfig{Hosts: 16, Link: "ring"}, ""},
		{WorkersConfig{Hosts: 1}, "--hosts 1: want 2..16"},
		{WorkersConfig{Hosts: 17}, "--hosts 17: want 2..16"},
		{WorkersConfig{Hosts: 4, Link: "memif"}, "more than two hosts are joined by a ring switch"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
