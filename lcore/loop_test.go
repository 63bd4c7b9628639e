package lcore_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { dpdktest.Main(m) }

// workerLcore returns an EAL worker lcore, or skips when EAL has none.
func workerLcore(t *testing.T) uint {
	t.Helper()
	dpdktest.Need(t)
	w := dpdk.WorkerLcores()
	if len(w) == 0 {
		t.Skip("EAL has no worker lcore on a 1-CPU machine")
	}
	return w[0]
}

// probe is a pass function that records, on its first call, the CPU
// affinity and lcore id of the thread it runs on, and then returns the
// values of a script of results, cycling.
type probe struct {
	cpus    atomic.Pointer[[]int]
	lcore   atomic.Uint64
	calls   atomic.Uint64
	packets atomic.Uint64
	busy    atomic.Uint64
	script  []int
}

func (p *probe) pass() int {
	c := p.calls.Add(1)
	if c == 1 {
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) == nil {
			var cpus []int
			for i := 0; i < 1024; i++ {
				if set.IsSet(i) {
					cpus = append(cpus, i)
				}
			}
			p.cpus.Store(&cpus)
		}
		p.lcore.Store(uint64(dpdk.LcoreID()))
	}
	n := 0
	if len(p.script) > 0 {
		n = p.script[int(c-1)%len(p.script)]
	}
	if n > 0 {
		p.busy.Add(1)
		p.packets.Add(uint64(n))
	}
	return n
}

