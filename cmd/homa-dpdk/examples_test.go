package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The YAML files the repository ships, and how each is shown to work: a
// daemon config passes `config check`, and one that can start on a
// machine without a NIC starts (with its peer where it has one), is up,
// stops on SIGTERM with status 0 and leaves none of its sockets behind.
// A YAML file added to the repository must be listed here.

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// shippedYAML says how the examples' tests treat one YAML file.
type shippedYAML struct {
	// check: `config check` must pass (with checkEdit applied first).
	check bool
	// checkEdit, if not nil, turns the file into what is checked (a
	// placeholder filled in as its deployment does).
	checkEdit func(string) string
	// start, if not nil, starts the example, sees it up and stops it.
	start func(t *testing.T)
	// why the file is not started here, or how it is.
	why string
}

var shipped = map[string]shippedYAML{
	"config/example.yaml": {check: true, start: startExamplePair,
		why: "host 10.0.0.1, a memif server: started with its peer, config/example-peer.yaml, and an RPC between them"},
	"config/example-peer.yaml": {check: true, why: "host 10.0.0.2, the memif client of config/example.yaml: started with it"},
	"config/example-nic.yaml":  {check: true, why: "a real NIC port (PCI 0000:3b:00.0): config check only"},
	"deploy/k8s/homa.yaml": {check: true, checkEdit: func(s string) string { return strings.ReplaceAll(s, "@PCI@", "0000:3b:02.1") },
		why: "an SR-IOV VF whose PCI address start.sh fills in (@PCI@): config check only"},
	"deploy/container/homa.yaml": {check: true, start: startContainerExample,
		why: "net_af_packet on eth0: started in a network namespace whose eth0 is a veth"},
	"demo/demo.yaml": {check: true, start: startDemo,
		why: "the embedded config of homa-dpdk demo, on the ring pair the demo makes: started by homa-dpdk demo"},
	"deploy/k8s/kustomization.yaml":      {why: "a Kubernetes manifest, not a daemon config"},
	"deploy/k8s/pod.yaml":                {why: "a Kubernetes manifest, not a daemon config"},
	"deploy/k8s/sriov-network.yaml":      {why: "a Kubernetes manifest, not a daemon config"},
	"deploy/k8s/sriovdp-config.yaml":     {why: "a Kubernetes manifest, not a daemon config"},
	"deploy/prometheus/alerts.yaml":      {why: "Prometheus alerting rules"},
	"deploy/prometheus/alerts_test.yaml": {why: "promtool's tests of the alerting rules"},
}

// Every YAML file in the repository is in shipped, so none is added
// without a say in how it is checked.
func TestExamples_everyYAMLFileIsListed(t *testing.T) {
	var found []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(name, ".") || name == "results" || name == "node_modules") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(name); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			rel, _ := filepath.Rel(repoRoot, path)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if _, ok := shipped[f]; !ok {
			t.Errorf("%s is not in shipped (examples_test.go): say whether config check passes on it and how it starts", f)
		}
	}
	for f := range shipped {
		if !slices.Contains(found, f) {
			t.Errorf("shipped lists %s, which is not in the repository", f)
		}
	}
}

