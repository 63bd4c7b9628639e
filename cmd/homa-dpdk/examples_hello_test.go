package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// TestExamples_helloAgainstTheDemo builds the smallest workers as the
// README says (native/examples/hello.c with `make -C native examples`,
// examples/hello with go build) and runs each against
// `homa-dpdk demo --workers`, whose 10.0.0.2 has an echo worker on port
// 99: each must print the request echoed, and the C one, sent to a port
// nobody bound, must fail with libhoma's name for the error.
func TestExamples_helloAgainstTheDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but DPDK tests need root")
		}
		t.Skip("skipping DPDK test: it needs root (run as root, as CI does)")
	}
	if out, err := exec.Command("make", "-s", "-C", filepath.Join(repoRoot, "native"), "examples").CombinedOutput(); err != nil {
		t.Fatalf("make -C native examples: %v\n%s", err, out)
	}
	cHello, err := filepath.Abs(filepath.Join(repoRoot, "native/build/examples/hello"))
	if err != nil {
		t.Fatal(err)
	}
	goHello := filepath.Join(t.TempDir(), "hello")
	build := exec.Command(goTool(), "build", "-o", goHello, "./examples/hello")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/hello: %v\n%s", err, out)
	}

	dir := t.TempDir()
	d := startMain(t, "", "demo", "--workers", dir)
	d.waitFor(t, "workers attach at", 30*time.Second)
	echo, err := client.Dial(filepath.Join(dir, "10.0.0.2.sock"), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Bind(99); err != nil {
		t.Fatal(err)
	}
	stop, served := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				served <- nil
				return
			default:
			}
			m, err := echo.Receive(100 * time.Millisecond)
			if errors.Is(err, client.ErrWaitTimeout) {
				continue
			}
			if err == nil {
				err = echo.Reply(m, m.Data)
				m.Release()
			}
			if err != nil {
				served <- err
				return
			}
		}
	}()

	sock := filepath.Join(dir, "10.0.0.1.sock")
	const want = "10.0.0.2:99 answered \"hello\"\n"
	for _, argv := range [][]string{
		{cHello, sock, "10.0.0.2", "99"},
		{goHello, "-socket", sock, "-to", "10.0.0.2:99"},
	} {
		out, errOut, err := runBounded(30*time.Second, argv...)
		if err != nil || out != want {
			t.Errorf("%s: printed %q (stderr %q, %v), want %q; demo:\n%s", strings.Join(argv, " "), out, errOut, err, want, d.out.String())
		}
	}
	// Port 98 has no worker: 10.0.0.2 answers port unreachable, which the
	// C example prints in libhoma's words, and exits 1.
	out, errOut, err := runBounded(30*time.Second, cHello, sock, "10.0.0.2", "98")
	var exit *exec.ExitError
	if wantErr := "hello: 10.0.0.2:98: port unreachable\n"; !errors.As(err, &exit) || exit.ExitCode() != 1 || out != "" || errOut != wantErr {
		t.Errorf("hello to an unbound port: %v, stdout %q, stderr %q; want exit status 1 and %q", err, out, errOut, wantErr)
	}

	close(stop)
	if err := <-served; err != nil {
		t.Errorf("the echo worker: %v", err)
	}
	echo.Close()
	d.stop(t, syscall.SIGTERM)
	noneLeft(t, dir)
}

// runBounded runs argv and returns its stdout and stderr; it kills it
// after timeout.
func runBounded(timeout time.Duration, argv ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = &out, &errOut
	c.WaitDelay = time.Second
	if err := c.Start(); err != nil {
		return "", "", err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return out.String(), errOut.String(), err
	case <-time.After(timeout):
		c.Process.Kill()
		<-done
		return out.String(), errOut.String(), fmt.Errorf("still running after %v", timeout)
	}
}

// goTool is the go command: the one on PATH, else where setup installs it.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
