package homapeer

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DaemonLoopCPU is the CPU of the daemon's polling loop: demo --workers
// runs it on lcore 1, and EAL's lcore 1 is CPU 1 (-l 0,1).
const DaemonLoopCPU = 1

// HarnessOffCPU moves every thread of this process off cpu and returns
// the function that gives them back the CPUs they had. The harness calls
// it while a daemon runs, for the daemon's loop CPU: left alone, the
// kernel runs the harness's own runtime threads (the Go scheduler's, its
// sysmon, the collector's, the daemon log's reader) there now and then,
// and each time one wakes there it preempts the daemon's busy loop. perf
// starts measured it: in a start whose harness threads had settled on CPU
// 1, the daemon's loop thread was preempted 7,000 to 14,000 times in a
// second of 1 MB round trips (against about a hundred in the others), and
// that start's 1 MB P50 was 10 to 25 % above the others' for as long as
// it ran — the "bimodal starts" of issue 14. Threads made later inherit
// their creator's CPUs, so one pass holds. With one CPU, or none left but
// cpu, it does nothing.
func HarnessOffCPU(cpu int) (restore func()) {
	var all unix.CPUSet
	if unix.SchedGetaffinity(0, &all) != nil || !all.IsSet(cpu) || all.Count() < 2 {
		return func() {}
	}
	off := all
	off.Clear(cpu)
	setAll := func(set *unix.CPUSet) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				unix.SchedSetaffinity(tid, set) // a thread that has exited: nothing to move
			}
		}
	}
	setAll(&off)
	return func() { setAll(&all) }
}
