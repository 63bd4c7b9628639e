// Package lcore runs Go functions as pinned polling loops, the way DPDK
// applications run their per-core loops.
//
// A loop calls its pass function over and over on one OS thread pinned to
// one CPU, with a DPDK lcore id (so per-lcore mempool caches work), until
// it is stopped; then it runs its drain function once, on the same thread,
// and exits. Two ways to get such a thread:
//
//   - Launch: on an EAL worker lcore (dpdk.RemoteLaunch). This is the
//     daemon's way: EAL has already pinned the thread, and secondary
//     processes such as dpdk-proc-info can still attach.
//   - Go: on a goroutine locked to its thread, pinned with
//     sched_setaffinity and registered with rte_thread_register. As fast,
//     usable on any CPU (tests, tools), but secondary processes cannot
//     attach while it runs.
//
// Go sizes GOMAXPROCS from the CPU affinity it starts with, and a poller
// holds a P for as long as it runs, so both ways raise GOMAXPROCS to at
// least the number of running loops + 2 (see SetGOMAXPROCS); otherwise
// the garbage collector and other goroutines could stall a poller for
// milliseconds.
//
// Idle strategy: BusyPoll never gives the CPU away; Adaptive spins for a
// number of empty passes, then sleeps, doubling the sleep up to a bound,
// and goes back to spinning at the first pass that finds work — so a small
// machine stays usable when traffic is light.
package lcore

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"golang.org/x/sys/unix"
)

// IdleKind selects what a loop does when its passes find no work.
type IdleKind int

const (
	// BusyPoll polls without pause: lowest latency, one whole CPU.
	BusyPoll IdleKind = iota
	// Adaptive spins, then sleeps with exponential back-off.
	Adaptive
)

// Idle is a loop's idle strategy.
type Idle struct {
	Kind IdleKind
	// SpinPasses is the number of consecutive empty passes before the
	// first sleep (Adaptive). Default 10,000.
	SpinPasses int
	// MinSleep is the first sleep (Adaptive). Default 1 µs.
	MinSleep time.Duration
	// MaxSleep bounds the sleep (Adaptive); it is also the longest extra
	// latency a packet arriving on an idle loop waits. Default 100 µs.
	MaxSleep time.Duration
}

func (i Idle) withDefaults() Idle {
	if i.SpinPasses <= 0 {
		i.SpinPasses = 10_000
	}
	if i.MinSleep <= 0 {
		i.MinSleep = time.Microsecond
	}
	if i.MaxSleep <= 0 {
		i.MaxSleep = 100 * time.Microsecond
	}
	if i.MaxSleep < i.MinSleep {
		i.MaxSleep = i.MinSleep
	}
	return i
}

// Config describes a loop.
type Config struct {
	Name string // for errors and stats
	// Pass does one pass of work and returns how many packets (or other
	// units of work) it handled; 0 means the pass found nothing to do.
	// It runs on the loop's thread only and must not block.
	Pass func() int
	// Drain, when set, runs once on the loop's thread after Stop, before
	// the loop exits: the place to flush and free what the loop holds.
	Drain func()
	// Flush, when set, runs on the loop's thread in place of a sleep's
	// start (Adaptive): after a pass that found nothing, when the loop
	// would sleep next. A pipelined pass leaves its output for the next
	// pass to send (host.Pipeline); Flush sends it and returns what it
	// handled, which counts as the pass's work (no sleep then). A loop
	// that does not sleep, or is spinning, never needs it: the next pass
	// follows at once.
	Flush func() int
	Idle  Idle
	// Doorbell, when set, lets other processes end the loop's idle
	// sleeps (Adaptive): see Doorbell.
	Doorbell *Doorbell
}

// Doorbell lets others wake a sleeping loop, as io_uring's SQPOLL thread
// is woken: before it sleeps the loop calls Arm, which raises the flags
// its producers read after they publish work (the workers' submission
// rings' wait flags) and says whether work arrived meanwhile (false: do
// not sleep). Armed, the loop sleeps in poll(2) on FDs for the sleep's
// length; a producer that finds the flag raised makes one of them
// readable. On waking the loop drains the readable descriptors and calls
// Disarm (it calls Disarm after an Arm that found work, too). Stop rings.
type Doorbell struct {
	FDs    []int       // descriptors readable when rung: non-blocking eventfds, or what Drain and Ring handle
	Arm    func() bool // raise the flags; false if work is already there
	Disarm func()      // lower them
	// Drain, when set, makes FDs[i], readable after a sleep, not
	// readable (an epoll set: take its events). Nil: the loop reads 8
	// bytes from it (an eventfd).
	Drain func(i int)
	// Ring, when set, wakes the sleeping loop from any goroutine (Stop
	// calls it). Nil: Stop writes 1 to FDs[0] (an eventfd).
	Ring func()
}

