package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/rs/zerolog"
)

// consoleLog is the daemon's console log as a user reads it, without the
// time at the start of each line.
func consoleLog(w *strings.Builder) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}})
}

// A slow step of a stop says how long it took, with the unit:
// took=270.123ms, not zerolog's bare number of milliseconds
// (took=270.123).
func TestTimed_slowStepSaysTookWithItsUnit(t *testing.T) {
	var log strings.Builder
	d := &Daemon{Log: consoleLog(&log)}
	d.timed("stop loop 0", func() error { time.Sleep(slowStop + 20*time.Millisecond); return nil })
	if want := regexp.MustCompile(`^WRN slow stop step="stop loop 0" took=[0-9]+(\.[0-9]+)?ms\n$`); !want.MatchString(log.String()) {
		t.Errorf("logged %q, want a line like %q", log.String(), "WRN slow stop step=\"stop loop 0\" took=270.123ms")
	}
}

// A memif port whose peer is not there says, as the link phase begins,
// what it waits for (its role and socket, the peer that must open it) and
// for how long, not only in the error after the 10 s; a start-up stopped
// meanwhile says how long its stop took, with the unit.
func TestStartContext_memifWaitSaysWhatItWaitsFor(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	spec, err := config.Load(config.Source{YAML: fmt.Sprintf(`lcores: [1]
ports:
  - device: "net_memif_wait0,role=server,id=0,socket=%s,socket-abstract=no"
    address: 10.0.0.1/24
    tx_queues: 1
mempool:
  mbufs: 2048
  cache: 32
metrics:
  address: ""
workers:
  enabled: false
`, sock)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("test stop")) })
	var log strings.Builder
	d, err := StartContext(ctx, spec, consoleLog(&log), Options{SkipEAL: true})
	if d != nil {
		d.Stop()
		t.Fatal("StartContext returned a daemon; want the stop")
	}
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("err = %v; want the stop", err)
	}
	lines := strings.Split(log.String(), "\n")
	want := "INF link phase: waiting for a memif client to open the same socket (another homa-dpdk run whose port is net_memif with role=client there, " +
		"or any memif application) port=net_memif_wait0 role=server socket=" + sock + " wait=10s"
	if !slices.Contains(lines, want) {
		t.Errorf("no log line %q; log:\n%s", want, log.String())
	}
	stopped := regexp.MustCompile(`^INF stopped during start-up phase=link reason="test stop" took=[0-9.]+m?s$`)
	if !slicesContainsMatch(lines, stopped) {
		t.Errorf("no line matches %s; log:\n%s", stopped, log.String())
	}
}

func slicesContainsMatch(lines []string, re *regexp.Regexp) bool {
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// took writes a duration with its unit, in ASCII: the console log shows
// it bare (took=0.429ms), where µs made it quote the value.
func TestTook_unitInASCII(t *testing.T) {
	for d, want := range map[time.Duration]string{429 * time.Microsecond: "0.429ms", 250123456 * time.Nanosecond: "250.123ms",
		1011569 * time.Microsecond: "1.012s", 3 * time.Millisecond: "3ms"} {
		if got := took(d); got != want {
			t.Errorf("took(%v) = %q, want %q", d, got, want)
		}
	}
}
