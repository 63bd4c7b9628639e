package rate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"golang.org/x/sys/unix"
)

// Homa's side of the rate scenario: worker goroutines with sessions of
// their own through the daemon, an echo phase measured for RPCs per
// second, and the phase that holds RPCs outstanding for the daemon's
// memory.

// ratePortBase is the server port of the first rate worker; worker i's
// is ratePortBase + i.
const ratePortBase = 100

const (
	// rateStall ends a worker that has made no progress for so long.
	rateStall = 10 * time.Second
	// workerEndWait bounds the wait for the workers to end once told
	// to; longer than rateStall, so a stuck worker ends first.
	workerEndWait = 30 * time.Second
	// holdBurst is how many Sends a holding worker makes between looks
	// at its server session (whose pool pages the requests take).
	holdBurst = 32
	// holdQuiet is how long the held count must stay put, once every
	// worker has sent (or been refused), before the daemon's bounds are
	// taken to have stopped the rest.
	holdQuiet = 50 * time.Millisecond
)

// errWorkersStuck: workers did not end when told to; their sessions are
// still in use, so they are not closed.
var errWorkersStuck = errors.New("workers did not end")

// rateWorker is one Homa worker of the rate scenario: a client session
// on 10.0.0.1 and a server session on 10.0.0.2 bound to a port of its
// own, to which the client's requests go. Each phase runs it on a
// goroutine of its own (one at a time: the sessions are not safe for
// concurrent use), the harness confined to one CPU (confine).
type rateWorker struct {
	*homapeer.WorkerPair
	msg  []byte       // every request's bytes; the echo's too
	done atomic.Int64 // RPCs completed in echo phases (read by the coordinator)
}

// dialRateWorkers attaches cfg.Workers workers to the daemon serving dir.
func dialRateWorkers(dir string, cfg Config) ([]*rateWorker, error) {
	var ws []*rateWorker
	inFlight := max(cfg.PerWorker, heldShare(cfg.Held, cfg.Workers, 0)) * cfg.Size
	for i := range cfg.Workers {
		p, err := homapeer.DialPairPort(dir, uint16(ratePortBase+i), cfg.Size, inFlight)
		if err != nil {
			closeRateWorkers(ws)
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		ws = append(ws, &rateWorker{WorkerPair: p, msg: perf.Payload(cfg.Size)})
	}
	return ws, nil
}

func closeRateWorkers(ws []*rateWorker) {
	for _, w := range ws {
		w.Close()
	}
}

// heldShare is worker i's share of held RPCs among workers.
func heldShare(held, workers, i int) int {
	n := held / workers
	if i < held%workers {
		n++
	}
	return n
}

// confine pins every thread of this process to cpu and runs Go on one P,
// so that the workers' goroutines take turns on that CPU as Go schedules
// them (one that finds nothing to do yields to the next), one busy thread
// beside the daemon's own threads there, as in rtt and throughput; the
// function it returns undoes it. Call it after the daemon has started:
// a child process inherits its parent thread's CPUs.
func confine(cpu int) (func(), error) {
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("the harness's CPUs: %w", err)
	}
	one.Set(cpu)
	prev := runtime.GOMAXPROCS(1)
	undo := func() {
		pinThreads(&old)
		runtime.GOMAXPROCS(prev)
	}
	if err := pinThreads(&one); err != nil {
		undo()
		return nil, fmt.Errorf("confine the harness to CPU %d: %w", cpu, err)
	}
	return undo, nil
}

// pinThreads sets the CPUs of every thread of this process (threads made
// later inherit them from the thread that makes them).
func pinThreads(set *unix.CPUSet) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it has exited
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}

// rateCtl is what the coordinator tells the workers of a phase, and what
// they tell it.
type rateCtl struct {
	stop    atomic.Bool  // echo: send no more; end once the RPCs outstanding have
	release atomic.Bool  // hold: answer the held requests, and every later one at once
	held    atomic.Int64 // hold: requests the server sessions hold unanswered
	sending atomic.Int64 // hold: workers still sending their share
}

