package tcppeer

import (
	"bytes"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The TCP peer echoes and acknowledges 8 MB and 64 MB messages byte for
// byte (a 4-byte length prefix, the top bit the flag), and streams them.
func TestTCP_largeMessages(t *testing.T) {
	srv, err := StartServer("", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial("", srv.Addr)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	for _, size := range []int{8_000_000, 64_000_000} {
		req, resp := Message(size, false), make([]byte, 4+size)
		if err := RPC(c, req, resp); err != nil {
			t.Fatalf("%s: %v", perf.SizeName(size), err)
		}
		if !bytes.Equal(req, resp) {
			t.Fatalf("%s: the echo differs", perf.SizeName(size))
		}
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
	Message(maxTCPMessage+1, false)
}
