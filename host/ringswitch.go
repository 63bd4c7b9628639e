package host

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// RingSwitch joins n ring ports in this process as a learning Ethernet
// switch, so that more than two hosts can run in one daemon (the demo's
// --hosts, the PyTorch backend's tests): every TX queue of port i feeds
// one ring that the switch drains, and the switch puts each frame on the
// RX ring of the port its destination MAC was last seen coming from. A
// frame to a MAC not seen yet, or to a broadcast or multicast address
// (ARP requests), goes to every other port, as copies from the switch's
// pool. The mbufs of unicast frames change hands, as on a ring pair: no
// copy. It remembers switchMACs source MACs at most, forgetting the
// oldest learned first.
//
// It runs as an in-loop application (Host.AddApp) of one of the hosts
// it joins, so that it is polled once per pass of their loop; a frame
// then reaches its port's RX ring in the pass after it was sent. Not
// safe for concurrent use: one loop polls it.
type RingSwitch struct {
	ports []*dpdk.Port
	tx    []*dpdk.Ring // per port: what its TX queues enqueue
	rx    []*dpdk.Ring // per port: what its RX queue dequeues
	pool  *dpdk.Mempool
	learn map[wire.MAC]int // source MAC → port it came from; at most switchMACs
	// order holds the learned MACs in the order they were first learned,
	// a ring once switchMACs are: order[oldest] is the next forgotten.
	order  []wire.MAC
	oldest int

	burst []*dpdk.Mbuf   // one port's dequeued frames
	out   [][]*dpdk.Mbuf // per port: frames for its RX ring this pass
	one   []*dpdk.Mbuf   // a copy's mbuf

	stats SwitchStats
}

// SwitchStats counts what a RingSwitch did.
type SwitchStats struct {
	Switched uint64 // unicast frames put on the one port they were for
	Flooded  uint64 // frames sent to every other port (broadcast, multicast, unknown destination)
	Copies   uint64 // mbufs copied for flooding
	Dropped  uint64 // frames dropped: an RX ring full, no mbuf for a copy, or a runt
	Evicted  uint64 // learned MACs forgotten, the oldest first, to learn a new one past switchMACs
}

// switchMACs bounds the source MACs a switch remembers: far more than the
// hosts one process joins (the demo's 16 at most), so only frames from
// made-up source addresses make it forget one; a MAC forgotten costs
// floods until its host sends again.
const switchMACs = 1024

// switchRingSize is the entries of each of the switch's rings.
const switchRingSize = 4096

// NewRingSwitch makes n ring ports named name0 .. name<n-1> (DPDK names
// them net_ring_<name>i), each with txQueues TX queues and one RX queue,
// joined by a switch whose flooded copies come from pool. EAL must be up.
// Close frees the rings after the ports are closed.
func NewRingSwitch(name string, n, txQueues int, pool *dpdk.Mempool) (*RingSwitch, error) {
	if n < 2 {
		return nil, fmt.Errorf("ring switch %s: %d ports, want at least 2", name, n)
	}
	s := &RingSwitch{pool: pool, learn: make(map[wire.MAC]int, switchMACs), order: make([]wire.MAC, 0, switchMACs),
		burst: make([]*dpdk.Mbuf, 64), out: make([][]*dpdk.Mbuf, n), one: make([]*dpdk.Mbuf, 1)}
	for i := range n {
		tx, err := dpdk.NewRing(fmt.Sprintf("%stx%d", name, i), switchRingSize, dpdk.SocketIDAny, 0) // several TX queues enqueue
		if err != nil {
			s.Close()
			return nil, err
		}
		s.tx = append(s.tx, tx)
		rx, err := dpdk.NewRing(fmt.Sprintf("%srx%d", name, i), switchRingSize, dpdk.SocketIDAny, 0)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.rx = append(s.rx, rx)
		txs := make([]*dpdk.Ring, txQueues)
		for q := range txs {
			txs[q] = tx
		}
		p, err := dpdk.PortFromRings(fmt.Sprintf("%s%d", name, i), []*dpdk.Ring{rx}, txs, dpdk.SocketIDAny)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.ports = append(s.ports, p)
		s.out[i] = make([]*dpdk.Mbuf, 0, 64)
	}
	return s, nil
}

// Ports are the switch's ports, in order.
func (s *RingSwitch) Ports() []*dpdk.Port { return s.ports }

