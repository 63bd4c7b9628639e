package perf

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// The default rtt sizes go to 64 MB, --smoke's stop at 1 MB; MB is 10^6
// bytes and the names follow sizeName.
func TestSizes_defaultAndSmoke(t *testing.T) {
	rc := RTTConfigFor(false)
	if !slices.Contains(rc.Sizes, 8_000_000) || !slices.Contains(rc.Sizes, 64_000_000) {
		t.Errorf("default rtt sizes %v lack 8 MB or 64 MB", rc.Sizes)
	}
	if s := RTTConfigFor(true).Sizes; largest(s) != 1_000_000 || len(s) != 5 {
		t.Errorf("smoke rtt sizes %v: want 100 B..1 MB", s)
	}
	if got := SizeList(rc.Sizes); got != "100 B, 1 KB, 10 KB, 100 KB, 1 MB, 8 MB and 64 MB" {
		t.Errorf("sizeList %q", got)
	}
	if m := rttMethod(rc); !strings.Contains(m, "1 MB, 8 MB and 64 MB") || !strings.Contains(m, "for at most 1.25s") {
		t.Errorf("rtt method %q", m)
	}

	tc := ThroughputConfigFor(false)
	var sizes []int
	for _, z := range tc.Sizes {
		sizes = append(sizes, z.Size)
		if z.Window < 1 || z.Warmup < z.Window {
			t.Errorf("throughput size %+v: want a window and at least a window of warm-up", z)
		}
		// The demo's regions: 128 MiB of arena, 2048 pool pages of 64 KiB.
		if z.Size*z.Window > 128<<20 || z.Window*((z.Size+1<<16-1)>>16) > 2048 {
			t.Errorf("throughput size %+v: more in flight than the demo's worker regions hold", z)
		}
	}
	if !slices.Equal(sizes, []int{1_000_000, 8_000_000, 64_000_000}) {
		t.Errorf("default throughput sizes %v", sizes)
	}
	if s := ThroughputConfigFor(true).Sizes; len(s) != 1 || s[0].Size != 1_000_000 {
		t.Errorf("smoke throughput sizes %+v: want 1 MB alone", s)
	}
	m := throughputMethod(tc)
	if !strings.Contains(m, "64 MB with a window of 2") || !strings.Contains(m, "1 MB with a window of 4") {
		t.Errorf("throughput method %q", m)
	}
}

// measure checks its time limits after every round trip: slow round
// trips stop at the least warm-up and count, not at the next multiple
// of 64.
func TestMeasure_slowRoundTrips(t *testing.T) {
	calls := 0
	rt := func() error {
		calls++
		time.Sleep(20 * time.Millisecond)
		return nil
	}
	t0 := time.Now()
	h, err := Measure(rt, 1000, 20000, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != MinRecorded || calls != MinWarmup+MinRecorded {
		t.Errorf("%d recorded of %d round trips, want %d after %d warm-up", h.TotalCount(), calls, MinRecorded, MinWarmup)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("took %v", el)
	}

	// Fast ones go to the count.
	calls = 0
	h, err = Measure(func() error { calls++; return nil }, 50, 200, time.Minute, nil)
	if err != nil || h.TotalCount() != 200 || calls != 250 {
		t.Errorf("fast: %d recorded of %d calls (%v)", h.TotalCount(), calls, err)
	}
}

// The TCP peer echoes and acknowledges 8 MB and 64 MB messages byte for
// byte (a 4-byte length prefix, the top bit the flag), and streams them.
func TestTCP_largeMessages(t *testing.T) {
	srv, err := StartTCPServer("", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := TCPDial("", srv.addr)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	for _, size := range []int{8_000_000, 64_000_000} {
		req, resp := TCPMessage(size, false), make([]byte, 4+size)
		if err := TCPRPC(c, req, resp); err != nil {
			t.Fatalf("%s: %v", SizeName(size), err)
		}
		if !bytes.Equal(req, resp) {
			t.Fatalf("%s: the echo differs", SizeName(size))
		}
	}
	cfg := ThroughputConfig{Duration: 50 * time.Millisecond}
	r, err := tcpStreamSize(cfg, ThroughputSize{Size: 8_000_000, Window: 2, Warmup: 2}, "tcp-loopback", c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Size != 8_000_000 || r.Window != 2 || r.Messages < 1 || r.Gbps <= 0 {
		t.Errorf("stream: %+v", r)
	}
	c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a message of 2^31 bytes was accepted")
		}
	}()
	TCPMessage(maxTCPMessage+1, false)
}
