package sched

import "sync/atomic"

// What the shards of one port share (engine.Shard): each shard's grant
// scheduler and pacer run on its own goroutine, and these let them act as
// the one receiver and the one transmitter the port is.
//
// The grant schedulers publish, each in a slot of its own (a cache line
// apart), their first grantable messages' remaining bytes and their
// incoming bytes; at each Schedule a shard reads the others' slots
// without a lock and ranks its own messages among all of them: a message
// is granted to only while it is among the port's MaxOvercommit shortest,
// at the priority of its rank over the port, and MaxIncoming bounds the
// port's incoming bytes, not the shard's. A slot read while its shard
// writes it may mix two schedules' values: the view is at most one
// Schedule old, which may let a shard grant a little past MaxIncoming or
// to one message too many for that long (kernel Homa's cores race on
// their total_incoming the same way).
//
// The pacers share the link's clock (LinkClock): the time the NIC will
// have sent everything handed to it, advanced by compare-and-swap, as
// kernel Homa's link_idle_time.

// shareBest is the most candidates a shard publishes: grants go to at
// most MaxOvercommit messages, and ranks past it do not matter.
const shareBest = 16

// GrantShare is the grant schedulers' view across a port's shards. Make
// one per port with NewGrantShare and give it to each shard's scheduler
// (GrantScheduler.Share).
type GrantShare struct {
	slots []shareSlot
}

type shareSlot struct {
	sched   atomic.Int64 // outstanding bytes granted past the unscheduled ones
	unsched atomic.Int64 // outstanding unscheduled bytes
	n       atomic.Int64
	starved atomic.Bool             // its last Schedule had a message to grant and no room under MaxIncoming
	best    [shareBest]atomic.Int64 // remaining bytes, shortest first
	_       [64]byte                // the next slot's writer on another line
}

// NewGrantShare returns the view of a port of shards shards.
func NewGrantShare(shards int) *GrantShare {
	return &GrantShare{slots: make([]shareSlot, max(shards, 1))}
}

// Share makes s the scheduler of shard index of g's port (see
// GrantShare). Call it before the first Add. A shared scheduler publishes
// its candidates at each Add, Schedule and Remove.
func (s *GrantScheduler) Share(g *GrantShare, index int) {
	s.share, s.shard = g, index
}

// publish writes this shard's first grantable messages' remaining bytes
// and its incoming bytes into its slot.
func (s *GrantScheduler) publish() {
	slot := &s.share.slots[s.shard]
	k := 0
	for _, m := range s.msgs {
		if k == min(shareBest, s.cfg.MaxOvercommit) {
			break
		}
		if m != nil && m.Granted < m.Length {
			slot.best[k].Store(int64(m.Remaining()))
			k++
		}
	}
	slot.n.Store(int64(k))
	s.publishIncoming()
}

// publishIncoming writes this shard's outstanding bytes into its slot:
// the granted ones and the unscheduled ones apart, so that the port caps
// the unscheduled ones once (at MaxIncoming/2), not once per shard.
func (s *GrantScheduler) publishIncoming() {
	slot := &s.share.slots[s.shard]
	slot.sched.Store(int64(s.outstanding - s.outUnsched))
	slot.unsched.Store(int64(s.outUnsched))
}

// others reads the other shards' slots: their outstanding bytes,
// granted and unscheduled, and how many candidates they published.
func (s *GrantScheduler) others() (sched, unsched, candidates int) {
	for i := range s.share.slots {
		if i != s.shard {
			sched += int(s.share.slots[i].sched.Load())
			unsched += int(s.share.slots[i].unsched.Load())
			candidates += int(s.share.slots[i].n.Load())
		}
	}
	return sched, unsched, candidates
}

// ahead counts the other shards' candidates that rank before a message
// of this shard with remaining bytes left: fewer bytes, or as many on a
// shard of a lower index.
func (s *GrantScheduler) ahead(remaining int) int {
	n := 0
	for i := range s.share.slots {
		if i == s.shard {
			continue
		}
		slot := &s.share.slots[i]
		for j := range min(int(slot.n.Load()), shareBest) {
			if v := int(slot.best[j].Load()); v < remaining || v == remaining && i < s.shard {
				n++
			}
		}
	}
	return n
}

// PortStarved says whether a shard of the port (this one too) found no
// room under MaxIncoming for a message it would grant, at its last
// Schedule: the port's room is held, maybe by claims that never send
// (false without a GrantShare).
func (s *GrantScheduler) PortStarved() bool {
	if s.share == nil {
		return false
	}
	for i := range s.share.slots {
		if s.share.slots[i].starved.Load() {
			return true
		}
	}
	return false
}

// LinkClock is the one link a port's shards transmit on, as their
// pacers see it (Pacer.Share): when the NIC will have sent everything
// handed to it.
type LinkClock struct {
	idleAt atomic.Int64
	_      [56]byte
}
