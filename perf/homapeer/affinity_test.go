package homapeer

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// threadsOn counts this process's threads whose affinity includes cpu,
// and all its threads.
func threadsOn(t *testing.T, cpu int) (on, all int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue // exited
		}
		all++
		if set.IsSet(cpu) {
			on++
		}
	}
	return on, all
}

// While a daemon runs, no thread of the harness may run on its loop CPU;
// afterwards every thread has its CPUs back.
func TestHarnessOffCPU(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil || mine.Count() < 2 || !mine.IsSet(DaemonLoopCPU) {
		t.Skipf("needs CPU %d and another (affinity %v, %v)", DaemonLoopCPU, mine, err)
	}
	restore := HarnessOffCPU(DaemonLoopCPU)
	if on, all := threadsOn(t, DaemonLoopCPU); on != 0 {
		restore()
		t.Fatalf("%d of %d threads may still run on CPU %d", on, all, DaemonLoopCPU)
	}
	restore()
	if on, all := threadsOn(t, DaemonLoopCPU); on != all {
		t.Errorf("after restore, %d of %d threads may run on CPU %d", on, all, DaemonLoopCPU)
	}
}
