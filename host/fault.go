package host

import (
	"math/rand/v2"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

// faultVerdict is what fault injection does with a received packet.
type faultVerdict uint8

const (
	faultNone faultVerdict = iota
	faultDrop
	faultDuplicate
	faultHold // delivered after the next packets: reordered
)

// Faults drop, duplicate or reorder a fraction of received packets (for
// tests; all zero turns injection off), from a seeded generator.
type Faults struct {
	Drop, Duplicate, Reorder float64
	Seed                     int64
}

// faultInjector applies Faults, counting what it did.
type faultInjector struct {
	drop, dup, reorder             float64
	rng                            *rand.Rand
	held                           *dpdk.Mbuf
	Dropped, Duplicated, Reordered uint64
}

func newFaultInjector(f Faults) faultInjector {
	return faultInjector{drop: f.Drop, dup: f.Duplicate, reorder: f.Reorder,
		rng: rand.New(rand.NewPCG(uint64(f.Seed), 0x9e3779b97f4a7c15))}
}

func (f *faultInjector) decide() faultVerdict {
	if f.rng == nil || f.drop+f.dup+f.reorder == 0 {
		return faultNone
	}
	x := f.rng.Float64()
	switch {
	case x < f.drop:
		f.Dropped++
		return faultDrop
	case x < f.drop+f.dup:
		f.Duplicated++
		return faultDuplicate
	case x < f.drop+f.dup+f.reorder && f.held == nil:
		f.Reordered++
		return faultHold
	}
	return faultNone
}

func (f *faultInjector) hold(m *dpdk.Mbuf) { f.held = m }

func (f *faultInjector) release() *dpdk.Mbuf {
	m := f.held
	f.held = nil
	return m
}
