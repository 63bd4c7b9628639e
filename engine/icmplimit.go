package engine

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// The port unreachables an endpoint sends are rate limited as Linux
// limits its ICMP errors, or a packet to an unbound port from a spoofed
// address would make the endpoint a reflector (one unreachable of up to
// 90 bytes per packet, at the packets' rate):
//
//   - per destination, a token bucket: one unreachable per
//     ICMPRate.PerDestNs (1 s, Linux's icmp_ratelimit), PerDestBurst (6,
//     Linux's XRLIM_BURST_FACTOR) at once;
//   - over all destinations, another: PerSec a second (1,000, Linux's
//     icmp_msgs_per_sec), Burst at once (50, icmp_msgs_burst).
//
// As Linux does since 6.12, the limit over all is asked first without
// spending, then the destination's spends, then the one over all: an
// unreachable the destination's limit holds back costs the others
// nothing. ICMP and ICMPv6 share both limits.
//
// The per-destination buckets are a fixed table (ICMPRate.Buckets, 4,096)
// indexed by a hash of the address under a seed drawn at random when the
// table is made; a bucket holds no address. Addresses that hash to one
// bucket share its allowance: a destination is never sent more than its
// limit, and one that shares a bucket with another's flood is sent less.
// A stranger spoofing many addresses thus holds no more than the table;
// what it draws is bounded by the limit over all, and while that is
// spent the unreachables honest clients would be sent are held back too
// (they learn of the closed port by their RPC's timeout instead).
//
// A bucket is a single word (the generic cell rate algorithm: the time
// its allowance is spent until), updated by compare-and-swap, so the
// shards of a port share one limiter (Shard.ICMP) without a lock. Time
// is the engine's clock, read once per call (Config.Clock).

// ICMPRate configures the limits on the port unreachables an endpoint
// sends. Zero fields take DefaultICMPRate's; PerDestNs or PerSec below 0
// turns that limit off.
type ICMPRate struct {
	// PerDestNs is the time in which one destination earns an
	// unreachable (1 s), PerDestBurst how many it may be sent at once (6).
	PerDestNs    int64
	PerDestBurst int
	// PerSec is the unreachables sent to all destinations together per
	// second (1,000), Burst how many at once (50).
	PerSec int
	Burst  int
	// Buckets is the size of the per-destination table (4,096), rounded
	// up to a power of two.
	Buckets int
}

// DefaultICMPRate returns Linux's limits.
func DefaultICMPRate() ICMPRate {
	return ICMPRate{PerDestNs: 1_000_000_000, PerDestBurst: 6, PerSec: 1000, Burst: 50, Buckets: 4096}
}

// withDefaults fills zero fields from DefaultICMPRate.
func (r ICMPRate) withDefaults() ICMPRate {
	d := DefaultICMPRate()
	if r.PerDestNs == 0 {
		r.PerDestNs = d.PerDestNs
	}
	if r.PerSec == 0 {
		r.PerSec = d.PerSec
	}
	if r.PerDestBurst <= 0 {
		r.PerDestBurst = d.PerDestBurst
	}
	if r.Burst <= 0 {
		r.Burst = d.Burst
	}
	if r.Buckets <= 0 {
		r.Buckets = d.Buckets
	}
	return r
}

// ICMPLimiter applies an ICMPRate; safe for use by several endpoints at
// once (the shards of one port).
type ICMPLimiter struct {
	destEvery, destSlack int64 // ns per unreachable to a destination, and (burst-1) of them; destEvery 0: no limit
	allEvery, allSlack   int64 // the same over all destinations
	seed                 maphash.Seed
	mask                 uint64
	dests                []atomic.Int64 // the buckets: the time each is spent until (0: never used)
	all                  atomic.Int64
}

// icmpVerdict is what an ICMPLimiter says of an unreachable.
type icmpVerdict uint8

const (
	icmpSend     icmpVerdict = iota
	icmpHeldDest             // its destination's allowance is spent
	icmpHeldAll              // the allowance over all destinations is spent
)

// NewICMPLimiter returns a limiter of r (zero fields: the defaults).
func NewICMPLimiter(r ICMPRate) *ICMPLimiter {
	r = r.withDefaults()
	l := &ICMPLimiter{seed: maphash.MakeSeed()}
	if r.PerDestNs > 0 {
		l.destEvery = r.PerDestNs
		l.destSlack = int64(r.PerDestBurst-1) * r.PerDestNs
		n := 1 << bits.Len(uint(r.Buckets-1))
		l.dests = make([]atomic.Int64, n)
		l.mask = uint64(n - 1)
	}
	if r.PerSec > 0 {
		l.allEvery = max(1_000_000_000/int64(r.PerSec), 1)
		l.allSlack = int64(r.Burst-1) * l.allEvery
	}
	return l
}

// allow says whether an unreachable to dst may be sent at now (ns), and
// spends the allowances it uses.
func (l *ICMPLimiter) allow(dst *[16]byte, now int64) icmpVerdict {
	if l.allEvery > 0 && !gcraHas(&l.all, now, l.allSlack) {
		return icmpHeldAll
	}
	if l.destEvery > 0 {
		b := &l.dests[l.bucket(dst)]
		if !gcraSpend(b, now, l.destEvery, l.destSlack) {
			return icmpHeldDest
		}
	}
	if l.allEvery > 0 && !gcraSpend(&l.all, now, l.allEvery, l.allSlack) {
		return icmpHeldAll // another shard took the last of it
	}
	return icmpSend
}

// bucket is the index of dst's per-destination bucket.
func (l *ICMPLimiter) bucket(dst *[16]byte) uint64 {
	return maphash.Bytes(l.seed, dst[:]) & l.mask
}

// gcraHas reports whether bucket b (the time its allowance is spent
// until) has an unreachable left at now, slack being the burst less one,
// in ns.
func gcraHas(b *atomic.Int64, now, slack int64) bool {
	t := b.Load()
	return t == 0 || t-now <= slack
}

// gcraSpend takes one unreachable, every ns apart, from bucket b if it
// has one left at now.
func gcraSpend(b *atomic.Int64, now, every, slack int64) bool {
	for {
		t := b.Load()
		from := t
		if t == 0 || t < now {
			from = now // full: the unused allowance does not pile up past the burst
		}
		if from-now > slack {
			return false
		}
		if b.CompareAndSwap(t, from+every) {
			return true
		}
	}
}
