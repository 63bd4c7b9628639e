package daemon

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/config"
)

func TestMemifOf_argumentsFromTheDeviceOrEAL(t *testing.T) {
	spec := &config.Spec{
		EAL: []string{"-l", "0,1", "--vdev", "net_memif_a,role=client,socket=/tmp/a.sock,socket-abstract=no",
			"--vdev=net_memif_b,id=1", "--vdev", "net_ring0"},
		Ports: []config.PortSpec{{Device: "net_memif_a"}, {Device: "net_memif_b"},
			{Device: "net_memif_c,role=server,socket=/tmp/c.sock,socket-abstract=no,bsize=9216"}, {Device: "net_ring0"}},
	}
	want := []memifDevice{
		{role: "client", socket: "/tmp/a.sock", bsize: 2048},
		{role: "server", socket: "/run/memif.sock", abstract: true, bsize: 2048},
		{role: "server", socket: "/tmp/c.sock", bsize: 9216},
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

// The directories of memif sockets that are files are made before EAL
// makes the ports (memif refuses a missing one: "Invalid socket
// directory"), clients' too; abstract sockets have none.
func TestMakeMemifSocketDirs_serversAndClients(t *testing.T) {
	dir := t.TempDir()
	spec := &config.Spec{
		EAL: []string{"--vdev", "net_memif_a,role=client,socket=" + dir + "/a/memif.sock,socket-abstract=no", "--vdev", "net_memif_b,socket=/x/y.sock"},
		Ports: []config.PortSpec{{Device: "net_memif_a"}, {Device: "net_memif_b"},
			{Device: "net_memif_c,role=server,socket=" + dir + "/c/d/memif.sock,socket-abstract=no"}},
	}
	if err := makeMemifSocketDirs(spec); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "c/d"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if _, err := os.Stat("/x"); err == nil {
		t.Error("made the directory of an abstract socket")
	}
	spec.Ports[2].Device = "net_memif_c,socket=" + dir + "/c/d/memif.sock/under,socket-abstract=no"
	os.WriteFile(filepath.Join(dir, "c/d/memif.sock"), nil, 0o644)
	if err := makeMemifSocketDirs(spec); err == nil || !strings.Contains(err.Error(), "memif socket "+dir+"/c/d/memif.sock/under: making its directory") {
		t.Errorf("a directory that cannot be made: %v", err)
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

// A port's own buffers must hold a frame of its MTU: net_memif's bsize,
// net_af_packet's framesz, blocksz, mbufs and kernel interface (above
// 1500); each refusal names the argument to give.
func TestCheckFrameBuffers_byDevice(t *testing.T) {
	ifMTU := func(iface string) (int, error) {
		if iface == "jumbo0" {
			return 9000, nil
		}
		return 1500, nil
	}
	for _, c := range []struct {
		device string
		mtu    int
		want   string // "" for none
	}{
		{"net_memif0,role=client,socket=/tmp/a.sock", 1500, ""},
		{"net_memif0,role=client,socket=/tmp/a.sock", 9000, "give it bsize=9216"},
		{"net_memif0,role=client,socket=/tmp/a.sock,bsize=9216", 9000, ""},
		{"net_memif0,bsize=9000", 9000, "has bsize 9000"},
		{"net_af_packet0,iface=eth0", 1500, ""},
		{"net_af_packet0,iface=jumbo0", 9000, "give it framesz=9216,blocksz=36864"},
		{"net_af_packet0,iface=jumbo0,framesz=9216,blocksz=12288", 9000, "blocksz 12288"},
		{"net_af_packet0,iface=jumbo0,framesz=9088,blocksz=12288", 9000, "framesz 9088"}, // framesz does not divide blocksz
		{"net_af_packet0,iface=jumbo0,framesz=9216,blocksz=36864", 9000, ""},
		{"net_af_packet0,iface=eth0,framesz=9216,blocksz=36864", 9000, "ip link set dev eth0 mtu 9000"},
		{"net_af_packet0,iface=jumbo0,framesz=16384,blocksz=16384", 9000, "needs mbufs of 16352 bytes"},
		{"net_ring0", 9000, ""},
	} {
		spec := &config.Spec{Ports: []config.PortSpec{{Device: c.device, MTU: c.mtu}}}
		err := checkFrameBuffers(spec, 0, ifMTU)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s at MTU %d: %v, want %q", c.device, c.mtu, err, c.want)
		}
	}
}
