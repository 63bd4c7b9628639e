package sched

import "math"

// BalancedCutoffs is what ComputeCutoffsBalanced needs besides the
// lengths: the unscheduled bytes, a DATA packet's payload and the wire
// bytes it costs besides them, and the load of the link the cutoffs are
// for (the share of its time on the wire, scheduled bytes included).
type BalancedCutoffs struct {
	UnschedBytes, Payload, Overhead int
	Load                            float64
}

func (b BalancedCutoffs) wire(n int) float64 { return wireBytes(n, b.Payload, b.Overhead) }

// ComputeCutoffsBalanced chooses the cutoffs of levels unscheduled levels
// by load and delay together: those that minimize the predicted 99th
// percentile slowdown of the messages that fit in the unscheduled bytes
// (balancedModel), by coordinate descent from the kernel's equal-byte
// split, which is returned where nothing beats it. The last level's
// cutoff is maxLength; an empty histogram gives DefaultCutoffs.
func ComputeCutoffsBalanced(h *Histogram, levels, maxLength int, b BalancedCutoffs) Cutoffs {
	start := ComputeCutoffs(h, b.UnschedBytes, levels, maxLength)
	m := newBalancedModel(h, maxLength, b)
	if m == nil {
		return start
	}
	ends := m.ends(start)
	best := m.p99(ends)
	for improved := true; improved; {
		improved = false
		for k := 0; k < len(ends)-1; k++ {
			lo := 1
			if k > 0 {
				lo = ends[k-1] + 1
			}
			for e := lo; e < ends[k+1]; e++ {
				old := ends[k]
				ends[k] = e
				if v := m.p99(ends); v < best-1e-12 {
					best, improved = v, true
				} else {
					ends[k] = old
				}
			}
		}
	}
	return m.cutoffs(ends, maxLength)
}

// balancedModel predicts the slowdown of messages sent unscheduled under
// given cutoffs. A packet at level k of a strict-priority link waits on
// average W = ρR/((1-σ₍k-1₎)(1-σk)) (M/G/1, non-preemptive: σk the load
// of the levels at and above k, R the mean residual wire time of a
// packet, ρ the link's load), taken as waiting at all with probability ρ
// and then for an exponential time; a message's slowdown grows by its
// wait over its time on an idle network: its wire bytes and one way of
// the round trip (half the unscheduled bytes' wire time). Equal bytes per
// level (the kernel's rule) leaves the lower levels waiting behind the
// most load though their messages are only somewhat longer; equal counts
// put too much load on the few levels of the long ones.
type balancedModel struct {
	bs       []balancedBucket
	residual float64 // R, in wire bytes
	load     float64
}

type balancedBucket struct {
	upper uint32
	p     float64 // share of the messages that fit in the unscheduled bytes
	share float64 // of the link's time: the bucket's unscheduled wire bytes
	time  float64 // a message's idle time, in wire bytes
}

// newBalancedModel returns nil where h has no message that fits in the
// unscheduled bytes or fewer than two lengths.
func newBalancedModel(h *Histogram, maxLength int, b BalancedCutoffs) *balancedModel {
	m := &balancedModel{load: min(max(b.Load, 0.01), 0.99)}
	var all, fit, s2 float64
	payload := max(b.Payload, 1)
	oneWay, full := b.wire(b.UnschedBytes)/2, b.wire(payload)
	for i, n := range h.counts {
		if n == 0 {
			continue
		}
		size := int(min(histUpper(i), uint64(maxLength)))
		w := b.wire(size)
		all += float64(n) * w
		rest := b.wire(size % payload)
		s2 += float64(n) * (float64(size/payload)*full*full + rest*rest)
		bk := balancedBucket{upper: uint32(size), share: float64(n) * b.wire(min(size, b.UnschedBytes)), time: w + oneWay}
		if size <= b.UnschedBytes {
			bk.p = float64(n)
			fit += float64(n)
		}
		m.bs = append(m.bs, bk)
	}
	if fit == 0 || len(m.bs) < 2 {
		return nil
	}
	m.residual = s2 / (2 * all)
	for i := range m.bs {
		m.bs[i].share *= m.load / all
		m.bs[i].p /= fit
	}
	return m
}

// ends returns c as bucket ends: ends[k] is one past the last bucket of
// level k (0 the top); the last is len(bs).
func (m *balancedModel) ends(c Cutoffs) []int {
	var ends []int
	for k := NumPriorities - 1; k > 0 && c[k] != 0; k-- {
		e := len(m.bs)
		for j, bk := range m.bs {
			if bk.upper > c[k] {
				e = j
				break
			}
		}
		if e > 0 && (len(ends) == 0 || e > ends[len(ends)-1]) {
			ends = append(ends, e)
		}
	}
	if len(ends) == 0 {
		return []int{len(m.bs)}
	}
	ends[len(ends)-1] = len(m.bs)
	return ends
}

// cutoffs returns the cutoffs of ends.
func (m *balancedModel) cutoffs(ends []int, maxLength int) Cutoffs {
	var c Cutoffs
	for k, end := range ends {
		c[NumPriorities-1-k] = m.bs[end-1].upper
	}
	c[NumPriorities-len(ends)] = uint32(maxLength)
	return c
}

// p99 is the predicted 99th percentile of the slowdown, less 1, of the
// messages that fit in the unscheduled bytes, under ends.
func (m *balancedModel) p99(ends []int) float64 {
	wait := make([]float64, len(m.bs)) // mean wait of those that wait, per bucket
	i, above := 0, 0.0
	for _, end := range ends {
		sigma := above
		for j := i; j < end; j++ {
			sigma += m.bs[j].share
		}
		if sigma >= 1 {
			return math.Inf(1)
		}
		wk := m.residual / ((1 - above) * (1 - sigma))
		for ; i < end; i++ {
			wait[i] = wk
		}
		above = sigma
	}
	tail := func(x float64) float64 {
		var t float64
		for j, bk := range m.bs {
			if bk.p > 0 {
				t += bk.p * m.load * math.Exp(-x*bk.time/wait[j])
			}
		}
		return t
	}
	lo, hi := 0.0, 1.0
	for tail(hi) > 0.01 && hi < 1e9 {
		hi *= 2
	}
	for range 50 {
		if mid := (lo + hi) / 2; tail(mid) > 0.01 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
