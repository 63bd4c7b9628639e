package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/rs/zerolog"
)

// ports[].mac on a net_memif port, which cannot change its MAC, names the
// vdev argument that gives it (mac=), not only ethdev's "Operation not
// supported"; the port and its socket are gone after the failed start.
func TestStart_memifMACNamesItsArgument(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	spec, err := config.Load(config.Source{YAML: fmt.Sprintf(`lcores: [1]
ports:
  - device: "net_memif_mac0,role=server,id=0,socket=%s,socket-abstract=no"
    address: 10.0.0.1/24
    mac: "02:00:0a:00:00:01"
metrics:
  address: ""
workers:
  enabled: false
`, sock)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(spec, zerolog.Nop(), Options{SkipEAL: true})
	if d != nil {
		d.Stop()
		t.Fatal("started")
	}
	for _, want := range []string{"start-up phase ports", "ports[0].mac", "net_memif cannot change its MAC",
		"(net_memif_mac0,...,mac=02:00:0a:00:00:01)", "leave ports[0].mac empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("%s left behind", sock)
	}
}

// A memif server socket on which a server listens already (the same
// config run twice) is refused before EAL, by Preflight (config check
// too), with the socket named; a stale one, where nobody listens, is not.
func TestPreflight_memifSocketInUse(t *testing.T) {
	dir := t.TempDir()
	live, stale := filepath.Join(dir, "live.sock"), filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unixpacket", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln2, err := net.Listen("unixpacket", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln2.(*net.UnixListener).SetUnlinkOnClose(false) // as a killed server leaves it
	ln2.Close()
	load := func(sock string) *config.Spec {
		t.Helper()
		spec, err := config.Load(config.Source{YAML: fmt.Sprintf(`eal: ["--vdev", "net_memif0,role=server,socket=%s,socket-abstract=no"]
ports:
  - device: net_memif0
    address: 10.0.0.1/24
`, sock)})
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	err = Preflight(load(live))
	if err == nil || !strings.Contains(err.Error(), "memif server socket "+live+": a memif server listens on it already") {
		t.Errorf("in use: %v", err)
	}
	if err := Preflight(load(stale)); err != nil {
		t.Errorf("stale: %v", err)
	}
	if err := Preflight(load(filepath.Join(dir, "none.sock"))); err != nil {
		t.Errorf("none: %v", err)
	}
}