// Stats are a loop's counters. While the loop runs they are published
// every publishEvery passes and before each sleep, so they may lag by that
// much; after the loop has exited they are exact.
type Stats struct {
	Passes     uint64 // passes made
	BusyPasses uint64 // passes whose Pass returned > 0
	Packets    uint64 // sum of what Pass returned
	Sleeps     uint64 // sleeps taken (Adaptive)
	Rung       uint64 // of Sleeps: sleeps a doorbell ended early
	Refrained  uint64 // sleeps not taken: Doorbell.Arm found work
	// MaxGap is the longest time the loop took for gapEvery (8)
	// consecutive passes, not counting its own idle sleeps: a pass that
	// ran long, or the thread stopped by the garbage collector or the
	// kernel's scheduler. (The clock is read every 8th pass, so the
	// figure includes 8 ordinary passes, a few µs; a stall of ms, which
	// ruins a µs transport, shows as such.)
	MaxGap time.Duration
}

const publishEvery = 256

// gapEvery is how many passes apart the loop reads the clock for MaxGap.
const gapEvery = 8

// Loop is a running polling loop.
type Loop struct {
	name   string
	cfg    Config
	stop   atomic.Bool
	done   chan struct{}
	err    error // set before done is closed
	lcore  uint  // DPDK lcore id of the loop's thread
	cpus   []int // CPU affinity of the loop's thread, read at start
	tid    int   // the loop's thread id
	wait   func() error
	exited atomic.Bool

	passes, busy, packets, sleeps atomic.Uint64
	rung, refrained               atomic.Uint64
	maxGap                        atomic.Int64 // ns
}

var running struct {
	mu    sync.Mutex
	loops int
}

// SetGOMAXPROCS makes GOMAXPROCS at least pollers+2 and at least the
// number of CPUs, and returns the value set. Launch and Go call it; the
// daemon may call it earlier with its planned number of loops.
func SetGOMAXPROCS(pollers int) int {
	want := pollers + 2
	if n := runtime.NumCPU(); n > want {
		want = n
	}
	if runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	return runtime.GOMAXPROCS(0)
}

func newLoop(cfg Config) (*Loop, error) {
	if cfg.Pass == nil {
		return nil, fmt.Errorf("loop %q: no pass function", cfg.Name)
	}
	cfg.Idle = cfg.Idle.withDefaults()
	running.mu.Lock()
	running.loops++
	SetGOMAXPROCS(running.loops)
	running.mu.Unlock()
	return &Loop{name: cfg.Name, cfg: cfg, done: make(chan struct{})}, nil
}

// Launch starts a loop on EAL worker lcore `lcore` (see the package doc).
func Launch(lcore uint, cfg Config) (*Loop, error) {
	l, err := newLoop(cfg)
	if err != nil {
		return nil, err
	}
	started := make(chan struct{})
	err = dpdk.RemoteLaunch(lcore, func() {
		l.lcore = dpdk.LcoreID()
		l.cpus, l.tid = affinity(), unix.Gettid()
		setTimerSlack()
		close(started)
		l.run()
	})
	if err != nil {
		l.finish(err)
		return nil, fmt.Errorf("loop %q: %w", cfg.Name, err)
	}
	<-started
	l.wait = func() error { return dpdk.WaitLcore(lcore) }
	go l.waitExit()
	return l, nil
}

// Go starts a loop on a new OS thread pinned to `cpu` and registered with
// DPDK (see the package doc).
func Go(cpu int, cfg Config) (*Loop, error) {
	l, err := newLoop(cfg)
	if err != nil {
		return nil, err
	}
	if cpu < 0 || !cpuExists(cpu) {
		l.finish(nil)
		return nil, fmt.Errorf("loop %q: CPU %d does not exist", cfg.Name, cpu)
	}
	startErr := make(chan error, 1)
	exitErr := make(chan error, 1)
	go func() {
		// The goroutine never unlocks: when it returns, Go ends the thread,
		// so no other goroutine ever runs pinned or with this lcore id.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			startErr <- fmt.Errorf("pin to CPU %d: %w", cpu, err)
			return
		}
		id, err := dpdk.ThreadRegister()
		if err != nil {
			startErr <- err
			return
		}
		l.lcore = id
		l.cpus, l.tid = affinity(), unix.Gettid()
		setTimerSlack()
		startErr <- nil
		defer func() {
			dpdk.ThreadUnregister()
			var perr error
			if r := recover(); r != nil {
				perr = fmt.Errorf("loop %q: panic: %v", cfg.Name, r)
			}
			exitErr <- perr
		}()
		l.run()
	}()
	if err := <-startErr; err != nil {
		l.finish(err)
		return nil, fmt.Errorf("loop %q: %w", cfg.Name, err)
	}
	l.wait = func() error { return <-exitErr }
	go l.waitExit()
	return l, nil
}