func waitCalls(t *testing.T, p *probe, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.calls.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("loop made %d passes in 10 s, want %d", p.calls.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLaunch_runsOnLcoreCPU(t *testing.T) {
	w := workerLcore(t)
	p := &probe{}
	l, err := lcore.Launch(w, lcore.Config{Name: "t", Pass: p.pass})
	if err != nil {
		t.Fatal(err)
	}
	waitCalls(t, p, 1000)
	if err := l.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []int{dpdk.LcoreCPU(w)}
	if got := *p.cpus.Load(); !slices.Equal(got, want) {
		t.Errorf("pass ran with affinity %v, want %v", got, want)
	}
	if uint(p.lcore.Load()) != w || l.LcoreID() != w {
		t.Errorf("lcore id %d (loop says %d), want %d", p.lcore.Load(), l.LcoreID(), w)
	}
	if got := runtime.GOMAXPROCS(0); got < 3 {
		t.Errorf("GOMAXPROCS %d with a loop running, want >= 3", got)
	}
}

func TestGo_pinnedAndRegistered(t *testing.T) {
	dpdktest.Need(t)
	cpu := runtime.NumCPU() - 1
	p := &probe{}
	l, err := lcore.Go(cpu, lcore.Config{Name: "t", Pass: p.pass})
	if err != nil {
		t.Fatal(err)
	}
	waitCalls(t, p, 1000)
	if err := l.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := *p.cpus.Load(); !slices.Equal(got, []int{cpu}) {
		t.Errorf("pass ran with affinity %v, want [%d]", got, cpu)
	}
	if !slices.Equal(l.CPUs(), []int{cpu}) {
		t.Errorf("loop reports affinity %v", l.CPUs())
	}
	if id := uint(p.lcore.Load()); id == dpdk.LcoreIDAny || id == dpdk.MainLcore() {
		t.Errorf("registered thread has lcore id %d", id)
	}
}

func TestGo_badCPUNamed(t *testing.T) {
	dpdktest.Need(t)
	_, err := lcore.Go(4096, lcore.Config{Name: "t", Pass: func() int { return 0 }})
	if err == nil || !strings.Contains(err.Error(), "CPU 4096") {
		t.Fatalf("got %v", err)
	}
}

func TestLaunch_mainLcoreRefused(t *testing.T) {
	dpdktest.Need(t)
	_, err := lcore.Launch(dpdk.MainLcore(), lcore.Config{Name: "t", Pass: func() int { return 0 }})
	if err == nil || !strings.Contains(err.Error(), "main lcore") {
		t.Fatalf("got %v", err)
	}
}

func TestStats_countersAddUp(t *testing.T) {
	w := workerLcore(t)
	p := &probe{script: []int{0, 3, 0, 0, 32, 1}}
	drained := make(chan uint64, 1)
	l, err := lcore.Launch(w, lcore.Config{
		Name:  "t",
		Pass:  p.pass,
		Drain: func() { drained <- p.calls.Load() },
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCalls(t, p, 100_000)
	if err := l.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Passes != p.calls.Load() || st.BusyPasses != p.busy.Load() || st.Packets != p.packets.Load() {
		t.Errorf("stats %+v, but the pass saw %d calls, %d busy, %d packets",
			st, p.calls.Load(), p.busy.Load(), p.packets.Load())
	}
	if st.Sleeps != 0 {
		t.Errorf("a busy-polling loop slept %d times", st.Sleeps)
	}
	select {
	case n := <-drained:
		if n != st.Passes {
			t.Errorf("drain ran after %d passes, loop made %d", n, st.Passes)
		}
	default:
		t.Error("drain did not run")
	}
}

func TestAdaptive_sleepsWhenIdleAndStops(t *testing.T) {
	w := workerLcore(t)
	p := &probe{}
	l, err := lcore.Launch(w, lcore.Config{
		Name: "t",
		Pass: p.pass,
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 100, MaxSleep: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Sleeps < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// The bound: one sleep (1 ms) plus one pass; 2 s leaves room for a
	// loaded CI machine without hiding a loop that never stops.
	if err := l.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Sleeps < 10 || st.BusyPasses != 0 {
		t.Errorf("idle adaptive loop: %+v, want >= 10 sleeps and no busy pass", st)
	}
}

func TestStop_reportsPanic(t *testing.T) {
	w := workerLcore(t)
	l, err := lcore.Launch(w, lcore.Config{Name: "t", Pass: func() int { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	// The loop ends on its own at its first pass. Stopping it at once
	// instead could come before that pass (a loaded machine starts the
	// thread late), and a loop stopped before it ever passed has no
	// panic to report: CI saw that once.
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end at its panicking pass")
	}
	err = l.Stop(5 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v, want the panic", err)
	}
	// The lcore is free again.
	l2, err := lcore.Launch(w, lcore.Config{Name: "t2", Pass: func() int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestStop_timeoutWhenPassBlocks(t *testing.T) {
	w := workerLcore(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	l, err := lcore.Launch(w, lcore.Config{Name: "t", Pass: func() int {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return 0
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Stop only once a pass blocks: a loop told to stop before its first
	// pass leaves without one.
	<-entered
	if err := l.Stop(50 * time.Millisecond); !errors.Is(err, lcore.ErrStopTimeout) {
		t.Fatalf("got %v, want ErrStopTimeout", err)
	}
	close(release)
	if err := l.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// A pass that stalls shows as the loop's longest gap; the loop's own idle
// sleeps do not.
func TestStats_maxGapSeesAStallNotIdleSleeps(t *testing.T) {
	w := workerLcore(t)
	var calls atomic.Int64
	l, err := lcore.Launch(w, lcore.Config{
		Name: "gap",
		Pass: func() int {
			if calls.Add(1) == 50 {
				time.Sleep(30 * time.Millisecond) // a stall, as a GC pause would be
			}
			return 0
		},
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 100, MinSleep: time.Millisecond, MaxSleep: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Stats().Sleeps < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := l.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.MaxGap < 30*time.Millisecond {
		t.Errorf("longest gap %v, want at least the 30 ms stall", st.MaxGap)
	}
	if st.MaxGap > 45*time.Millisecond { // idle sleeps of up to 50 ms must not count
		t.Errorf("longest gap %v: the loop's idle sleeps were counted", st.MaxGap)
	}
}

// An adaptive loop calls Flush instead of starting a sleep; what Flush
// handled counts as the pass's work, and the loop sleeps only when it
// found nothing.
func TestAdaptive_flushBeforeSleep(t *testing.T) {
	w := workerLcore(t)
	p := &probe{}
	var flushes, flushed atomic.Uint64
	flush := func() int {
		if flushes.Add(1)%2 == 1 { // every other one finds a packet
			flushed.Add(1)
			return 1
		}
		return 0
	}
	l, err := lcore.Launch(w, lcore.Config{
		Name: "t", Pass: p.pass, Flush: flush,
		Idle: lcore.Idle{Kind: lcore.Adaptive, SpinPasses: 100, MaxSleep: 100 * time.Microsecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Sleeps < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := l.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.BusyPasses != flushed.Load() || st.Packets != flushed.Load() {
		t.Errorf("stats %+v: want %d busy passes and packets (the flushes that found one)", st, flushed.Load())
	}
	// Flush comes only where a sleep would: after 100 empty passes, or
	// right after a sleep. A flush that found work resets the count; so
	// here 100 passes make two flushes, one with work.
	if f := flushes.Load(); st.Sleeps != f-flushed.Load() || f > st.Passes/50+2 || f < 10 {
		t.Errorf("%d flushes (%d with work), %d sleeps in %d passes: want a sleep per empty flush, at most 2 flushes per 100 passes", f, flushed.Load(), st.Sleeps, st.Passes)
	}
}
