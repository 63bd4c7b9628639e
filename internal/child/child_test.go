package child

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The main goroutine keeps the main thread, which Go never ends (it wedges
// it instead): every test runs on threads that a locked goroutine's return
// does end, as the harness's goroutines run.
func init() { runtime.LockOSThread() }

// endLockedThreads runs n goroutines that each lock their thread and
// return locked, so that Go ends the thread, as perf.OnPinnedThread's do.
// A goroutine started and waited for this way usually runs on the thread
// its starter was on.
func endLockedThreads(n int) {
	for range n {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
}

// A child started with a parent-death signal lives on while this process's
// other goroutines end the threads they locked (the perf harness's slowdown
// daemons were killed this way: "the daemon is gone").
func TestStart_childOutlivesEndedThreads(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	done, err := Start(cmd, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	endLockedThreads(50)
	select {
	case err := <-done:
		t.Fatalf("the child ended (%v) when other threads did", err)
	case <-time.After(200 * time.Millisecond):
	}
	cmd.Process.Kill()
	<-done
}

// The hazard Start avoids is real on this kernel: a child forked with a
// parent-death signal from a thread that then ends is killed.
func TestStart_aPlainStartLosesTheChildWhenItsThreadEnds(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(10 * time.Second); cmd.Process.Kill() }()
	endLockedThreads(50)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want killed by SIGKILL when the thread that forked it ended", err)
	}
}

func TestStart_reportsAStartThatFails(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/program"), syscall.SIGTERM); err == nil {
		t.Fatal("started a program that does not exist")
	}
}

func TestRun_givesTheExitStatus(t *testing.T) {
	if err := Run(exec.Command("true"), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := Run(exec.Command("false"), syscall.SIGTERM); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("false: %v, want exit status 1", err)
	}
}