// serve takes the requests w's server session has received: it checks
// each, then answers it with the same bytes, or, while holding (held
// not nil), gives its pool page back and keeps it in *held, counted in
// c.held. A reply the daemon refused (its RPC had ended) is counted in
// *refused, or is an error when refused is nil. It returns the requests
// and refusals taken.
func (w *rateWorker) serve(held *[]*client.Message, c *rateCtl, refused *int) (int, error) {
	n := 0
	for {
		req, err := w.Server.Receive(0)
		if err == client.ErrWaitTimeout {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("server worker: %w", err)
		}
		if !req.Request && req.Err != nil && refused != nil {
			*refused++
			n++
			continue
		}
		if req.Err != nil || !req.Request {
			return n, fmt.Errorf("server worker received %d bytes (err %v, request %v)", len(req.Data), req.Err, req.Request)
		}
		if !bytes.Equal(req.Data, w.msg) {
			return n, fmt.Errorf("server worker received a request of %d bytes that differs from what was sent", len(req.Data))
		}
		n++
		if held != nil {
			req.Release() // the reply needs the request's id, not its pages
			*held = append(*held, req)
			c.held.Add(1)
			continue
		}
		err = w.Server.ReplyAsync(req, req.Data)
		req.Release()
		if err != nil {
			return n, fmt.Errorf("reply: %w", err)
		}
	}
}

// responses takes the results w's client session has received: the
// RPCs completed (each response checked) and failed; a failure is an
// error unless failOK.
func (w *rateWorker) responses(failOK bool) (done, failed int, err error) {
	for {
		resp, err := w.Client.Receive(0)
		if err == client.ErrWaitTimeout {
			return done, failed, nil
		}
		if err != nil {
			return done, failed, fmt.Errorf("client worker: %w", err)
		}
		if resp.Err != nil {
			if !failOK {
				return done, failed, fmt.Errorf("RPC: %w", resp.Err)
			}
			failed++
			continue
		}
		ok := bytes.Equal(resp.Data, w.msg)
		resp.Release()
		if !ok {
			return done, failed, fmt.Errorf("a response differs from its request")
		}
		done++
	}
}

// echo keeps k RPCs outstanding towards w's own server session, which
// answers each with its bytes, until c.stop; it returns once its RPCs
// have ended.
func (w *rateWorker) echo(k int, c *rateCtl) error {
	out := 0
	last := time.Now()
	for {
		stop := c.stop.Load()
		sent := 0
		for ; !stop && out < k; sent++ {
			if _, err := w.Client.Send(w.Dst, w.msg); err != nil {
				return fmt.Errorf("send: %w", err)
			}
			out++
		}
		served, err := w.serve(nil, c, nil)
		if err != nil {
			return err
		}
		done, _, err := w.responses(false)
		if err != nil {
			return err
		}
		out -= done
		w.done.Add(int64(done))
		if stop && out == 0 {
			return nil
		}
		if sent+served+done > 0 {
			last = time.Now()
			continue
		}
		if time.Since(last) > rateStall {
			return fmt.Errorf("no progress for %v with %d RPCs outstanding", rateStall, out)
		}
		runtime.Gosched()
	}
}

// holdWorker is one worker's part of a hold, read once it has ended.
type holdWorker struct {
	accepted       int
	refusal        error // the Send the daemon refused, which ended its sending
	completed      int64
	failed         int64
	repliesRefused int // replies to held requests whose RPCs had ended
}

// hold sends share requests, holdBurst at a time, while w's server
// session takes each and answers none, until c.release (or a Send the
// daemon refuses, which ends its sending); then it answers the held ones
// and every later one at once, and returns when its RPCs have ended.
func (w *rateWorker) hold(share int, c *rateCtl, r *holdWorker) error {
	var held []*client.Message
	out := 0
	sending, released := true, false
	told := false // c.sending counts this worker no more
	last := time.Now()
	for {
		progressed := 0
		if !released && c.release.Load() {
			released, sending = true, false
			for _, req := range held {
				if err := w.Server.ReplyAsync(req, w.msg); err != nil {
					return fmt.Errorf("reply: %w", err)
				}
			}
			progressed += len(held)
			held = nil
		}
		for b := 0; sending && b < holdBurst && r.accepted < share; b++ {
			_, err := w.Client.Send(w.Dst, w.msg)
			var refused *client.CodeError
			if errors.As(err, &refused) {
				r.refusal, sending = err, false
				break
			}
			if err != nil {
				return fmt.Errorf("send: %w", err)
			}
			r.accepted++
			out++
			progressed++
		}
		if sending && r.accepted == share {
			sending = false
		}
		if !sending && !told {
			c.sending.Add(-1) // sending only ever turns off
			told = true
		}
		hp := &held
		if released {
			hp = nil
		}
		served, err := w.serve(hp, c, &r.repliesRefused)
		if err != nil {
			return err
		}
		done, failed, err := w.responses(true)
		if err != nil {
			return err
		}
		out -= done + failed
		r.completed += int64(done)
		r.failed += int64(failed)
		if released && out == 0 {
			return nil
		}
		if progressed+served+done+failed > 0 {
			last = time.Now()
			continue
		}
		if time.Since(last) > rateStall {
			return fmt.Errorf("no progress for %v with %d RPCs outstanding, %d held", rateStall, out, len(held))
		}
		runtime.Gosched()
	}
}
