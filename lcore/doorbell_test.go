package lcore_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/lcore"
	"golang.org/x/sys/unix"
)

// A loop asleep for (up to) a minute wakes when its doorbell is written,
// and a loop whose Arm finds work does not sleep at all.
func TestDoorbell_wakesASleepingLoop(t *testing.T) {
	w := workerLcore(t)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	p := &probe{}
	var armed, work atomic.Bool
	var arms, disarms atomic.Int64
	l, err := lcore.Launch(w, lcore.Config{
		Name: "t",
		Pass: p.pass,
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 10, MinSleep: time.Minute, MaxSleep: time.Minute},
		Doorbell: &lcore.Doorbell{FDs: []int{efd},
			Arm:    func() bool { arms.Add(1); armed.Store(true); return !work.Load() },
			Disarm: func() { disarms.Add(1); armed.Store(false) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Stop(5 * time.Second) })
	waitUntil(t, "the loop to arm its doorbell", armed.Load)
	calls := p.calls.Load()
	work.Store(true) // from now on Arm finds work: the loop keeps passing instead of sleeping
	if _, err := unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "passes after the doorbell, while Arm finds work", func() bool { return p.calls.Load() > calls+1000 })
	work.Store(false)
	waitUntil(t, "the loop to arm again", armed.Load)
	if err := l.Stop(5 * time.Second); err != nil { // asleep for a minute: Stop rings the doorbell
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Rung < 1 || st.Refrained < 1 || arms.Load() != disarms.Load() {
		t.Errorf("stats %+v, %d arms, %d disarms: want sleeps rung and refrained, every arm undone", st, arms.Load(), disarms.Load())
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
