package host

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"golang.org/x/sys/unix"
)

// Copier is a thread that makes hosts' receive copies (the bytes of
// each DATA packet into its message's buffer: a worker's pool pages, or
// the heap) instead of their polling loops, which hand them over and go
// on (engine.Copier; docs/design.md#shards-and-the-receive-copier has
// the rules). Each host has a
// lane of its own (Lane): a single-producer ring the host's loop hands
// copies over, and the number of the last one done. The copier serves
// its lanes in turn, each lane's copies in order. The host keeps each
// frame a copy reads (its mbuf) until the copier is past it, then frees
// it in its next pass; the engine delivers a message once its last copy
// is done.
//
// Pinned to a CPU of its own, it takes the copies' memory traffic off the
// loops' cores: what a DMA engine (Intel DSA, I/OAT) would do in
// hardware, which the same interface would drive. One thread a CPU serves
// every host that copies there (two threads on one CPU would take turns
// by the scheduler's time slices, the copies of one waiting out the
// other's). It spins while copies come, then sleeps in steps of copierNap
// once idle for copierIdle.
type Copier struct {
	lanes  atomic.Pointer[[]*CopyLane] // replaced whole by Lane
	naps   atomic.Uint64
	stop   atomic.Bool
	exited chan struct{}
	cpu    int
}

// CopyLane is one host's queue to a Copier (host.Config.Copier).
type CopyLane struct {
	c      *Copier
	jobs   *handRing[copyJob]
	issued uint64 // the host loop's: the number of the last copy handed over
	done   atomic.Uint64
	bytes  atomic.Uint64
}

type copyJob struct {
	dst, src []byte
	seq      uint64
}

// copierEntries is the copies a lane queues: a few RX bursts of jumbo
// frames.
const copierEntries = 4096

// copierIdle is how long a copier spins without work before it naps;
// copierNap is one nap.
const (
	copierIdle = time.Millisecond
	copierNap  = 20 * time.Microsecond
)

// NewCopier starts a copier thread, pinned to cpu (-1: not pinned).
func NewCopier(cpu int) (*Copier, error) {
	c := &Copier{exited: make(chan struct{}), cpu: cpu}
	c.lanes.Store(&[]*CopyLane{})
	started := make(chan error, 1)
	go c.run(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// Lane adds a lane for one host. Call it before the host's loop starts.
func (c *Copier) Lane() *CopyLane {
	l := &CopyLane{c: c, jobs: newHandRing[copyJob](copierEntries)}
	lanes := append(slices.Clone(*c.lanes.Load()), l)
	c.lanes.Store(&lanes)
	return l
}

func (c *Copier) run(started chan<- error) {
	defer close(c.exited)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if c.cpu >= 0 {
		var set unix.CPUSet
		set.Set(c.cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			started <- fmt.Errorf("copier: pinning to CPU %d: %w", c.cpu, err)
			return
		}
	}
	started <- nil
	idleSince := time.Time{}
	for spins := 0; ; {
		worked := false
		for _, l := range *c.lanes.Load() {
			for k := 0; k < 32; k++ { // a burst, then the next lane
				j, ok := l.jobs.pop()
				if !ok {
					break
				}
				copy(j.dst, j.src)
				l.bytes.Add(uint64(len(j.src)))
				l.done.Store(j.seq)
				worked = true
			}
		}
		if worked {
			spins, idleSince = 0, time.Time{}
			continue
		}
		if c.stop.Load() {
			return
		}
		if spins++; spins < 1024 {
			continue
		}
		spins = 0
		if idleSince.IsZero() {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= copierIdle {
			c.naps.Add(1)
			time.Sleep(copierNap)
		}
	}
}

// Copy hands the copy of src into dst to the thread (engine.Copier); 0
// when the lane is full.
func (l *CopyLane) Copy(dst, src []byte) uint64 {
	seq := l.issued + 1
	if !l.jobs.push(copyJob{dst, src, seq}) {
		return 0
	}
	l.issued = seq
	return seq
}

// Done is the number of the lane's last copy finished (engine.Copier).
func (l *CopyLane) Done() uint64 { return l.done.Load() }

// Settle waits until every copy handed to the lane is done.
func (l *CopyLane) Settle() {
	for l.done.Load() < l.issued {
		runtime.Gosched()
	}
}

// CopierStats are a lane's counts.
type CopierStats struct {
	Copies, Bytes uint64 // done
	Naps          uint64 // the copier's sleeps while idle (all its lanes)
}

// Stats returns the lane's counts. Any thread.
func (l *CopyLane) Stats() CopierStats {
	return CopierStats{Copies: l.done.Load(), Bytes: l.bytes.Load(), Naps: l.c.naps.Load()}
}

// Close stops the thread once its lanes are empty. Call it after the
// hosts' loops stopped.
func (c *Copier) Close() {
	c.stop.Store(true)
	<-c.exited
}

// hostCopier is the host's engine.Copier: the copier's, noting each copy
// taken for the frame being dispatched, whose mbuf the host then keeps
// (Host.retain) until the copier is past it.
type hostCopier struct{ h *Host }

func (hc hostCopier) Copy(dst, src []byte) uint64 {
	h := hc.h
	if h.copyInLoop {
		return 0 // src is not a frame the host keeps (its scratch buffer, a copy)
	}
	seq := h.copier.Copy(dst, src)
	if seq != 0 {
		h.retainSeq = seq
	}
	return seq
}

func (hc hostCopier) Done() uint64 { return hc.h.copier.Done() }

// retained is a received frame kept until the copier is past seq.
type retained struct {
	seq uint64
	m   *dpdk.Mbuf
}

// afterDispatch frees m, the frame just given to the engine, or keeps it
// while a copy reads it.
func (h *Host) afterDispatch(m *dpdk.Mbuf) {
	if h.retainSeq == 0 {
		h.free = append(h.free, m)
		return
	}
	h.retainedFrames = append(h.retainedFrames, retained{h.retainSeq, m})
	h.retainSeq = 0
}

// pollCopies frees the frames the copier is done with and lets the
// engine deliver the messages whose copies are done; each pass.
func (h *Host) pollCopies() {
	if h.copier == nil {
		return
	}
	if len(h.retainedFrames) > 0 {
		done := h.copier.Done()
		k := 0
		for ; k < len(h.retainedFrames) && h.retainedFrames[k].seq <= done; k++ {
			h.free = append(h.free, h.retainedFrames[k].m)
		}
		if k > 0 {
			n := copy(h.retainedFrames, h.retainedFrames[k:])
			clear(h.retainedFrames[n:])
			h.retainedFrames = h.retainedFrames[:n]
		}
	}
	h.ep.PollCopies()
}

// CopyMark is the number of the last receive copy handed to the host's
// copier; 0 without one (hub.Host).
func (h *Host) CopyMark() uint64 {
	if h.copier == nil {
		return 0
	}
	return h.copier.issued
}

// CopiesPast reports whether the copier is past copy mark, and lets the
// engine deliver and give back what waited for those copies first
// (hub.Host: a worker's region is let go only then). It never waits.
func (h *Host) CopiesPast(mark uint64) bool {
	if h.copier == nil {
		return true
	}
	if h.copier.Done() < mark {
		return false
	}
	h.pollCopies()
	return true
}
