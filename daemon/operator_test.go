package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/rs/zerolog"
)

// A port whose device is missing gets the hint that fits: a vdev EAL was
// given but whose driver refused it is not told to give it with --vdev.
func TestNoPortHint_saysWhatWasGiven(t *testing.T) {
	eal := []string{"-l", "0,1", "--vdev", "net_af_packet0,iface=nope"}
	for _, tc := range []struct {
		name    string
		hasArgs bool
		want    string
	}{
		{"net_af_packet0", false, "EAL was given --vdev net_af_packet0,iface=nope, but its driver did not attach the device"},
		{"net_ring0", false, "give a vdev its arguments here (device: net_ring0,ARGS) or to EAL with --vdev"},
		{"net_ring0", true, "could not be made from its arguments"},
		{"0000:3b:00.0", false, "bound to a DPDK driver"},
	} {
		if got := noPortHint(eal, tc.name, tc.hasArgs); !strings.Contains(got, tc.want) {
			t.Errorf("%s (args %v): %q, want %q", tc.name, tc.hasArgs, got, tc.want)
		}
	}
}

// Refused workers are logged, at most one line a second, with the count
// of those left out.
func TestRefusalLog_rateLimited(t *testing.T) {
	var buf strings.Builder
	log := zerolog.New(&buf)
	f := refusalLog(log, time.Hour)
	for i := 0; i < 5; i++ {
		f(1000, 1000, 42, "uid 1000, gid 1000: not root")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), `"uid":1000`) || !strings.Contains(buf.String(), "worker refused: uid 1000") {
		t.Fatalf("%d lines: %s", n, buf.String())
	}
	f = refusalLog(log, 0)
	buf.Reset()
	f(1, 1, 1, "x")
	f(1, 1, 1, "x")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("with no limit, %d lines", n)
	}
}

// The capture file's place is checked before EAL: a missing directory
// is named with the key.
func TestPreflight_captureFileWritable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file, want string
	}{
		{filepath.Join(dir, "x.pcapng"), ""},
		{filepath.Join(dir, "none", "x.pcapng"), "capture.file: create in " + filepath.Join(dir, "none") + ": no such file or directory"},
	} {
		err := Preflight(&config.Spec{Capture: config.CaptureSpec{File: tc.file}})
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.pcapng")); !os.IsNotExist(err) {
		t.Errorf("Preflight created the capture file: %v", err)
	}
}

// protocol.icmp_* reach the engine's limits on the port unreachables
// sent; a limit of 0 in the config is off there (the engine's 0 would be
// its default).
func TestICMPRate_fromConfig(t *testing.T) {
	h := config.ProtocolSpec{ICMPRateLimit: 250 * time.Millisecond, ICMPRateLimitBurst: 3, ICMPRateLimitBuckets: 64,
		ICMPMsgsPerSec: 200, ICMPMsgsBurst: 10}
	if got, want := icmpRate(h), (engine.ICMPRate{PerDestNs: 250_000_000, PerDestBurst: 3, PerSec: 200, Burst: 10, Buckets: 64}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	h.ICMPRateLimit, h.ICMPMsgsPerSec = 0, 0
	if got := icmpRate(h); got.PerDestNs >= 0 || got.PerSec >= 0 {
		t.Errorf("limits of 0 became %+v, want both below 0 (off)", got)
	}
}
