package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// testNet is a link made of network namespaces: a bridge in its own
// namespace and one veth per host into it.
type testNet struct {
	t      *testing.T
	prefix string
	bridge string // namespace holding the bridge
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		if dpdktest.Required() {
			t.Fatal("iproute2 is missing (scripts/setup.sh installs it)")
		}
		t.Skip("iproute2 is missing")
	}
	n := &testNet{t: t, prefix: fmt.Sprintf("h%d", os.Getpid()%100000)}
	n.bridge = n.prefix + "sw"
	sh(t, "ip", "netns", "add", n.bridge)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.bridge).Run() })
	sh(t, "ip", "-n", n.bridge, "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "-n", n.bridge, "link", "set", "br0", "up")
	return n
}

// addHost makes namespace <prefix><name> with interface eth0 on the bridge;
// addr (CIDR) is configured on it for a Linux host, or left off for a
// homa-dpdk host, which owns the interface through net_af_packet.
func (n *testNet) addHost(name, addr string) string {
	t := n.t
	ns := n.prefix + name
	sh(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	peer := ns + "p"
	sh(t, "ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", n.bridge)
	sh(t, "ip", "-n", n.bridge, "link", "set", peer, "master", "br0", "up")
	sh(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
	if addr != "" {
		sh(t, "ip", "-n", ns, "addr", "add", addr, "dev", "eth0")
	}
	return ns
}

// startDaemonProcess runs `homa-dpdk run` in namespace ns on its eth0.
func startDaemonProcess(t *testing.T, bin, ns, addr string, lcore int) *exec.Cmd {
	t.Helper()
	return startDaemonProcess6(t, bin, ns, addr, "", lcore)
}

// startDaemonProcess6 is startDaemonProcess with an IPv6 address (addr6,
// CIDR) on the port too, when it is not "".
func startDaemonProcess6(t *testing.T, bin, ns, addr, addr6 string, lcore int) *exec.Cmd {
	t.Helper()
	if addr6 != "" {
		addr += "\n    address6: " + addr6
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`eal: ["-l", "0,%d", "--main-lcore", "0", "--no-pci", "--no-huge", "-m", "256", "--file-prefix", "%s", "--vdev", "net_af_packet0,iface=eth0"]
lcores: [%d]
ports:
  - device: net_af_packet0
    address: %s
metrics:
  address: ""
runtime:
  idle: adaptive
workers:
  socket: %s
`, lcore, ns, lcore, addr, filepath.Join(dir, "workers.sock"))
	path := filepath.Join(dir, "homa.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, bin, "run", "--config", path)
	out, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("daemon in %s:\n%s", ns, b)
		}
	})
	return cmd
}

// buildDaemon builds the homa-dpdk program once for the test.
func buildDaemon(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "homa-dpdk")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/homa-dpdk").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestDaemon_pingFromLinuxHostInNamespace: two daemons on net_af_packet,
// each in its own namespace on one bridged link, answer ARP and ping from
// a Linux host in a third namespace.
func TestDaemon_pingFromLinuxHostInNamespace(t *testing.T) {
	dpdktest.Need(t)
	if _, err := exec.LookPath("ping"); err != nil {
		if dpdktest.Required() {
			t.Fatal("ping is missing (scripts/setup.sh installs iputils-ping)")
		}
		t.Skip("ping is missing")
	}
	bin := buildDaemon(t)
	n := newTestNet(t)
	nsA := n.addHost("a", "")
	nsB := n.addHost("b", "")
	nsC := n.addHost("c", "10.77.0.3/24")
	startDaemonProcess(t, bin, nsA, "10.77.0.1/24", 1)
	startDaemonProcess(t, bin, nsB, "10.77.0.2/24", 1)
	for _, ip := range []string{"10.77.0.1", "10.77.0.2"} {
		if out, err := pingUntilUp(nsC, ip); err != nil || !strings.Contains(string(out), "3 received") {
			t.Errorf("ping %s from a Linux host: %v\n%s", ip, err, out)
		}
	}
}

