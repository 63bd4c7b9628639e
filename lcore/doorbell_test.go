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

// A doorbell that is not an eventfd (an epoll set of them, as the worker
// hub's): the loop polls it, hands it to Drain when it wakes the loop,
// and Stop wakes the loop through Ring.
func TestDoorbell_drainAndRingHooks(t *testing.T) {
	w := workerLcore(t)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(efd)}); err != nil {
		t.Fatal(err)
	}
	ring := func() { unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}) }
	var armed atomic.Bool
	var drained, rings atomic.Int64
	evs := make([]unix.EpollEvent, 4)
	l, err := lcore.Launch(w, lcore.Config{
		Name: "t",
		Pass: (&probe{}).pass,
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 10, MinSleep: time.Minute, MaxSleep: time.Minute},
		Doorbell: &lcore.Doorbell{FDs: []int{ep},
			Arm:    func() bool { armed.Store(true); return true },
			Disarm: func() { armed.Store(false) },
			Drain: func(i int) {
				if n, _ := unix.EpollWait(ep, evs, 0); i == 0 && n == 1 {
					drained.Add(1)
				}
			},
			Ring: func() { rings.Add(1); ring() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Stop(5 * time.Second) })
	waitUntil(t, "the loop to sleep", func() bool { return armed.Load() && l.Stats().Sleeps == 0 })
	ring()
	waitUntil(t, "the ring drained", func() bool { return drained.Load() == 1 })
	waitUntil(t, "the loop to sleep again", armed.Load)
	if err := l.Stop(5 * time.Second); err != nil { // asleep for a minute on the epoll set: Ring wakes it
		t.Fatal(err)
	}
	if st := l.Stats(); st.Rung < 1 || drained.Load() != int64(st.Rung) || rings.Load() != 1 {
		t.Errorf("stats %+v, %d drained, %d rung by Stop: want every sleep rung drained, Stop's ring", st, drained.Load(), rings.Load())
	}
}
