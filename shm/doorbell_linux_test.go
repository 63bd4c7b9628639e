package shm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A server with a doorbell says so in the header and hands its eventfd to a
// worker that asks, once; what the worker writes there, the daemon reads.
// A server without one offers none.
func TestControl_doorbellOnRequest(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the credential check is tested as root")
	}
	bell, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(bell)
	path := filepath.Join(t.TempDir(), "workers.sock")
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), Doorbell: bell})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Layout.Features&FeatureDoorbell == 0 || a.Doorbell != -1 {
		t.Fatalf("features %#x, doorbell %d: want FeatureDoorbell offered, not yet given", a.Layout.Features, a.Doorbell)
	}
	if err := a.AskDoorbell(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(a.Doorbell, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	var got [8]byte
	if n, err := unix.Read(bell, got[:]); n != 8 || err != nil || got[0] != 1 {
		t.Fatalf("the daemon's side read %d bytes %v (%v), want the worker's 1", n, got, err)
	}
	// A second request is refused; the session goes on.
	a.conn.Write([]byte(DoorbellRequest + "bogus\n"))
	a.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	var text string
	for len(text) < len("error the doorbell was given already\nerror unknown request\n") {
		n, err := a.conn.Read(buf)
		if err != nil {
			t.Fatalf("after %q: %v", text, err)
		}
		text += string(buf[:n])
	}
	if text != "error the doorbell was given already\nerror unknown request\n" {
		t.Errorf("answers %q", text)
	}

	plain := filepath.Join(t.TempDir(), "plain.sock")
	srv2, err := Listen(ServerConfig{Path: plain, Params: controlParams()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	b, err := Dial(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Layout.Features&FeatureDoorbell != 0 || b.AskDoorbell() == nil {
		t.Errorf("a server without a doorbell offers one (features %#x)", b.Layout.Features)
	}
}
