package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// startedEnv makes the child announce on its fd 3, with a line, that main
// has caught the stop signals (mainStarted): the moments of the loop tests
// count from there.
const startedEnv = "HOMA_TEST_MAIN_STARTED_FD"

// announceStarted is mainStarted in a child that startedEnv asks it of.
func announceStarted() {
	f := os.NewFile(3, "started")
	fmt.Fprintln(f, "main started")
	f.Close()
}

// signalMoments are when the loop tests send their one signal: so long
// after main announced it has started (0: at once, the flags not yet
// parsed), or once the command is up (up: its sockets are there).
var signalMoments = []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 400 * time.Millisecond, time.Second, up}

// up is the moment "once the command is up".
const up = -1

// stopBound is how long a run may take to exit after its signal: far
// more than a stop takes (EAL's start-up finishes first), so that only a
// signal that was lost or not acted on runs into it.
const stopBound = 30 * time.Second

// signalRun is one run of a loop test: the command, the signal, the
// moment it was sent, and what came of it.
type signalRun struct {
	sig     syscall.Signal
	ignored bool // started with SIGINT ignored, as a script's `cmd &` starts it
	moment  time.Duration
	toMain  time.Duration // from the start to main's announcement
	err     error         // the exit: nil is status 0
	out     string
	left    []string // sockets it left behind
}

func (r signalRun) String() string {
	m := "once up"
	if r.moment != up {
		m = fmt.Sprintf("%v after main started", r.moment)
	}
	how := ""
	if r.ignored {
		how = " (started with SIGINT ignored)"
	}
	return fmt.Sprintf("%v %s%s", r.sig, m, how)
}

// runAndSignal starts homa-dpdk with args (this test binary running
// main), sends sig at moment (isUp tells when it is up), and waits up to
// stopBound for its exit. socks are the files that must be gone then.
func runAndSignal(t *testing.T, sig syscall.Signal, ignored bool, moment time.Duration, isUp func(out string) bool, socks []string, args ...string) signalRun {
	t.Helper()
	r := signalRun{sig: sig, ignored: ignored, moment: moment}
	argv := append([]string{os.Args[0], "-test.run=^$", "--"}, args...)
	if ignored {
		// As `cmd &` in a script: SIGINT is ignored when it starts.
		argv = append([]string{"/bin/sh", "-c", `trap '' INT; exec "$0" "$@"`}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", startedEnv+"=3")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{pw}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { // a run that outlived its bound
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	pr.Close()
	r.toMain = time.Since(start)
	if line != "main started\n" {
		r.err = fmt.Errorf("main did not announce its start (%q)", line)
		r.out = out.String()
		return r
	}
	if moment == up {
		for deadline := time.Now().Add(stopBound); !isUp(out.String()); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				r.err, r.out = fmt.Errorf("not up within %v", stopBound), out.String()
				return r
			}
		}
	} else {
		time.Sleep(moment)
	}
	cmd.Process.Signal(sig)
	select {
	case r.err = <-done:
	case <-time.After(stopBound):
		cmd.Process.Kill()
		<-done
		r.err = fmt.Errorf("still running %v after the signal: killed", stopBound)
	}
	r.out = out.String()
	for _, s := range socks {
		if _, err := os.Lstat(s); err == nil {
			r.left = append(r.left, s)
		}
	}
	return r
}

// checkRuns fails the test with every run that did not stop cleanly: exit
// status 0, one of want in its output and no socket left.
func checkRuns(t *testing.T, runs []signalRun, want ...string) {
	t.Helper()
	failed := 0
	for _, r := range runs {
		var why []string
		if r.err != nil {
			why = append(why, fmt.Sprintf("exit %v, want status 0", r.err))
		}
		if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(r.out, w) }) {
			why = append(why, fmt.Sprintf("no line says %q", want))
		}
		if len(r.left) > 0 {
			why = append(why, fmt.Sprintf("left %v behind", r.left))
		}
		if len(why) > 0 {
			failed++
			t.Errorf("%v: %s; output:\n%s", r, strings.Join(why, "; "), r.out)
		} else {
			t.Logf("%v: stopped cleanly (main started %v after the process)", r, r.toMain.Round(time.Millisecond))
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d runs did not stop cleanly on their one signal", failed, len(runs))
	}
}

