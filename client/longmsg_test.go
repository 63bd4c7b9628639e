package client

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// TestCall_64MiBEchoByteExact: in regions the daemon sized for 64 MiB
// messages (64 MiB of arena, 1024 pool pages, MaxMessage 64 MiB in the
// header) the client takes its limit from the header, a 64 MiB message
// and its echo arrive byte-exact, each in a run of 1024 pages, and one
// byte more is refused before anything is submitted; a default region
// keeps 1,000,000 bytes.
func TestCall_64MiBEchoByteExact(t *testing.T) {
	const mib64 = 64 << 20
	f := newFake(t, shm.Params{SQEntries: 128, CQEntries: 256, ArenaSize: mib64, PoolPages: 1024, MaxMessage: mib64})
	srv := dial(t, f, Options{})
	if err := srv.Bind(99); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, srv, 0, nil)
	cl := dial(t, f, Options{})
	if cl.MaxMessage() != mib64 {
		t.Fatalf("MaxMessage %d, want the header's 64 MiB", cl.MaxMessage())
	}
	msg := pattern(mib64, 5)
	m, err := cl.Call(Addr{IP: netip.AddrFrom4(host), Port: 99}, msg, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Data, msg) {
		t.Fatalf("64 MiB echo differs (%d bytes)", len(m.Data))
	}
	m.Release()
	before := cl.Stats()
	if _, err := cl.Send(Addr{IP: netip.AddrFrom4(host), Port: 99}, make([]byte, mib64+1)); !errors.Is(err, ErrMessageSize) {
		t.Fatalf("Send of 64 MiB + 1: %v, want ErrMessageSize", err)
	}
	if after := cl.Stats(); after != before {
		t.Errorf("a refused Send changed the stats: %+v -> %+v", before, after)
	}
	stop()
	checkNoLeak(t, f, []*Client{cl, srv}, []int{0, 1})

	small := newFake(t, testParams())
	if c := dial(t, small, Options{}); c.MaxMessage() != DefaultMaxMessage {
		t.Fatalf("default region: MaxMessage %d, want %d", c.MaxMessage(), DefaultMaxMessage)
	}
}

// TestCodeError_peerMessageLength: the daemon's refusal of a message too
// long for a kernel-Homa peer is ErrPeerMessageLength.
func TestCodeError_peerMessageLength(t *testing.T) {
	f := newFake(t, testParams())
	f.Script(7, shm.ErrCodePeerMessageLength)
	c := dial(t, f, Options{})
	_, err := c.Call(Addr{IP: netip.AddrFrom4(host), Port: 7}, []byte("x"), 5*time.Second)
	if !errors.Is(err, ErrPeerMessageLength) || !isCode(err, shm.ErrCodePeerMessageLength) {
		t.Fatalf("Call: %v, want ErrPeerMessageLength", err)
	}
}
