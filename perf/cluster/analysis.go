package cluster

import (
	"slices"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// The figures of a run from when each message was sent and delivered,
// the same for the engine's runs and for ns-3's (ns3.go), so that both
// sides are measured alike.

// Collective is the completion of one kind of collective operation (the
// AI mix's all-reduces or all-to-all rounds) over its ideal: an operation
// runs from its start to its last message's delivery.
//
// An all-reduce's ideal is its steps one after another, each the idle
// network's time of a chunk over the ring's slowest hop (a step at line
// rate); its ratio is so also its mean step time over the ideal step. An
// all-to-all round's ideal is one message's idle time plus, at line rate,
// the other messages its receivers take in after it.
type Collective struct {
	Ops     int     `json:"ops"`      // started in the measured window
	Done    int     `json:"done"`     // of them, finished
	P50     float64 `json:"p50"`      // completion over ideal
	P99     float64 `json:"p99"`      // ...
	Mean    float64 `json:"mean"`     // ...
	IdealUs float64 `json:"ideal_us"` // the median operation's ideal
	Steps   int     `json:"steps"`    // in an operation's ideal: a ring's steps, a round's 1
}

// window is the measured part of a run whose arrivals span end ns:
// messages offered in the middle 90% (the first 5% warm the queues up,
// the last 5% drain them).
func window(end int64) (lo, hi int64) { return end / 20, end - end/20 }

// analyze fills r's message figures from msgs' send (start) and delivery
// (done) times, -1 where a message was not sent or not delivered: the
// slowdown by size of the workload's messages (all of W1-W5, the AI mix's
// RPCs and background), its collectives, the backlog over time.
func analyze(r *Result, cfg Config, msgs []workload.Msg, start, done []int64, end int64) {
	d := newIdle(cfg)
	rack := func(h int) int { return h / cfg.HostsPerRack }
	lo, hi := window(end)
	var samples []Sample
	type op struct {
		kind       workload.Kind
		size       int
		at, last   int64
		ideal      int64
		unfinished bool
	}
	ops := map[int32]*op{}
	for i, m := range msgs {
		measured := m.At >= lo && m.At < hi
		if !measured {
			continue
		}
		if m.Op < 0 {
			if done[i] >= 0 {
				samples = append(samples, Sample{Size: m.Size, Ns: done[i] - start[i], IdleNs: d.ns(m.Size, rack(m.Src) != rack(m.Dst))})
			}
			continue
		}
		o := ops[m.Op]
		if o == nil {
			o = &op{kind: m.Kind, size: m.Size, at: m.At}
			ops[m.Op] = o
		}
		if done[i] < 0 {
			o.unfinished = true
		}
		o.last = max(o.last, done[i])
		o.ideal = max(o.ideal, d.ns(m.Size, rack(m.Src) != rack(m.Dst)))
	}
	r.Measured = len(samples)
	r.Buckets = Buckets(samples)
	r.Short, r.Largest = nil, nil
	if len(r.Buckets) > 0 {
		b := r.Buckets[len(r.Buckets)-1]
		r.Largest = &b
	}
	var short []Sample
	for _, x := range samples {
		if x.Size <= 1000 {
			short = append(short, x)
		}
	}
	if len(short) > 0 {
		b := summarize(short)
		r.Short = &b
	}
	// The ideals: a ring's steps; a round's first message, then the rest
	// into each receiver at line rate.
	steps := int64(2 * (cfg.AI.Group - 1))
	var ratios [2][]float64
	var ideals [2][]float64
	var count, finished [2]int
	for _, o := range ops {
		k := 0
		ideal := o.ideal * steps
		if o.kind == workload.KindAllToAll {
			k = 1
			ideal = o.ideal + int64(cfg.AI.Group-2)*txNs(int(WireBytes(o.size)), cfg.LinkBps)
		}
		count[k]++
		ideals[k] = append(ideals[k], float64(ideal))
		if !o.unfinished {
			finished[k]++
			ratios[k] = append(ratios[k], float64(o.last-o.at)/float64(ideal))
		}
	}
	for k, dst := range []**Collective{&r.AllReduce, &r.AllToAll} {
		*dst = nil
		if count[k] == 0 {
			continue
		}
		c := &Collective{Ops: count[k], Done: finished[k], Steps: max(int(steps)*(1-k), 1)}
		slices.Sort(ideals[k])
		c.IdealUs = ideals[k][(len(ideals[k])-1)/2] / 1e3
		if xs := ratios[k]; len(xs) > 0 {
			slices.Sort(xs)
			sum := 0.0
			for _, x := range xs {
				sum += x
			}
			c.P50, c.P99, c.Mean = quantile(xs, 0.5), quantile(xs, 0.99), sum/float64(len(xs))
		}
		*dst = c
	}
	r.Backlog = backlogOf(msgs, start, done, end)
	var offered int64
	for _, m := range msgs {
		offered += int64(m.Size)
	}
	var ok bool
	r.BacklogGrowth, ok = growth(r.Backlog, float64(end)/1e6, float64(offered)/float64(max(end, 1)))
	r.KeepsUp = ok && r.BacklogGrowth <= 1-KeepUpFraction
}

// backlogOf is the bytes of the messages sent and not yet delivered, 200
// times over the arrivals' span end (every 10 µs at least), so that a
// run of a few ms has its growth too. A message never delivered stays in
// it.
func backlogOf(msgs []workload.Msg, start, done []int64, end int64) []BacklogPoint {
	every := max(end/200, 10_000)
	var pts []BacklogPoint
	n := int(end/every) + 1
	diff := make([]int64, n+1)                                                 // bytes in, then out, by sample
	slot := func(t int64) int { return int(min((t+every-1)/every, int64(n))) } // the first sample at or after t
	for i, m := range msgs {
		if start[i] < 0 {
			continue
		}
		diff[slot(start[i])] += int64(m.Size)
		if done[i] >= 0 {
			diff[slot(done[i]+1)] -= int64(m.Size) // delivered at t: gone from the sample at t
		}
	}
	var acc int64
	for k := 0; k < n; k++ {
		acc += diff[k]
		if k == 0 {
			continue
		}
		pts = append(pts, BacklogPoint{Ms: float64(int64(k)*every) / 1e6, Bytes: acc})
	}
	return pts
}
