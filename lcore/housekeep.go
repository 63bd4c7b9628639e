package lcore

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Housekeeping keeps every other thread of the process — the Go runtime's
// (garbage collector, scheduler), the control socket's and the metrics
// server's goroutines, DPDK's control threads — off the CPUs that polling
// loops own. Left alone, the kernel sometimes runs such a thread on a
// loop's CPU, where the two time-share and the loop stalls for
// milliseconds. New threads inherit their creator's affinity, but the Go
// runtime may create one from a loop's thread, so a pass repeats every
// interval. On a machine where the loops own every CPU there is nowhere
// else to go and it does nothing (use isolcpus and more CPUs).
type Housekeeping struct {
	loops []*Loop
	all   unix.CPUSet // the process's CPUs when it started, given back at Stop
	stop  chan struct{}
	done  sync.WaitGroup

	mu    sync.Mutex
	moved int   // threads moved, all passes
	err   error // the last pass's error
}

// StartHousekeeping moves the process's other threads off the loops'
// CPUs now and then every interval, until Stop.
func StartHousekeeping(loops []*Loop, interval time.Duration) *Housekeeping {
	h := &Housekeeping{loops: loops, stop: make(chan struct{})}
	for _, c := range onlineCPUs() {
		h.all.Set(c)
	}
	h.pass()
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.pass()
			}
		}
	}()
	return h
}

// Stop ends the periodic passes and gives the other threads back the
// CPUs they had.
func (h *Housekeeping) Stop() {
	close(h.stop)
	h.done.Wait()
	h.setOthers(h.all)
}

// Moved is how many times a thread was moved off the loops' CPUs; Err the
// last pass's error, if any.
func (h *Housekeeping) Moved() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.moved, h.err
}

// pass sets the affinity of every thread that is not a loop's to the
// CPUs no loop owns.
func (h *Housekeeping) pass() {
	owned := map[int]bool{}
	for _, l := range h.loops {
		for _, c := range l.cpus {
			owned[c] = true
		}
	}
	var free unix.CPUSet
	for c := 0; c < len(h.all)*64; c++ {
		if h.all.IsSet(c) && !owned[c] {
			free.Set(c)
		}
	}
	if free.Count() == 0 {
		return
	}
	moved, err := h.setOthers(free)
	h.mu.Lock()
	h.moved += moved
	h.err = err
	h.mu.Unlock()
}

// setOthers sets the affinity of every thread but the loops' to set and
// returns how many it changed.
func (h *Housekeeping) setOthers(set unix.CPUSet) (moved int, err error) {
	loopTIDs := map[int]bool{}
	for _, l := range h.loops {
		loopTIDs[l.tid] = true
	}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		tid, perr := strconv.Atoi(e.Name())
		if perr != nil || loopTIDs[tid] {
			continue
		}
		var cur unix.CPUSet
		if unix.SchedGetaffinity(tid, &cur) != nil || cur == set {
			continue // gone, or already there
		}
		if serr := unix.SchedSetaffinity(tid, &set); serr == nil {
			moved++
		} else if err == nil && serr != unix.ESRCH {
			err = fmt.Errorf("housekeeping: thread %d: %w", tid, serr)
		}
	}
	return moved, err
}

// onlineCPUs lists the CPUs this process may run on.
func onlineCPUs() []int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(os.Getpid(), &set) != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return slices.Clip(cpus)
}
