package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/rs/zerolog"
)

// A start-up whose context ends while it waits for a link that never
// comes up (a memif server with no peer) returns at once, not after the
// wait's 10 s: an error of phase link that wraps ErrStopped and the
// cause, a log line that names the phase, and the port it made removed
// with its socket file.
func TestStartContext_stoppedInLinkWait(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	spec, err := config.Load(config.Source{YAML: fmt.Sprintf(`lcores: [1]
ports:
  - device: "net_memif_ctx0,role=server,id=0,socket=%s,socket-abstract=no"
    address: 10.0.0.1/24
metrics:
  address: ""
workers:
  enabled: false
`, sock)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("test stop")
	time.AfterFunc(300*time.Millisecond, func() { cancel(cause) })
	var log strings.Builder
	start := time.Now()
	d, err := StartContext(ctx, spec, zerolog.New(&log), Options{SkipEAL: true})
	took := time.Since(start)
	if d != nil {
		d.Stop()
		t.Fatal("StartContext returned a daemon; want the stop")
	}
	var pe *PhaseError
	if !errors.Is(err, ErrStopped) || !errors.Is(err, cause) || !errors.As(err, &pe) || pe.Phase != "link" {
		t.Fatalf("err = %v; want phase link, wrapping ErrStopped and the cause", err)
	}
	if took > 2*time.Second {
		t.Errorf("returned %v after start, want within 2 s (the stop at 300 ms)", took.Round(time.Millisecond))
	}
	if s := log.String(); !strings.Contains(s, `"phase":"link"`) || !strings.Contains(s, "stopped during start-up") {
		t.Errorf("no log line names the phase: %s", s)
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("%s left behind", sock)
	}
}
