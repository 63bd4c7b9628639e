package dpdk

/*
#include <stdint.h>
int homa_remote_launch(unsigned lcore);
int homa_thread_register(void);
void rte_thread_unregister(void);
int rte_eal_wait_lcore(unsigned worker_id);
*/
import "C"

import (
	"fmt"
	"sync"
)

// launched holds, per lcore id, the Go function RemoteLaunch started there
// and the channel closed when it returns.
var launched struct {
	mu   sync.Mutex
	fn   [MaxLcore]func()
	done [MaxLcore]chan error
}

// RemoteLaunch runs fn on EAL worker lcore `lcore`: on that lcore's own OS
// thread, pinned by EAL to its CPU, with the lcore's id (so per-lcore
// mempool caches are used) and visible to secondary processes. fn runs
// until it returns; the thread stays locked to the calling goroutine for
// the whole call. Wait for it with WaitLcore.
func RemoteLaunch(lcore uint, fn func()) error {
	if !Initialized() {
		return ErrNotInitialized
	}
	if int(lcore) >= MaxLcore {
		return fmt.Errorf("launch on lcore %d: lcore ids go up to %d", lcore, MaxLcore-1)
	}
	if lcore == MainLcore() {
		return fmt.Errorf("launch on lcore %d: it is the main lcore; choose a worker lcore (%v)", lcore, WorkerLcores())
	}
	launched.mu.Lock()
	if launched.fn[lcore] != nil {
		launched.mu.Unlock()
		return fmt.Errorf("launch on lcore %d: a function is already running there", lcore)
	}
	done := make(chan error, 1)
	launched.fn[lcore] = fn
	launched.done[lcore] = done
	launched.mu.Unlock()
	if rc := C.homa_remote_launch(C.uint(lcore)); rc < 0 {
		launched.mu.Lock()
		launched.fn[lcore], launched.done[lcore] = nil, nil
		launched.mu.Unlock()
		e := newError(fmt.Sprintf("launch on lcore %d", lcore), int(rc))
		if int(-rc) == 16 { // EBUSY
			e.Log = "the lcore is not enabled in the EAL -l/--lcores list, or is busy"
		}
		return e
	}
	return nil
}

// WaitLcore blocks (without spinning) until the function launched on
// lcore returns, and reports a panic it raised as an error.
func WaitLcore(lcore uint) error {
	launched.mu.Lock()
	done := launched.done[lcore]
	launched.mu.Unlock()
	if done == nil {
		return fmt.Errorf("wait lcore %d: nothing was launched there", lcore)
	}
	err := <-done
	C.rte_eal_wait_lcore(C.uint(lcore)) // returns at once: the function has returned
	launched.mu.Lock()
	launched.fn[lcore], launched.done[lcore] = nil, nil
	launched.mu.Unlock()
	return err
}

//export homaLcoreMain
func homaLcoreMain(arg C.uintptr_t) (rc C.int) {
	lcore := uint(arg)
	launched.mu.Lock()
	fn, done := launched.fn[lcore], launched.done[lcore]
	launched.mu.Unlock()
	var err error
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lcore %d: panic: %v", lcore, r)
			rc = -1
		}
		done <- err
	}()
	fn()
	return 0
}

// ThreadRegister gives the calling OS thread a DPDK lcore id
// (rte_thread_register) and returns it. The caller must hold the thread
// with runtime.LockOSThread until ThreadUnregister. Secondary processes
// cannot attach while such threads exist; the daemon uses RemoteLaunch.
func ThreadRegister() (uint, error) {
	if !Initialized() {
		return 0, ErrNotInitialized
	}
	if rc := C.homa_thread_register(); rc < 0 {
		return 0, newError("register thread with DPDK", int(rc))
	}
	return LcoreID(), nil
}

// ThreadUnregister releases the calling thread's lcore id.
func ThreadUnregister() { C.rte_thread_unregister() }
