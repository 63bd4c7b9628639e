// Package child starts child processes that must not outlive this one.
//
// Linux sends a child its parent-death signal (SysProcAttr.Pdeathsig) when
// the thread that forked it exits, not when the process does. Go ends a
// thread whenever a goroutine locked to it returns without unlocking, as
// the perf harness's goroutines pinned to a CPU or inside a network
// namespace do (perf.OnPinnedThread), and the runtime may have forked the
// child from that very thread a moment before: the child is then killed
// while the parent still needs it. Start forks from a thread it holds
// until the child has exited.
package child

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Start starts cmd with sig as its parent-death signal, from a thread
// locked until cmd exits, and returns the channel that receives cmd.Wait's
// result. The caller must not call cmd.Wait itself.
func Start(cmd *exec.Cmd, sig syscall.Signal) (<-chan error, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// Run is Start, then waits for cmd to exit.
func Run(cmd *exec.Cmd, sig syscall.Signal) error {
	done, err := Start(cmd, sig)
	if err != nil {
		return err
	}
	return <-done
}