// Stats returns the switch's counters (read them on its loop's thread, or
// once it stopped).
func (s *RingSwitch) Stats() SwitchStats { return s.stats }

// Poll moves every frame the ports sent since the last pass to the RX
// rings of the ports they are for (App).
func (s *RingSwitch) Poll(int64) int {
	moved := 0
	for i, tx := range s.tx {
		for {
			n := tx.DequeueMbufs(s.burst)
			for _, m := range s.burst[:n] {
				s.forward(i, m)
			}
			moved += n
			if n < len(s.burst) {
				break
			}
		}
	}
	for j, out := range s.out {
		if len(out) == 0 {
			continue
		}
		k := s.rx[j].EnqueueMbufs(out)
		if k < len(out) {
			s.stats.Dropped += uint64(len(out) - k)
			dpdk.FreeBulk(out[k:])
		}
		clear(out)
		s.out[j] = out[:0]
	}
	return moved
}

// forward queues frame m, sent by port from, for the port its destination
// is, or copies it to every other port.
func (s *RingSwitch) forward(from int, m *dpdk.Mbuf) {
	b := m.Data()
	if len(b) < wire.EthernetHeaderLen {
		s.stats.Dropped++
		m.Free()
		return
	}
	var dst, src wire.MAC
	copy(dst[:], b[0:6])
	copy(src[:], b[6:12])
	if src[0]&1 == 0 {
		s.learnMAC(src, from)
	}
	if to, ok := s.learn[dst]; ok && dst[0]&1 == 0 {
		if to == from {
			s.stats.Dropped++ // a frame to itself: a switch does not send it back
			m.Free()
			return
		}
		s.stats.Switched++
		s.out[to] = append(s.out[to], m)
		return
	}
	s.stats.Flooded++
	for to := range s.ports {
		if to == from {
			continue
		}
		if c := s.copyOf(m); c != nil {
			s.out[to] = append(s.out[to], c)
		}
	}
	m.Free()
}

// learnMAC records that src was seen coming from port from: a map write
// only when a MAC is new or moves; a new one past switchMACs takes the
// place of the oldest learned (counted in Evicted).
func (s *RingSwitch) learnMAC(src wire.MAC, from int) {
	if at, ok := s.learn[src]; ok {
		if at != from {
			s.learn[src] = from
		}
		return
	}
	if len(s.order) < switchMACs {
		s.order = append(s.order, src)
	} else {
		delete(s.learn, s.order[s.oldest])
		s.stats.Evicted++
		s.order[s.oldest] = src
		s.oldest = (s.oldest + 1) % switchMACs
	}
	s.learn[src] = from
}

// copyOf is a copy of m's bytes in an mbuf of the switch's pool, or nil
// (counted) when the pool has none left or the frame does not fit.
func (s *RingSwitch) copyOf(m *dpdk.Mbuf) *dpdk.Mbuf {
	if s.pool == nil || s.pool.AllocBulk(s.one) != nil {
		s.stats.Dropped++
		return nil
	}
	c := s.one[0]
	n := m.PktLen()
	dst := c.Append(n)
	if dst == nil {
		c.Free()
		s.stats.Dropped++
		return nil
	}
	m.AppendData(dst[:0])
	s.stats.Copies++
	return c
}

// Flush does nothing: Poll sends what it switches (App).
func (s *RingSwitch) Flush() {}

// Stop frees the frames still in the switch's rings (App; at Drain).
func (s *RingSwitch) Stop() {
	for _, r := range s.rings() {
		for n := r.DequeueMbufs(s.burst); n > 0; n = r.DequeueMbufs(s.burst) {
			dpdk.FreeBulk(s.burst[:n])
		}
	}
}

// Close frees the switch's rings, once its ports are closed and the
// frames in them freed (Stop).
func (s *RingSwitch) Close() {
	for _, r := range s.rings() {
		r.Free()
	}
	s.tx, s.rx = nil, nil
}

// rings are the switch's TX and RX rings.
func (s *RingSwitch) rings() []*dpdk.Ring { return append(append([]*dpdk.Ring(nil), s.tx...), s.rx...) }

// ClosePorts empties and closes the switch's ports (stopped ones), then
// frees its rings (Close).
func (s *RingSwitch) ClosePorts() {
	for _, p := range s.ports {
		emptyPort(p, s.burst)
		p.Close()
	}
	s.ports = nil
	s.Stop()
	s.Close()
}
