package hub

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"golang.org/x/sys/unix"
)

// A worker that reads the doorbell descriptor it was given takes no other
// worker's ring. Fifty workers take turns: the loop arms its doorbell (as
// before a sleep), the worker pushes a submission and, finding the wait
// flag raised, rings; then a thief worker reads its own descriptor dry;
// then the loop looks at its doorbell as it does asleep. Every ring must
// wake it. The steps run one after the other on the loop's goroutine, so
// the count does not depend on the machine's speed.
func TestHub_workerCannotStealAnothersRing(t *testing.T) {
	a, _, sockA, _, calls := workerHostsCalls(t, Config{Doorbell: true})
	const workers = 50
	thief := attachRaw(t, sockA)
	ws := make([]*rawWorker, workers)
	for i := range ws {
		ws[i] = attachRaw(t, sockA)
	}
	for _, w := range append([]*rawWorker{thief}, ws...) {
		if err := w.At.AskDoorbell(); err != nil {
			t.Fatal(err)
		}
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var live int
		calls.do(func() { live = len(a.hub.sessions) })
		if live == workers+1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d sessions live, want %d", live, workers+1)
		}
	}
	calls.do(func() { loopWakes(a.hub) }) // the attaches rang it
	var rang, woke, stolen int
	for i, w := range ws {
		calls.do(func() {
			if !a.hub.ArmDoorbell() {
				t.Errorf("round %d: the loop found work before the worker pushed", i)
			}
			var s shm.Slot
			(&shm.Submission{Op: shm.OpBind, Port: uint16(100 + i), Cookie: 1}).Encode(&s)
			if !w.SQ.Push(&s) {
				t.Errorf("round %d: the submission ring is full", i)
			}
			if w.SQ.TakeWaiter() {
				shm.RingFD(w.At.Doorbell)
				rang++
			}
			stolen += readDry(thief.At.Doorbell)
			if loopWakes(a.hub) {
				woke++
			}
			a.hub.DisarmDoorbell()
		})
	}
	if rang != workers || woke != rang {
		t.Errorf("%d workers rang %d times; the loop woke for %d of the rings, the thief read %d", workers, rang, woke, stolen)
	}
	for i, w := range ws { // the pass after each round took the submission
		if c := w.Expect(t, shm.CompAccepted); c.Cookie != 1 {
			t.Errorf("worker %d: completion %+v", i, c)
		}
	}
	// The sessions' doorbells leave the loop's set with them: the hub's
	// own is left.
	if n := watched(t, a.hub.DoorbellFD()); n != workers+2 {
		t.Errorf("the loop watches %d doorbells, want %d", n, workers+2)
	}
	for _, w := range append(ws, thief) {
		w.At.Close()
	}
	for end := time.Now().Add(10 * time.Second); watched(t, a.hub.DoorbellFD()) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the loop watches %d doorbells after every worker left, want its own", watched(t, a.hub.DoorbellFD()))
		}
	}
}

// watched is how many descriptors epoll set ep watches.
func watched(t *testing.T, ep int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", ep))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "tfd:")
}

// loopWakes reports whether a loop asleep on hub's doorbell would wake
// now, and if so drains it as the loop does on waking.
func loopWakes(hub *Hub) bool {
	p := []unix.PollFd{{Fd: int32(hub.DoorbellFD()), Events: unix.POLLIN}}
	if n, _ := unix.Poll(p, 0); n <= 0 {
		return false
	}
	hub.DrainDoorbell()
	return true
}

// readDry reads eventfd fd until it is empty and returns what it read.
func readDry(fd int) int {
	total := 0
	var b [8]byte
	for {
		if n, err := unix.Read(fd, b[:]); n != 8 || err != nil {
			return total
		}
		total += int(binary.LittleEndian.Uint64(b[:]))
	}
}
