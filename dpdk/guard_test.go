package dpdk

import (
	"runtime"
	"testing"
	"time"
)

// runGuardHold holds a burst open on a thread of its own, registered with
// DPDK when lcore is set, until guardTestRelease; it returns once the
// burst is open.
func runGuardHold(t *testing.T, lcore bool) (done chan struct{}) {
	t.Helper()
	guardTestRelease(false)
	started, done := make(chan error), make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if lcore {
			if _, err := ThreadRegister(); err != nil {
				started <- err
				return
			}
			defer ThreadUnregister()
		}
		started <- nil
		guardTestHold()
	}()
	if err := <-started; err != nil {
		t.Skip("no lcore id for the burst's thread:", err)
	}
	return done
}

// An unmapping waits for a burst that was running when it began, on a
// thread with an lcore id and on one without, and the munmap that DPDK's
// plugins resolve is the guard's.
func TestBurstGuard_munmapWaitsForRunningBurst(t *testing.T) {
	for _, lcore := range []bool{true, false} {
		if lcore && !Initialized() {
			continue // without EAL no thread has an lcore id: the other case covers it
		}
		done := runGuardHold(t, lcore)
		time.Sleep(10 * time.Millisecond) // the burst is open (its enter comes before the first yield)
		before := BurstGuardStats()
		unmapped := make(chan int)
		go func() { unmapped <- guardTestMunmap() }()
		select {
		case rc := <-unmapped:
			guardTestRelease(true)
			<-done
			t.Fatalf("lcore %v: munmap returned %d while a burst ran", lcore, rc)
		case <-time.After(50 * time.Millisecond):
		}
		guardTestRelease(true)
		if rc := <-unmapped; rc != 0 {
			t.Fatalf("lcore %v: munmap through the global symbol: %d (-2: not the guard's)", lcore, rc)
		}
		<-done
		if got := BurstGuardStats(); got.Waits != before.Waits+1 || got.Timeouts != before.Timeouts {
			t.Errorf("lcore %v: guard counters %+v after %+v, want one more wait and no timeout", lcore, got, before)
		}
	}
}

// Without a running burst an unmapping does not wait.
func TestBurstGuard_idleDoesNotWait(t *testing.T) {
	before := BurstGuardStats()
	start := time.Now()
	if rc := guardTestMunmap(); rc != 0 {
		t.Fatalf("munmap: %d", rc)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("munmap took %v with no burst running", d)
	}
	if got := BurstGuardStats(); got != before {
		t.Errorf("guard counters moved: %+v after %+v", got, before)
	}
}
