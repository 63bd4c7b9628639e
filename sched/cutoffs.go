package sched

import (
	"math"
	"math/bits"
)

// NumPriorities is the number of Homa priority levels; 7 is the highest.
const NumPriorities = 8

// Cutoffs are unscheduled priority cutoffs as carried by a CUTOFFS packet:
// a message of length L is sent unscheduled at the highest priority i
// whose Cutoffs[i] ≥ L. Entry 0 is treated as infinity; 0 marks a level
// not used for unscheduled bytes.
type Cutoffs [NumPriorities]uint32

// DefaultCutoffs returns the kernel's defaults: [7]=200, [6]=2800,
// [5]=15000, [4]=1,000,000; levels 0..3 are for scheduled bytes.
func DefaultCutoffs() Cutoffs {
	return Cutoffs{7: 200, 6: 2800, 5: 15_000, 4: 1_000_000}
}

// PeerDefaultCutoffs returns what a sender assumes before a peer's CUTOFFS
// arrive: every unscheduled byte at priority 6 (kernel homa_peer_find).
func PeerDefaultCutoffs() Cutoffs { return Cutoffs{6: math.MaxUint32} }

// Priority returns the unscheduled priority of a message of length bytes.
func (c *Cutoffs) Priority(length int) int {
	for i := NumPriorities - 1; i > 0; i-- {
		if int64(c[i]) >= int64(length) {
			return i
		}
	}
	return 0
}

// MaxSchedPrio returns the highest level below every unscheduled level
// (3 for DefaultCutoffs), the top level a receiver grants at.
func (c *Cutoffs) MaxSchedPrio() int {
	for i := 1; i < NumPriorities; i++ {
		if c[i] != 0 {
			return max(i-1, 0)
		}
	}
	return 0
}

// Histogram counts message lengths in log-linear buckets (8 per power of
// two, so bucket bounds are within 12.5% of any length). Record does not
// allocate.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
}

const (
	histSub     = 8                      // buckets per power of two
	histExact   = 2 * histSub            // lengths below this have a bucket each
	histBuckets = histExact + 28*histSub // lengths up to 2^32
)

// histBucket returns the bucket of length n ≥ 1: exact below 16, then 8
// per power of two.
func histBucket(n uint64) int {
	if n < histExact {
		return int(n)
	}
	e := bits.Len64(n) - 1 // 2^e ≤ n < 2^(e+1), e ≥ 4
	sub := int(n>>(e-3)) & (histSub - 1)
	return histExact + (e-4)*histSub + sub
}

// histUpper returns the largest length in bucket b.
func histUpper(b int) uint64 {
	if b < histExact {
		return uint64(b)
	}
	e, sub := (b-histExact)/histSub+4, uint64((b-histExact)%histSub)
	return (uint64(histSub)+sub+1)<<(e-3) - 1
}

// Record counts one message of length bytes (lengths < 1 count as 1).
func (h *Histogram) Record(length int) {
	if length < 1 {
		length = 1
	}
	b := histBucket(uint64(length))
	if b >= histBuckets {
		b = histBuckets - 1
	}
	h.counts[b]++
	h.total++
}

// Total returns the number of messages recorded.
func (h *Histogram) Total() uint64 { return h.total }

// Reset forgets every recorded length.
func (h *Histogram) Reset() { *h = Histogram{} }

// ComputeCutoffs divides the unscheduled bytes implied by h (each message
// sends min(length, unschedBytes) unscheduled) into levels equal shares,
// shorter messages on higher priorities, using the top levels 7, 6, ...:
// kernel Homa's rule (util/homa_prio). The last level's cutoff is
// maxLength so every message has a level. With an empty histogram it
// returns DefaultCutoffs. levels is clamped to 1..NumPriorities-1.
func ComputeCutoffs(h *Histogram, unschedBytes, levels, maxLength int) Cutoffs {
	return ComputeCutoffsBy(h, levels, maxLength, UnschedBytesWeight(unschedBytes), 1)
}

// CutoffWeight is what one message of a length counts toward its level's
// share when cutoffs are computed.
type CutoffWeight func(length int) float64

// UnschedBytesWeight counts a message's unscheduled message bytes (the
// kernel's rule).
func UnschedBytesWeight(unschedBytes int) CutoffWeight {
	return func(n int) float64 { return float64(min(n, unschedBytes)) }
}

// UnschedWireWeight counts a message's unscheduled bytes as the wire
// carries them: each packet of payload message bytes costs overhead more
// (headers, preamble, FCS, gap). Where most messages are a few hundred
// bytes the headers are most of the load: the top level, with most of the
// messages, carries far more than its share of the link by message bytes
// alone, and every level below it waits behind that (the Homa paper's
// simulator counts wire bytes for this reason).
func UnschedWireWeight(unschedBytes, payload, overhead int) CutoffWeight {
	return func(n int) float64 { return wireBytes(min(n, unschedBytes), payload, overhead) }
}

// wireBytes is the wire bytes of n message bytes in packets of payload
// bytes that cost overhead more each.
func wireBytes(n, payload, overhead int) float64 {
	payload = max(payload, 1)
	return float64(n + (n+payload-1)/payload*overhead)
}

// CountWeight counts messages: every level takes an equal share of them.
func CountWeight(int) float64 { return 1 }

// ComputeCutoffsBy divides the messages of h into levels levels by weight,
// shorter messages on higher priorities (7, 6, ...); otherwise as
// ComputeCutoffs. Each level takes skew times the share of the level
// above it (the Homa paper simulator's unschedPrioUsageWeight): 1 gives
// equal shares, below 1 the higher levels carry more.
func ComputeCutoffsBy(h *Histogram, levels, maxLength int, weight CutoffWeight, skew float64) Cutoffs {
	if h.total == 0 {
		return DefaultCutoffs()
	}
	levels = min(max(levels, 1), NumPriorities-1)
	var total float64
	for b, n := range h.counts {
		if n != 0 {
			total += float64(n) * weight(int(min(histUpper(b), math.MaxInt32)))
		}
	}
	if !(skew > 0) {
		skew = 1
	}
	// ends[k] is the cumulative share at the end of level k (0 the top).
	var ends [NumPriorities]float64
	sum, w := 0.0, 1.0
	for k := range levels {
		sum += w
		ends[k] = sum
		w *= skew
	}
	var c Cutoffs
	level, cum := 0, 0.0
	for b, n := range h.counts {
		if n == 0 || level >= levels-1 {
			continue
		}
		cum += float64(n) * weight(int(min(histUpper(b), math.MaxInt32)))
		if cum >= total*ends[level]/sum {
			c[NumPriorities-1-level] = uint32(min(histUpper(b), uint64(maxLength)))
			level++
		}
	}
	c[NumPriorities-1-level] = uint32(maxLength)
	return c
}
