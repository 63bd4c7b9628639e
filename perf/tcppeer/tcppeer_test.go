package tcppeer

import (
	"bytes"
	"net"
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

// Serve dials as many connections as asked to a server it starts on
// loopback, and closes both after fn; on each, Ask's request is answered
// with the acknowledgement and RPC's with the echo.
func TestServe_askAndEcho(t *testing.T) {
	p := Path{Name: "tcp-loopback", Listen: "127.0.0.1:0"}
	err := Serve(p, 2, func(cs []*net.TCPConn) error {
		if len(cs) != 2 {
			t.Fatalf("%d connections", len(cs))
		}
		buf := make([]byte, 4+1000)
		for _, size := range []int{1, 1000} {
			if err := Ask(cs[1], buf, size); err != nil {
				return err
			}
		}
		req, resp := Message(100, false), make([]byte, 104)
		if err := RPC(cs[0], req, resp); err != nil || string(resp) != string(req) {
			t.Errorf("echo: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(Path{Name: "x", Listen: "256.0.0.1:0"}, 1, func([]*net.TCPConn) error { return nil }); err == nil {
		t.Error("a server on no address served")
	}
}