// Every shipped daemon config passes config check.
func TestExamples_configCheck(t *testing.T) {
	for f, s := range shipped {
		if !s.check {
			continue
		}
		t.Run(f, func(t *testing.T) {
			path := filepath.Join(repoRoot, f)
			if s.checkEdit != nil {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				path = filepath.Join(t.TempDir(), filepath.Base(f))
				if err := os.WriteFile(path, []byte(s.checkEdit(string(b))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := runArgs(t, "config", "check", path); err != nil {
				t.Errorf("config check %s: %v", f, err)
			}
		})
	}
}

// Every shipped example that can start without a NIC starts, comes up,
// stops on SIGTERM with status 0 and leaves nothing of its own behind;
// one at a time (each is a DPDK process).
func TestExamples_startAndStopCleanly(t *testing.T) {
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but DPDK tests need root")
		}
		t.Skip("skipping DPDK test: it needs root (run as root, as CI does)")
	}
	names := make([]string, 0, len(shipped))
	for f := range shipped {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if s := shipped[f]; s.start != nil {
			t.Run(f, s.start)
		}
	}
}

// startExamplePair runs config/example.yaml and its peer as two
// `homa-dpdk run` processes, as the files say (their /run/homa-dpdk
// sockets in a directory of the test's own), sends an RPC from a worker
// of 10.0.0.1 to a worker of 10.0.0.2, stops both with SIGTERM and checks
// that no socket is left: the memif server's, the workers'.
func startExamplePair(t *testing.T) {
	dir := t.TempDir()
	server := startMain(t, "", "run", "--config", localCopy(t, "config/example.yaml", dir))
	peer := startMain(t, "", "run", "--config", localCopy(t, "config/example-peer.yaml", dir))
	server.waitFor(t, "polling loop launched", 30*time.Second, peer)
	peer.waitFor(t, "polling loop launched", 30*time.Second, server)

	echo, err := client.Dial(filepath.Join(dir, "workers-peer.sock"), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Bind(99); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		m, err := echo.Receive(10 * time.Second)
		if err == nil {
			err = echo.Reply(m, m.Data)
		}
		served <- err
	}()
	cli, err := client.Dial(filepath.Join(dir, "workers.sock"), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Call(client.Addr{IP: netip.MustParseAddr("10.0.0.2"), Port: 99}, []byte("hello, example"), 10*time.Second)
	if err != nil {
		t.Fatalf("RPC from 10.0.0.1 to 10.0.0.2:99: %v\nserver:\n%s\npeer:\n%s", err, server.out.String(), peer.out.String())
	}
	if string(resp.Data) != "hello, example" {
		t.Errorf("the echo answered %q", resp.Data)
	}
	if err := <-served; err != nil {
		t.Errorf("the echo worker: %v", err)
	}
	cli.Close()
	echo.Close()

	server.stop(t, syscall.SIGTERM)
	peer.stop(t, syscall.SIGTERM)
	noneLeft(t, dir)
}

// startContainerExample runs deploy/container/homa.yaml as the image
// does, on eth0 — here a veth in a network namespace of the test's own,
// whose other end is up beside it — with its worker socket in a directory
// of the test's own.
func startContainerExample(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		if dpdktest.Required() {
			t.Fatal("iproute2 is missing (scripts/setup.sh installs it)")
		}
		t.Skip("iproute2 is missing")
	}
	ns := fmt.Sprintf("hx%d", os.Getpid()%100000)
	ipCmd(t, "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ipCmd(t, "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", "peer0", "netns", ns)
	for _, l := range []string{"eth0", "peer0", "lo"} {
		ipCmd(t, "-n", ns, "link", "set", l, "up")
	}
	dir := t.TempDir()
	d := startMain(t, ns, "run", "--config", localCopy(t, "deploy/container/homa.yaml", dir))
	d.waitFor(t, "polling loop launched", 30*time.Second)
	d.stop(t, syscall.SIGTERM)
	noneLeft(t, dir)
}

// startDemo runs homa-dpdk demo, briefly: demo/demo.yaml is its config.
func startDemo(t *testing.T) {
	d := startMain(t, "", "demo", "--seconds", "1", "--sizes", "100,10000")
	d.waitFor(t, "demo: Homa hosts", 30*time.Second)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("demo: %v; output:\n%s", err, d.out.String())
	}
}

// startDemoWorkers runs homa-dpdk demo --workers DIR (its config built
// in Go, demo/workers.go) until SIGTERM: no socket is left in DIR.
func startDemoWorkers(t *testing.T) {
	dir := t.TempDir()
	d := startMain(t, "", "demo", "--workers", dir)
	d.waitFor(t, "workers attach at", 30*time.Second)
	d.stop(t, syscall.SIGTERM)
	noneLeft(t, dir)
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// localCopy writes the shipped config f into dir with its /run/homa-dpdk
// paths (sockets) in dir instead, so that the test neither meets nor
// leaves anything there, and returns the copy's path. Where the machine
// has no free hugepages, EAL's --in-memory is replaced as the examples'
// comments say: --no-huge, -m 512 and a file prefix of its own.
func localCopy(t *testing.T, f, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, f))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/run/homa-dpdk/", dir+"/")
	if mem := dpdk.ProbeMemory(); !mem.UseHugepages() {
		prefix := strings.TrimSuffix(filepath.Base(f), ".yaml") + fmt.Sprint(os.Getpid())
		s = strings.ReplaceAll(s, `"--in-memory"`, `"--no-huge", "-m", "512", "--file-prefix", "`+prefix+`"`)
		t.Logf("%s: no hugepages (%s): --no-huge -m 512 --file-prefix %s instead of --in-memory", f, mem.Reason, prefix)
		t.Cleanup(func() { os.RemoveAll("/var/run/dpdk/" + prefix) })
	}
	path := filepath.Join(dir, filepath.Base(f))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// noneLeft fails the test for anything but the config copies in dir:
// sockets a stopped daemon left behind.
func noneLeft(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			t.Errorf("%s left behind", filepath.Join(dir, e.Name()))
		}
	}
}

