package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// mainEnv makes this test binary homa-dpdk itself: TestMain runs main()
// on the arguments after "--" (the tests that signal a daemon run it so).
const mainEnv = "HOMA_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"homa-dpdk"}, os.Args[i+1:]...)
				break
			}
		}
		if os.Getenv(startedEnv) != "" {
			mainStarted = announceStarted
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A SIGTERM while `run` waits for a link that never comes up (a memif
// server with no peer) stops it at once and cleanly: exit status 0, as a
// SIGTERM after start-up, a log line that names the phase, and neither
// the memif socket nor the workers' socket left behind (issue 32).
func TestRun_signalDuringStartupStopsCleanly(t *testing.T) {
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but DPDK tests need root")
		}
		t.Skip("skipping DPDK test: it needs root (run as root, as CI does)")
	}
	dir := t.TempDir()
	memif, workers := filepath.Join(dir, "memif.sock"), filepath.Join(dir, "workers.sock")
	cfg := filepath.Join(dir, "homa.yaml")
	yaml := fmt.Sprintf(`lcores: [1]
ports:
  - device: net_memif_sig0
    address: 10.0.0.1/24
metrics:
  address: ""
workers:
  socket: %q
`, workers)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	eal := append(dpdk.VirtualDeviceArgs("0-1", dpdk.ProbeMemory(), 512, fmt.Sprintf("homasig%d", os.Getpid())),
		"--vdev", "net_memif_sig0,role=server,id=0,socket="+memif+",socket-abstract=no")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		args := append([]string{"-test.run=^$", "--", "run", "--config", cfg, "--"}, eal...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once the port is up and the link wait has begun: the
		// memif socket is there.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(memif); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%v: the memif socket did not appear within 20 s; output:\n%s", sig, out.String())
			}
		}
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: still running 5 s after the signal; output:\n%s", sig, out.String())
		}
		took := time.Since(start)
		if err != nil {
			t.Errorf("%v: exit %v, want status 0 (as after start-up); output:\n%s", sig, err, out.String())
		}
		if took > 2*time.Second {
			t.Errorf("%v: stopped %v after the signal, want within 2 s", sig, took.Round(time.Millisecond))
		}
		if s := out.String(); !strings.Contains(s, "stopped during start-up") || !strings.Contains(s, "phase=link") {
			t.Errorf("%v: no log line says it stopped during start-up in phase link; output:\n%s", sig, s)
		}
		for _, f := range []string{memif, workers} {
			if _, err := os.Lstat(f); err == nil {
				t.Errorf("%v: %s left behind", sig, f)
			}
		}
	}
}
