package memnet

import (
	"errors"
	"fmt"
	"math"
)

// Defaults that New fills in for zero Config fields.
const (
	DefaultLinkBps      = 10e9    // bits per second, every link
	DefaultPropDelay    = 250     // ns per link (about 50 m of fibre)
	DefaultBufferBytes  = 1 << 20 // bytes per switch egress port
	DefaultQueues       = 8       // strict-priority queues per port
	DefaultReorderDelay = 10_000  // ns a reordered frame is held at the switch
	MaxQueues           = 8       // one per Homa priority
)

// ErrConfig is wrapped by every error Config.Validate returns.
var ErrConfig = errors.New("memnet: invalid config")

// Config describes the network. It is a plain value: New copies it, fills
// in defaults and validates it; Network.Config returns the filled copy.
// A zero field means "the default" unless its comment says otherwise.
type Config struct {
	// LinkBps is the rate of every link, host uplinks and switch egress
	// ports alike, in bits per second. It is rounded to a whole number.
	// Default 10e9.
	LinkBps float64

	// PropDelay is the propagation delay of one link in ns; a frame
	// crosses two links (host → switch → host). Default 250; a negative
	// value means zero.
	PropDelay int64

	// BufferBytes is the buffer of one switch egress port in bytes: the
	// frames queued there plus the one being transmitted. A frame that
	// does not fit is tail-dropped. Default 1 MiB; negative means
	// unlimited. Host NIC queues are always unlimited.
	BufferBytes int

	// Seed seeds the random source of the fault fractions below. The same
	// Config (seed included) and the same calls give the same run.
	Seed int64

	// Loss, Reorder and Duplicate are the fractions (0..1) of frames that
	// the switch drops, holds back by ReorderDelay so that later frames
	// overtake them, and forwards twice. Each is drawn independently per
	// frame at the switch's ingress.
	Loss, Reorder, Duplicate float64

	// ReorderDelay is the extra time in ns a reordered frame waits at the
	// switch before it joins its egress queue. Default 10 µs.
	ReorderDelay int64

	// Queues is the number of strict-priority queues per port (switch
	// egress and host NIC), 1..8. Priority p (TOS>>5) goes to queue
	// p*Queues/8, so with fewer queues adjacent priorities share one and
	// the highest are served first. Default 8.
	Queues int

	// FIFO serves every port from one first-in-first-out queue, ignoring
	// priorities: a TCP-like baseline on the same switch.
	FIFO bool

	// FrameOverhead is added to every frame's length when computing its
	// serialization time, in bytes. 0 (the default) counts the frame
	// bytes only; 24 models Ethernet's preamble, inter-frame gap and FCS.
	FrameOverhead int

	// NICFIFO serves every host NIC from one first-in-first-out queue
	// (the switches keep their priority queues): a sender whose order of
	// transmission is its own software's, not its NIC's.
	NICFIFO bool

	// HostDelay is how long a frame passed to Host.Send waits before it
	// joins the NIC's queue, ns: a host's software turnaround and NIC
	// latency (the Homa paper's simulations: 0.5 µs). 0: none.
	HostDelay int64

	// RecvDelay is how long a frame that has reached its host waits
	// before the host's receive function sees it, ns: the receiving
	// side's software turnaround (the Homa paper's simulator: 0.5 µs on
	// each side). 0: none.
	RecvDelay int64

	// Fabric, when its Racks is set, replaces the single switch by racks
	// of hosts behind ToR switches joined by core switches (fabric.go).
	Fabric Fabric
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.LinkBps == 0 {
		c.LinkBps = DefaultLinkBps
	}
	switch {
	case c.PropDelay == 0:
		c.PropDelay = DefaultPropDelay
	case c.PropDelay < 0:
		c.PropDelay = 0
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = DefaultBufferBytes
	}
	if c.ReorderDelay == 0 {
		c.ReorderDelay = DefaultReorderDelay
	}
	if c.Queues == 0 {
		c.Queues = DefaultQueues
	}
	return c
}

// Validate reports the first problem of c after defaults are applied, as
// an error wrapping ErrConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case math.IsNaN(c.LinkBps) || c.LinkBps < 1 || c.LinkBps > 1e15:
		return bad("LinkBps %g outside 1..1e15", c.LinkBps)
	case c.Queues < 1 || c.Queues > MaxQueues:
		return bad("Queues %d outside 1..%d", c.Queues, MaxQueues)
	case c.ReorderDelay < 0:
		return bad("ReorderDelay %d is negative", c.ReorderDelay)
	case c.FrameOverhead < 0:
		return bad("FrameOverhead %d is negative", c.FrameOverhead)
	case c.HostDelay < 0:
		return bad("HostDelay %d is negative", c.HostDelay)
	case c.RecvDelay < 0:
		return bad("RecvDelay %d is negative", c.RecvDelay)
	}
	if err := c.Fabric.validate(); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Loss", c.Loss}, {"Reorder", c.Reorder}, {"Duplicate", c.Duplicate}} {
		if !(f.v >= 0 && f.v <= 1) {
			return bad("%s %g outside 0..1", f.name, f.v)
		}
	}
	return nil
}