// pingUntilUp pings ip three times from namespace ns (ping -6 for an
// IPv6 address), trying again for up to 15 s while a daemon starts.
func pingUntilUp(ns, ip string) (out []byte, err error) {
	args := []string{"netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "1", ip}
	if strings.Contains(ip, ":") {
		args = append(args[:4], append([]string{"-6"}, args[4:]...)...)
	}
	for try := 0; try < 30; try++ {
		if out, err = exec.Command("ip", args...).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return out, err
}

// TestDaemon_ping6FromLinuxHostInNamespace: a daemon on net_af_packet
// with an IPv6 address beside its IPv4 one, and one whose port is IPv6
// only, answer a Linux host's neighbour discovery and ping -6; the Linux
// host's neighbour table then holds their MACs.
func TestDaemon_ping6FromLinuxHostInNamespace(t *testing.T) {
	dpdktest.Need(t)
	if _, err := exec.LookPath("ping"); err != nil {
		if dpdktest.Required() {
			t.Fatal("ping is missing (scripts/setup.sh installs iputils-ping)")
		}
		t.Skip("ping is missing")
	}
	bin := buildDaemon(t)
	n := newTestNet(t)
	nsA := n.addHost("a", "")
	nsB := n.addHost("b", "")
	nsC := n.addHost("c", "")
	sh(t, "ip", "-n", nsC, "-6", "addr", "add", "2001:db8:77::3/64", "dev", "eth0", "nodad")
	startDaemonProcess6(t, bin, nsA, "10.77.0.1/24", "2001:db8:77::1/64", 1)
	startDaemonProcess(t, bin, nsB, "2001:db8:77::2/64", 1) // an IPv6-only port
	for _, ip := range []string{"2001:db8:77::1", "2001:db8:77::2"} {
		out, err := pingUntilUp(nsC, ip)
		if err != nil || !strings.Contains(string(out), "3 received") {
			t.Fatalf("ping -6 %s from a Linux host: %v\n%s", ip, err, out)
		}
		neigh, _ := exec.Command("ip", "-n", nsC, "-6", "neigh", "show", ip).CombinedOutput()
		if !strings.Contains(string(neigh), "lladdr") {
			t.Errorf("the Linux host did not learn %s's link address: %q", ip, neigh)
		}
		t.Logf("%s%s", out, neigh)
	}
}

// TestDaemon_rpcsBetweenNamespacesOverVeth: two daemons on net_af_packet in
// two namespaces on one bridged link find each other by ARP and exchange
// RPCs byte-exact, while a Linux host in a third namespace pings both.
func TestDaemon_rpcsBetweenNamespacesOverVeth(t *testing.T) {
	dpdktest.Need(t)
	if _, err := exec.LookPath("ping"); err != nil {
		if dpdktest.Required() {
			t.Fatal("ping is missing (scripts/setup.sh installs iputils-ping)")
		}
		t.Skip("ping is missing")
	}
	n := newTestNet(t)
	nsA := n.addHost("a", "")
	nsB := n.addHost("b", "")
	nsC := n.addHost("c", "10.0.0.3/24")
	vdev := "HOMA_TEST_VDEV=net_af_packet_h,iface=eth0"
	server := startDaemonChild(t, nsA, "server", vdev, 0, 0)
	server.expect(t, "up", 20*time.Second)
	client := startDaemonChild(t, nsB, "client", vdev, 300, 0)
	client.expect(t, "up", 20*time.Second)
	for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		out, err := exec.Command("ip", "netns", "exec", nsC, "ping", "-c", "2", "-i", "0.2", "-W", "2", ip).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "2 received") {
			t.Errorf("ping %s from the Linux host: %v\n%s", ip, err, out)
		}
	}
	t.Log(client.expect(t, "done", 120*time.Second))
	client.stdin.Write([]byte("stop\n"))
	server.stdin.Write([]byte("stop\n"))
	client.expect(t, "quiet", 10*time.Second)
	server.expect(t, "quiet", 10*time.Second)
	server.stdin.Close()
	client.stdin.Close()
	for name, p := range map[string]*memifProc{"server": server, "client": client} {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
