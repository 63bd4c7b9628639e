package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// TestEcho_serverAndClient runs the pair as scripts/worker-demo.sh does,
// against the fake engine (shm/shmtest: the daemon's control socket and
// rings on one host, no network): the client's RPCs of 100 B and 200 KB
// come back byte for byte, and the server stops when told.
func TestEcho_serverAndClient(t *testing.T) {
	f, err := shmtest.Start(shmtest.Config{
		Path:   filepath.Join(t.TempDir(), "workers.sock"),
		Params: shm.Params{SQEntries: 64, CQEntries: 128, ArenaSize: 1 << 20, PoolPages: 16},
		Host:   [4]byte{10, 0, 0, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dial := func() *client.Client {
		c, err := client.Dial(f.Path(), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	srv, cli := dial(), dial()
	stop := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- serve(srv, 99, stop) }()
	// The server binds in its goroutine: until then the port is unreachable.
	for deadline := time.Now().Add(5 * time.Second); call(cli, "10.0.0.1:99", 1, 1) != nil; {
		if time.Now().After(deadline) {
			t.Fatal("the echo server did not bind port 99 within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, size := range []int{100, 200_000} {
		if err := call(cli, "10.0.0.1:99", 20, size); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
	}
	stop <- os.Interrupt
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