// One SIGINT stops `demo --workers` cleanly whenever it comes: at main's
// first instant (the flags not yet parsed), while EAL comes up, in the
// daemon's start-up phases, once its sockets are up; started as from a
// terminal and with SIGINT ignored, as a script's `cmd &` starts it. Each
// run prints its stopping line, exits 0 within the bound and leaves no
// socket. Before, a SIGINT before its handler (installed after EAL came
// up) ended the process with no line, or, ignored, was lost: the demo
// served on until a second one.
func TestDemoWorkers_oneSIGINTAtAnyMomentStops(t *testing.T) {
	needRoot(t)
	var runs []signalRun
	for i, moment := range signalMoments {
		for _, ignored := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("run%d", i))
			socks := []string{filepath.Join(dir, "10.0.0.1.sock"), filepath.Join(dir, "10.0.0.2.sock")}
			isUp := func(out string) bool { return strings.Contains(out, "workers attach at") }
			runs = append(runs, runAndSignal(t, syscall.SIGINT, ignored, moment, isUp, socks, "demo", "--workers", dir))
		}
	}
	checkRuns(t, runs, "stopping")
}

// One SIGTERM (or SIGINT, with SIGINT ignored at the start) stops `run`
// cleanly whenever it comes: at main's first instant, while the config is
// read, while EAL comes up, in the phases, in the wait for the link (a
// memif server with no peer). Each run logs its stop (the phase it
// stopped in), exits 0 within the bound and leaves neither the memif
// socket nor the workers' socket. Before, a signal before run's handler
// (its first tens of milliseconds) ended it with status 143 and no log.
func TestRun_oneSignalAtAnyMomentStops(t *testing.T) {
	needRoot(t)
	var runs []signalRun
	for i, moment := range signalMoments {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			dir := t.TempDir()
			memif, workers := filepath.Join(dir, "memif.sock"), filepath.Join(dir, "workers.sock")
			cfg := filepath.Join(dir, "homa.yaml")
			yaml := fmt.Sprintf("lcores: [1]\nports:\n  - device: net_memif_loop%d\n    address: 10.0.0.1/24\nmetrics:\n  address: \"\"\nworkers:\n  socket: %q\n", i, workers)
			if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			eal := append(dpdk.VirtualDeviceArgs("0-1", dpdk.ProbeMemory(), 512, fmt.Sprintf("homaloop%d", os.Getpid())),
				"--vdev", fmt.Sprintf("net_memif_loop%d,role=server,id=0,socket=%s,socket-abstract=no", i, memif))
			isUp := func(string) bool { _, err := os.Stat(memif); return err == nil } // the link wait has begun
			args := append([]string{"run", "--config", cfg, "--"}, eal...)
			runs = append(runs, runAndSignal(t, sig, sig == syscall.SIGINT, moment, isUp, []string{memif, workers}, args...))
		}
	}
	checkRuns(t, runs, "stopped during start-up", "stopping")
}

// needRoot skips a test whose children start EAL unless it runs as root
// (or fails it, with HOMA_REQUIRE_DPDK=1).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but DPDK tests need root")
		}
		t.Skip("skipping DPDK test: it needs root (run as root, as CI does)")
	}
}

// The commands with no clean stop keep the signals' default effect: the
// RPC demo (homa-dpdk demo) ends by a SIGINT as before; started with
// SIGINT ignored, it goes on past one (the catch from main's start is
// given back with SIGINT ignored again) and ends by a SIGTERM.
func TestDemo_signalsKeepTheirDefaultEffect(t *testing.T) {
	needRoot(t)
	for _, ignored := range []bool{false, true} {
		argv := []string{os.Args[0], "-test.run=^$", "--", "demo", "--seconds", "600", "--sizes", "100"}
		if ignored {
			argv = append([]string{"/bin/sh", "-c", `trap '' INT; exec "$0" "$@"`}, argv...)
		}
		p := &mainProc{cmd: exec.Command(argv[0], argv[1:]...), out: &syncBuffer{}, done: make(chan error, 1)}
		p.cmd.Env = append(os.Environ(), mainEnv+"=1")
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		p.waitFor(t, "demo: Homa hosts", stopBound)
		p.cmd.Process.Signal(syscall.SIGINT)
		want := "signal: interrupt"
		if ignored {
			// Still running a while after the SIGINT: then a SIGTERM.
			if err := p.wait(2 * time.Second); err != errRunning {
				t.Fatalf("started with SIGINT ignored: exit %v after a SIGINT, want it ignored; output:\n%s", err, p.out.String())
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			want = "signal: terminated"
		}
		err := p.wait(stopBound)
		if err == errRunning {
			p.cmd.Process.Kill()
			p.wait(stopBound)
		}
		if err == nil || err.Error() != want {
			t.Errorf("ignored %v: exit %v, want %q (the default effect); output:\n%s", ignored, err, want, p.out.String())
		}
	}
}
