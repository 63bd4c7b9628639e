package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The NCCL net plugin's conformance harness (nccl/tests) over the demo
// daemon's four hosts, rank r on host r mod 4 (HARNESS_SOCKETS): the
// cases whose messages fit the daemon's (up to 1,000,000 bytes) on the
// v10 table, through the real engine on the ring switch. make -C nccl
// test runs them all on the fake engine.
func TestNCCL_harnessOverTheDaemonsHosts(t *testing.T) {
	dpdktest.Need(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("make", "-s", "-C", filepath.Join(root, "nccl"), "build/libnccl-net-homa.so", "build/harness")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin and its harness: %v\n%s", err, out)
	}
	dir, _ := serveTorchHosts(t)
	var socks []string
	for i := 1; i <= 4; i++ {
		socks = append(socks, filepath.Join(dir, fmt.Sprintf("10.0.0.%d.sock", i)))
	}
	cases := []string{"orders", "pipeline", "inflight", "backpressure", "ring", "listen_reuse", "close_inflight",
		"strangers", "many", "peer_killed", "traffic_class"}
	cmd := exec.Command(filepath.Join(root, "nccl/build/harness"), filepath.Join(root, "nccl/build/libnccl-net-homa.so"), "-v", "10")
	cmd.Args = append(cmd.Args, cases...)
	cmd.Env = append(os.Environ(), "HARNESS_SOCKETS="+strings.Join(socks, ","), "HARNESS_MANY=5000")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the harness: %v", err)
	}
	passed := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "ok ") {
			passed++
		}
	}
	if passed != len(cases) {
		t.Fatalf("%d of %d cases passed", passed, len(cases))
	}
}
