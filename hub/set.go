package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Workers on a port of several shards (engine.Shard): a hub on each
// shard, one control socket for all. A worker that attaches lives on one
// shard for its session's life, its home: the hub with the fewest
// sessions takes it (Hub.load), serves its rings on that shard's loop,
// starts its RPCs on that shard's endpoint (their ids are the shard's, so
// their responses come back there) and binds its server ports there
// alone (host.ShardSet.HomePorts: every request to them is steered to the
// home, whatever its client's id). Each hub watches the doorbells of its
// own sessions (shm.Bells), so a worker wakes the loop that serves it.
//
// Sessions never move: a worker's RPCs are one shard's, and its
// completions are produced by one loop (a ring has one producer). A
// shard's share of the port's load is the sum of its workers'; a training
// job's workers, alike, spread evenly.

// Set is the hubs of one port's shards behind one control socket.
type Set struct {
	hubs []*Hub
	srv  *shm.Server
}

// NewSet opens the control socket at c.Path for the workers of hosts, a
// port's shards (one host: New), with a hub on each. Give hub i to host
// i as an in-loop application before the loops start.
func NewSet(hosts []Host, c Config) (*Set, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("workers: no host to serve")
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return nil, fmt.Errorf("worker socket directory: %w", err)
	}
	if c.MaxOutstanding < 1 {
		return nil, fmt.Errorf("workers: max_outstanding %d, want at least 1", c.MaxOutstanding)
	}
	if c.MaxBacklog < 0 {
		return nil, fmt.Errorf("workers: max_backlog %d, want at least 1 (0: the default)", c.MaxBacklog)
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = DefaultMaxBacklog(c)
	}
	if c.CloseWait <= 0 {
		c.CloseWait = DefaultCloseWait
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.ZeroCopyMin == 0 {
		c.ZeroCopyMin = DefaultZeroCopyMin
	}
	largest := hosts[0].Endpoint().MaxMessageLength()
	for _, h := range hosts[1:] {
		largest = min(largest, h.Endpoint().MaxMessageLength())
	}
	if c.Params.MaxMessage == 0 {
		c.Params.MaxMessage = uint32(largest)
	}
	if int(c.Params.MaxMessage) > largest {
		return nil, fmt.Errorf("workers: regions for messages of %d bytes, above the engine's largest (%d)", c.Params.MaxMessage, largest)
	}
	set := &Set{}
	for _, h := range hosts {
		hub := &Hub{
			h: h, ep: h.Endpoint(), lim: c, set: set,
			events:  make(chan event, 128),
			stopped: make(chan struct{}),
			slots:   make([]shm.Slot, 32),
		}
		set.hubs = append(set.hubs, hub)
		if c.Doorbell {
			if err := hub.openBells(); err != nil {
				set.closeBells()
				return nil, fmt.Errorf("workers: %w", err)
			}
		}
	}
	srv, err := shm.Listen(shm.ServerConfig{
		Path: c.Path, AllowUIDs: c.AllowUIDs, AllowGIDs: c.AllowGIDs, Params: c.Params, Doorbell: c.Doorbell, Host: c.Host,
		SocketGroup: c.SocketGroup, MaxSessionsPerUID: c.MaxSessionsPerUID,
		OnAttach: set.onAttach, OnDetach: set.onDetach, OnRefuse: c.OnRefuse,
	})
	if err != nil {
		set.closeBells()
		return nil, err
	}
	set.srv = srv
	for _, hub := range set.hubs {
		hub.srv = srv
	}
	return set, nil
}

// Hubs are the set's hubs, one per host given to NewSet, in order.
func (s *Set) Hubs() []*Hub { return s.hubs }

// onAttach gives a new worker to the hub with the fewest sessions.
func (s *Set) onAttach(sess *shm.Session) error {
	home := s.hubs[0]
	for _, hub := range s.hubs[1:] {
		if hub.load.Load() < home.load.Load() {
			home = hub
		}
	}
	return home.onAttach(sess)
}

func (s *Set) onDetach(sess *shm.Session) {
	if ws, _ := sess.Data.(*session); ws != nil {
		ws.hub.onDetach(sess)
	}
}

// Close stops the control socket, for every hub of the set (Hub.Close).
func (s *Set) Close() error {
	if err := s.srv.CloseWithin(s.hubs[0].lim.CloseWait); err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	for _, hub := range s.hubs {
		if !hub.closeOnce.Swap(true) {
			hub.letGoBell() // no control goroutine rings it any more
		}
	}
	return nil
}

// closeBells closes the doorbells of a set that never opened its socket.
func (s *Set) closeBells() {
	for _, hub := range s.hubs {
		hub.closeBells()
	}
}

// Snapshot is the sum of the hubs' counters as their loops last
// published them (Hub.Snapshot). Any thread.
func (s *Set) Snapshot() Counters {
	var sum Counters
	for _, hub := range s.hubs {
		sum.add(hub.Snapshot())
	}
	return sum
}

// add adds o's counters and gauges to c's: every field of Counters is a
// uint64 count (a test checks it).
func (c *Counters) add(o Counters) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o)
	for i := range cv.NumField() {
		f := cv.Field(i)
		f.SetUint(f.Uint() + ov.Field(i).Uint())
	}
}
