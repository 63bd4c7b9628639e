package lcore_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/lcore"
	"golang.org/x/sys/unix"
)

// Threads other than the loop's are moved off the loop's CPU — also one
// made after housekeeping started, with an affinity that includes it —
// and the loop's own thread stays where it is.
func TestHousekeeping_movesOtherThreadsOffLoopCPUs(t *testing.T) {
	w := workerLcore(t)
	l, err := lcore.Launch(w, lcore.Config{Name: "hk", Pass: func() int { return 0 },
		Idle: lcore.Idle{Kind: lcore.Adaptive}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(5 * time.Second)
	loopCPUs := l.CPUs()
	hk := lcore.StartHousekeeping([]*lcore.Loop{l}, 20*time.Millisecond)
	defer hk.Stop()

	got := make(chan []int)
	release := make(chan struct{})
	go func() { // a thread that asks for every CPU
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var all unix.CPUSet
		for c := range runtime.NumCPU() {
			all.Set(c)
		}
		unix.SchedSetaffinity(0, &all)
		<-release
		var set unix.CPUSet
		unix.SchedGetaffinity(0, &set)
		var cpus []int
		for c := range runtime.NumCPU() {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		got <- cpus
	}()
	time.Sleep(100 * time.Millisecond) // a few passes
	close(release)
	cpus := <-got
	for _, c := range loopCPUs {
		if slices.Contains(cpus, c) {
			t.Errorf("a thread may still run on the loop's CPU %d: %v", c, cpus)
		}
	}
	if len(cpus) == 0 {
		t.Error("the thread was left no CPU")
	}
	if !slices.Equal(l.CPUs(), loopCPUs) {
		t.Errorf("loop CPUs %v changed to %v", loopCPUs, l.CPUs())
	}
	if moved, err := hk.Moved(); moved == 0 || err != nil {
		t.Errorf("moved %d threads, err %v", moved, err)
	}
}
