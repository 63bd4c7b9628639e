package homapeer

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// What every scenario that runs dpdk-testpmd needs (this package's
// forwarder between the daemon's hosts, perf pmd's and perf floor's).

// StopTestpmd interrupts testpmd (it then prints its totals and closes its
// ports) and waits for it, killing it after 15 s.
func StopTestpmd(cmd *exec.Cmd) error {
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("testpmd did not exit within 15 s of SIGINT")
	}
}

// WaitForPath waits until path exists (a socket a child process makes),
// or fails after timeout.
func WaitForPath(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
