package daemon

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/config"
)

func TestMemifOf_argumentsFromTheDeviceOrEAL(t *testing.T) {
	spec := &config.Spec{
		EAL: []string{"-l", "0,1", "--vdev", "net_memif_a,role=client,socket=/tmp/a.sock,socket-abstract=no",
			"--vdev=net_memif_b,id=1", "--vdev", "net_ring0"},
		Ports: []config.PortSpec{{Device: "net_memif_a"}, {Device: "net_memif_b"},
			{Device: "net_memif_c,role=server,socket=/tmp/c.sock,socket-abstract=no"}, {Device: "net_ring0"}},
	}
	want := []memifDevice{
		{role: "client", socket: "/tmp/a.sock"},
		{role: "server", socket: "/run/memif.sock", abstract: true},
		{role: "server", socket: "/tmp/c.sock"},
	}
	for i, w := range want {
		if got, ok := memifOf(spec, i); !ok || got != w {
			t.Errorf("port %d: %+v %v, want %+v", i, got, ok, w)
		}
	}
	if _, ok := memifOf(spec, 3); ok {
		t.Error("net_ring0 taken for a memif port")
	}
	if got := memifServerSockets(spec); !slices.Equal(got, []string{"/tmp/c.sock"}) {
		t.Errorf("server sockets in files: %v, want [/tmp/c.sock]", got)
	}
}

// A socket file nobody listens on (its memif server was killed) is
// removed; a live one and other files stay.
func TestRemoveStaleSocket_onlyWhenNobodyListens(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unixpacket", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if removeStaleSocket(live) {
		t.Error("removed the socket of a listening server")
	}
	stale := filepath.Join(dir, "stale.sock")
	ln2, err := net.Listen("unixpacket", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln2.(*net.UnixListener).SetUnlinkOnClose(false) // as a killed server leaves it
	ln2.Close()
	if !removeStaleSocket(stale) {
		t.Error("kept a socket nobody listens on")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale socket still there: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if removeStaleSocket(file) || removeStaleSocket(filepath.Join(dir, "none")) {
		t.Error("removed something that is not a socket")
	}
}
