package host

import "github.com/homa-dpdk/homa-dpdk/lcore"

// Sleeper is an App that others can wake while the loop sleeps (the worker
// hub: its workers ring when they submit to a sleeping loop). It runs on
// the loop's thread, like every App method, but RingDoorbell.
type Sleeper interface {
	// DoorbellFD is the descriptor the loop polls while it sleeps:
	// readable, it wakes the loop.
	DoorbellFD() int
	// DrainDoorbell runs after a sleep that DoorbellFD ended: it makes
	// the descriptor not readable until the next ring.
	DrainDoorbell()
	// RingDoorbell wakes the loop; any goroutine (Loop.Stop).
	RingDoorbell()
	// ArmDoorbell runs before the loop sleeps: it raises the flags its
	// producers read after publishing work, and returns false if work is
	// already waiting (the loop then does not sleep).
	ArmDoorbell() bool
	// DisarmDoorbell lowers them, once the loop is awake.
	DisarmDoorbell()
}

// Doorbell is the loop's doorbell for the Sleeper applications of the
// pipeline's hosts (lcore.Config.Doorbell), or nil if there is none. Call
// it after the applications were added.
func (p *Pipeline) Doorbell() *lcore.Doorbell {
	var ss []Sleeper
	for _, h := range p.hosts {
		for _, a := range h.apps {
			if s, ok := a.(Sleeper); ok && s.DoorbellFD() >= 0 {
				ss = append(ss, s)
			}
		}
	}
	if len(ss) == 0 {
		return nil
	}
	d := &lcore.Doorbell{
		Arm: func() bool { // the loop calls Disarm after every Arm
			for _, s := range ss {
				if !s.ArmDoorbell() {
					return false
				}
			}
			return true
		},
		Disarm: func() {
			for _, s := range ss {
				s.DisarmDoorbell()
			}
		},
		Drain: func(i int) { ss[i].DrainDoorbell() }, // FDs[i] is ss[i]'s
		Ring:  ss[0].RingDoorbell,
	}
	for _, s := range ss {
		d.FDs = append(d.FDs, s.DoorbellFD())
	}
	return d
}