// cpuExists asks the system, not the calling thread's affinity: that
// depends on which thread the goroutine runs on (EAL pins its main lcore
// to one CPU), and a process started from a pinned thread inherits its
// one CPU, so a CPU the machine has would seem not to exist.
func cpuExists(cpu int) bool {
	_, err := os.Stat("/sys/devices/system/cpu/cpu" + strconv.Itoa(cpu))
	return err == nil
}

// setTimerSlack lets the calling thread's sleeps end within 1 µs of the
// time asked (Linux rounds them up by 50 µs by default), for Adaptive.
func setTimerSlack() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) }

// affinity lists the CPUs the calling thread may run on.
func affinity() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// run is the loop itself, on the loop's thread.
func (l *Loop) run() {
	idle := l.cfg.Idle
	pass, flush := l.cfg.Pass, l.cfg.Flush
	var passes, busy, packets, sleeps uint64
	empty := 0
	sleep := idle.MinSleep
	var maxGap int64
	bell := newBell(l.cfg.Doorbell)
	publish := func() {
		l.passes.Store(passes)
		l.busy.Store(busy)
		l.packets.Store(packets)
		l.sleeps.Store(sleeps)
		l.maxGap.Store(maxGap)
		l.rung.Store(bell.rung)
		l.refrained.Store(bell.refrained)
	}
	last := nanotime()
	for !l.stop.Load() {
		if passes%gapEvery == 0 { // the clock costs tens of ns: read it every gapEvery passes
			now := nanotime()
			if gap := now - last; gap > maxGap {
				maxGap = gap
			}
			last = now
		}
		n := pass()
		if n == 0 && flush != nil && idle.Kind == Adaptive && empty+1 >= idle.SpinPasses {
			n = flush() // about to sleep: nothing may wait for the next pass
		}
		passes++
		if n > 0 {
			busy++
			packets += uint64(n)
			empty = 0
			sleep = idle.MinSleep
		} else if idle.Kind == Adaptive {
			empty++
			if empty >= idle.SpinPasses {
				if gap := nanotime() - last; gap > maxGap { // the pass before the sleep
					maxGap = gap
				}
				publish()
				if !bell.sleep(sleep) { // work came as the doorbell was armed
					empty, sleep = 0, idle.MinSleep
					continue
				}
				last = nanotime() // a sleep the loop chose is not a gap
				sleeps++
				if sleep *= 2; sleep > idle.MaxSleep {
					sleep = idle.MaxSleep
				}
			}
		}
		if passes%publishEvery == 0 {
			publish()
		}
	}
	if l.cfg.Drain != nil {
		l.cfg.Drain()
	}
	publish()
}

func (l *Loop) waitExit() { l.finish(l.wait()) }

func (l *Loop) finish(err error) {
	if l.exited.Swap(true) {
		return
	}
	running.mu.Lock()
	running.loops--
	running.mu.Unlock()
	l.err = err
	close(l.done)
}

// ErrStopTimeout is returned by Stop when the loop did not exit in time.
var ErrStopTimeout = errors.New("loop did not stop in time")

// Stop asks the loop to stop, waits up to timeout for it to drain and
// exit, and returns the error it exited with (a panic in Pass or Drain).
func (l *Loop) Stop(timeout time.Duration) error {
	l.stop.Store(true)
	if d := l.cfg.Doorbell; d != nil && d.Ring != nil { // a loop asleep on its doorbell stops now
		d.Ring()
	} else if d != nil && len(d.FDs) > 0 {
		_, _ = unix.Write(d.FDs[0], []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	select {
	case <-l.done:
		return l.err
	case <-time.After(timeout):
		return fmt.Errorf("loop %q: %w (%v)", l.name, ErrStopTimeout, timeout)
	}
}

// Done is closed when the loop has exited.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Name is the loop's name.
func (l *Loop) Name() string { return l.name }

// LcoreID is the DPDK lcore id of the loop's thread.
func (l *Loop) LcoreID() uint { return l.lcore }

// CPUs is the CPU affinity of the loop's thread, read when it started.
func (l *Loop) CPUs() []int { return l.cpus }

// Stats returns the loop's counters.
func (l *Loop) Stats() Stats {
	return Stats{
		Passes:     l.passes.Load(),
		BusyPasses: l.busy.Load(),
		Packets:    l.packets.Load(),
		Sleeps:     l.sleeps.Load(),
		Rung:       l.rung.Load(),
		Refrained:  l.refrained.Load(),
		MaxGap:     time.Duration(l.maxGap.Load()),
	}
}

// nanotime is a monotonic clock in ns (the runtime's; no allocation).
func nanotime() int64 { return int64(time.Since(clockBase)) }

var clockBase = time.Now()
