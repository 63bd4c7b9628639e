package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// TestHello_echoed runs the example against the fake engine (shm/shmtest:
// the daemon's control socket and rings, no network), whose port 99
// echoes each request, as the echo example's server does on the demo.
func TestHello_echoed(t *testing.T) {
	f, err := shmtest.Start(shmtest.Config{
		Path:   filepath.Join(t.TempDir(), "10.0.0.1.sock"),
		Params: shm.Params{SQEntries: 64, CQEntries: 128, ArenaSize: 1 << 20, PoolPages: 8},
		Host:   [4]byte{10, 0, 0, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Script(99, shm.ErrCodeNone)
	var out strings.Builder
	if err := hello(f.Path(), "10.0.0.1:99", &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "10.0.0.1:99 answered \"hello\"\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
