package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The Python package's tests, with its daemon round trips run through
// this daemon's hosts: Python workers on both ends (python/tests/
// echo_server.py on 10.0.0.2:99, the test client on 10.0.0.1), numpy
// arrays included when numpy is installed.
func TestPython_workersAgainstTheDaemon(t *testing.T) {
	dpdktest.Need(t)
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		if os.Getenv("HOMA_REQUIRE_DPDK") == "1" {
			t.Fatal("python3 is missing (scripts/setup.sh installs it)")
		}
		t.Skip("python3 is missing")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	p, _, dir := workerPair(t, false, 0)
	sockA := filepath.Join(dir, p.Hosts[0].Addr().String()+".sock")
	sockB := filepath.Join(dir, p.Hosts[1].Addr().String()+".sock")
	env := append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "PYTHONDONTWRITEBYTECODE=1")

	echo := exec.Command(py, filepath.Join(root, "python/tests/echo_server.py"), "--socket", sockB, "--port", "99")
	echo.Env = env
	echo.Stdout, echo.Stderr = os.Stderr, os.Stderr
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Process.Kill(); echo.Wait() })
	time.Sleep(300 * time.Millisecond) // it binds

	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", filepath.Join(root, "python/tests"), "-v")
	// HOMA_SERVER_SOCKET: test_closing.py's servers attach to 10.0.0.2.
	cmd.Env = append(env, "HOMA_SOCKET="+sockA, "HOMA_SERVER_SOCKET="+sockB, "HOMA_PEER=10.0.0.2:99", "HOMA_PEER6=fd00::2:99", "HOMA_RPC_TIMEOUT=30")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	t.Logf("python tests:\n%s", out)
	if err != nil {
		t.Fatalf("python tests failed: %v", err)
	}
	// The daemon round trips must have run, not skipped.
	if m := regexp.MustCompile(`(?m)^test_\w+ \(test_integration\.\w+\.\w+\) \.\.\. skipped`).Find(out); m != nil {
		t.Errorf("daemon round trips skipped: %s", m)
	}
	if !strings.Contains(string(out), "(test_integration.TestDaemonIPv6.test_sizes) ... ok") {
		t.Error("the round trips over IPv6 (TestDaemonIPv6) did not pass")
	}
	if !strings.Contains(string(out), "(test_closing.TestClosingServers.test_replies_survive_the_close) ... ok") {
		t.Error("the closing servers (test_closing) did not pass")
	}
	if !strings.Contains(string(out), "test_integration") {
		t.Error("the daemon round trips (test_integration) did not run")
	}
}
