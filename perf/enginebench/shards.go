package enginebench

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Sharded runs a case on a client and a server host sharded alike
// (engine.Shard): shard i of each on goroutine i, locked to its thread,
// every frame between them steered by engine.FrameShard, each host's
// shards sharing its grant view and link clock (sched.GrantShare,
// sched.LinkClock), as a sharded port's do. Hosts sharded
// alike share nothing: client shard i's RPCs are server shard i's, so a
// frame steered to another shard, or an ack handed over, is an error
// here (Strays).
type Sharded struct {
	c      Case
	pairs  []*pair
	req    []byte
	resp   []byte
	strays atomic.Int64
}

// NewSharded sets up c on shards shards a host and warms each up.
func NewSharded(c Case, shards int) (*Sharded, error) {
	if shards < 1 || c.Window < 1 || c.ReqLen < 1 || c.RespLen < 1 {
		return nil, fmt.Errorf("enginebench: case %q on %d shards: shards, window and lengths must be positive", c.Name, shards)
	}
	s := &Sharded{c: c, req: make([]byte, c.ReqLen), resp: make([]byte, c.RespLen)}
	// Each host's shards share its grant view and link clock.
	cg, sg := sched.NewGrantShare(shards), sched.NewGrantShare(shards)
	cl, sl := &sched.LinkClock{}, &sched.LinkClock{}
	for i := range shards {
		stray := func(int, netip.Addr, uint64, uint16) { s.strays.Add(1) }
		cs := engine.Shard{Index: i, Count: shards, ForwardAck: stray, Grants: cg, Link: cl}
		ss := engine.Shard{Index: i, Count: shards, ForwardAck: stray, Grants: sg, Link: sl}
		p, err := newShardPair(max(c.ReqLen, c.RespLen), cs, ss)
		if err != nil {
			return nil, err
		}
		steer := func(f []byte) {
			var l wire.Link
			wire.ParseLink(f, &l)
			if owner, all, ok := engine.FrameShard(&l, shards, nil); !ok || !all && owner != i {
				s.strays.Add(1)
			}
		}
		p.toS.steer, p.toC.steer = steer, steer
		if err := p.rpcs(2*c.Window, c.Window, s.req, s.resp); err != nil {
			return nil, err
		}
		s.pairs = append(s.pairs, p)
	}
	return s, nil
}

// Measure runs n RPCs on each shard at once and returns the figures of
// all: the RPCs of every shard in the wall time (RPCs/Seconds: RPCs per
// second), Gbps over every shard, ns per RPC and per packet event of one
// shard's core (the wall time over its share).
func (s *Sharded) Measure(n int) (Result, error) {
	if n < 1 {
		return Result{}, errors.New("enginebench: measure at least one RPC")
	}
	var ev0 uint64
	for _, p := range s.pairs {
		e, _, _ := p.packets()
		ev0 += e
	}
	errs := make([]error, len(s.pairs))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, p := range s.pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs[i] = p.rpcs(n, s.c.Window, s.req, s.resp)
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if k := s.strays.Load(); k > 0 {
		return Result{}, fmt.Errorf("enginebench: %d frames or acks crossed shards of hosts sharded alike", k)
	}
	var ev uint64
	for _, p := range s.pairs {
		e, _, _ := p.packets()
		ev += e
	}
	total := n * len(s.pairs)
	r := Result{Case: fmt.Sprintf("%s/%dshards", s.c.Name, len(s.pairs)), RPCs: total, Seconds: el.Seconds(),
		NsPerRPC: float64(el.Nanoseconds()) * float64(len(s.pairs)) / float64(total),
		NsPerPkt: float64(el.Nanoseconds()) * float64(len(s.pairs)) / float64(ev-ev0)}
	if s.c.streaming {
		r.Gbps = float64(s.c.ReqLen) * 8 * float64(total) / el.Seconds() / 1e9
	}
	return r, nil
}

// RunSharded measures c on shards shards a host for about d, as Run
// does (the count is RPCs per shard).
func RunSharded(c Case, shards int, d time.Duration) (Result, error) {
	s, err := NewSharded(c, shards)
	if err != nil {
		return Result{}, err
	}
	return measureFor(s.Measure, d)
}