// mainProc is this test binary running main (homa-dpdk) in a child.
type mainProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer // its stdout and stderr
	done chan error  // its exit, once
	err  error
	mu   sync.Mutex
}

// startMain runs homa-dpdk with args in a child (in network namespace ns
// unless it is ""), killed at the test's end if it still runs.
func startMain(t *testing.T, ns string, args ...string) *mainProc {
	t.Helper()
	argv := append([]string{os.Args[0], "-test.run=^$", "--"}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	p := &mainProc{cmd: exec.Command(argv[0], argv[1:]...), out: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), mainEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.wait(0) == errRunning {
			p.cmd.Process.Kill()
			p.wait(10 * time.Second)
		}
	})
	return p
}

var errRunning = fmt.Errorf("still running")

// wait waits up to timeout for the child's exit and returns its error,
// or errRunning.
func (p *mainProc) wait(timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return p.err
	}
	select {
	case p.err = <-p.done:
		p.done = nil
		return p.err
	case <-time.After(timeout):
		return errRunning
	}
}

// waitFor waits for text in the child's output; it fails the test if
// the child exits first or the text does not come within timeout, with
// the output of the child and of others (its peers).
func (p *mainProc) waitFor(t *testing.T, text string, timeout time.Duration, others ...*mainProc) {
	t.Helper()
	outputs := func() string {
		s := fmt.Sprintf("output:\n%s", p.out.String())
		for _, o := range others {
			s += fmt.Sprintf("\noutput of %v:\n%s", o.cmd.Args, o.out.String())
		}
		return s
	}
	for deadline := time.Now().Add(timeout); !strings.Contains(p.out.String(), text); {
		if err := p.wait(10 * time.Millisecond); err != errRunning {
			t.Fatalf("%v exited (%v) before it said %q; %s", p.cmd.Args, err, text, outputs())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not say %q within %v; %s", p.cmd.Args, text, timeout, outputs())
		}
	}
}

// stop signals the child and wants it to exit with status 0 within 10 s.
func (p *mainProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	switch err := p.wait(10 * time.Second); err {
	case nil:
	case errRunning:
		t.Fatalf("%v still runs 10 s after %v; output:\n%s", p.cmd.Args, sig, p.out.String())
	default:
		t.Errorf("%v: exit %v after %v, want status 0; output:\n%s", p.cmd.Args, err, sig, p.out.String())
	}
}

// syncBuffer is a bytes.Buffer that a child writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
