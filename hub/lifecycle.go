package hub

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/shm"
)

// A session's life, as one ordered state machine. Its control goroutine
// (the shm server's, one per connection) makes two events, attach then
// detach, and sends both on the one channel hub.events, so the loop
// takes them in the order they were made: a detach can never be taken
// before its attach. The loop alone moves a session through its states
// after the attach is sent:
//
//	queued ──attach──▶ live ──detach──▶ lingering ──replies acked, or linger passed──▶ draining ──last packet left, copies done──▶ gone
//	                        └──corrupt ring, backlog overflow (or no reply to finish)──────▶ draining
//	                             (no packet sending from the arena: straight to gone)
//
// A detach is the worker's close, or its death: either way the replies
// it submitted go out before the session ends (linger.go).
//
// Reaching gone closes ws.gone, which lets the control goroutine's
// onDetach return and the shm server free the region. Stop (the loop's
// drain) takes every session straight to gone and closes hub.stopped:
// from then on no control goroutine waits for the loop.

// sessionState is where a session is in its life; the loop owns it.
type sessionState uint8

const (
	stateQueued    sessionState = iota // sent to the loop, not taken yet
	stateLive                          // in hub.sessions: its rings are served
	stateLingering                     // its worker left, in hub.lingering: its replies still go out (linger.go)
	stateDraining                      // let go, in hub.draining: packets still send from its arena, or copies write its pool
	stateGone                          // ws.gone is closed: the region may be freed
)

// event is one step of a session's life on hub.events.
type event struct {
	ws     *session
	detach bool // false: attach
}

// errStopping refuses a worker that connects after the loop's drain.
var errStopping = errors.New("the daemon's polling loop has stopped")

// onAttach runs on a control goroutine: it attaches the rings and hands
// the session to the loop. An error refuses the worker.
func (hub *Hub) onAttach(s *shm.Session) error {
	side, err := s.EngineSide(uint32(hub.ep.MaxMessageLength()))
	if err != nil {
		return fmt.Errorf("the engine's side of the region: %w", err)
	}
	ws := &session{
		hub: hub, s: s, EngineSide: side,
		servers:  map[uint16]*engine.Port{},
		sends:    map[rpcRef]sendRef{},
		requests: map[rpcRef]*engine.Port{},
		gone:     make(chan struct{}),
	}
	s.Data = ws
	if hub.isStopped() {
		return errStopping
	}
	if err := hub.watchBell(s); err != nil {
		return err
	}
	select {
	case hub.events <- event{ws: ws}:
		hub.load.Add(1)
		hub.ring() // a sleeping loop takes the session now, before the worker submits
		return nil
	case <-hub.stopped:
		hub.unwatchBell(s) // refused: the server frees it, without onDetach
		return errStopping
	}
}

// onDetach runs on a control goroutine when the worker's connection
// closes; it returns once the loop no longer touches the region (which
// the shm server then frees), or at once when the loop has stopped.
func (hub *Hub) onDetach(s *shm.Session) {
	ws, _ := s.Data.(*session)
	if ws == nil {
		return
	}
	defer hub.unwatchBell(s) // before the server closes it
	if hub.isStopped() {
		return
	}
	select {
	case hub.events <- event{ws: ws, detach: true}:
		hub.ring()
	case <-hub.stopped:
		return
	}
	select {
	case <-ws.gone:
	case <-hub.stopped:
	}
}

func (hub *Hub) isStopped() bool {
	select {
	case <-hub.stopped:
		return true
	default:
		return false
	}
}

// takeEvents applies the attaches and detaches that came since the last
// pass, in order.
func (hub *Hub) takeEvents() {
	// len of a channel is a plain load; a receive takes its lock, so
	// only passes that have events pay for it.
	for len(hub.events) > 0 {
		ev := <-hub.events
		if ev.detach {
			hub.detach(ev.ws)
		} else {
			hub.add(ev.ws)
		}
	}
}

// add makes a queued session live.
func (hub *Hub) add(ws *session) {
	if ws.state != stateQueued {
		return
	}
	ws.state = stateLive
	hub.sessions = append(hub.sessions, ws)
	hub.counters.Attached++
}

// remove lets a session go: its RPCs are aborted and its ports closed;
// it is gone at once, or drains until its last packet has left. A
// session that is already draining or gone stays as it is; one still
// queued (its detach cannot overtake its attach, but the state machine
// does not rely on that) is gone at once.
func (hub *Hub) remove(ws *session) {
	switch ws.state {
	case stateQueued:
		ws.finish()
	case stateLive, stateLingering:
		if ws.state == stateLive {
			hub.sessions = deleteSession(hub.sessions, ws)
			hub.counters.Detached++
		} else {
			hub.lingering = deleteSession(hub.lingering, ws)
		}
		ws.release()
		ws.copyMark = hub.h.CopyMark() // copies into its region were all handed over by now
		if ws.letGo() {
			ws.finish()
		} else {
			ws.state = stateDraining
			hub.draining = append(hub.draining, ws)
		}
	}
}

// letGo reports whether a released session's region may be freed: its
// last packet has left (releases) and the copier is past every copy
// into it.
func (ws *session) letGo() bool {
	return ws.releases() && ws.hub.h.CopiesPast(ws.copyMark)
}

// drain finishes the draining sessions whose last packet has left and
// whose receive copies are done.
func (hub *Hub) drain() {
	for i := 0; i < len(hub.draining); i++ {
		if ws := hub.draining[i]; ws.letGo() {
			ws.finish()
			hub.draining = append(hub.draining[:i], hub.draining[i+1:]...)
			i--
		}
	}
}

func deleteSession(list []*session, ws *session) []*session {
	for i, s := range list {
		if s == ws {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// Close stops the control socket: every worker's connection is closed
// and its session detaches, while the loop still runs. It waits at most
// Config.CloseWait for the loop to let the sessions go; a loop that has
// stopped (Stop, before or during Close) lets them go at once. After the
// wait it returns an error wrapping shm.ErrCloseTimeout: the sessions
// the loop still holds (it is not polling, or packets still send from an
// arena) are freed at its Stop.
//
// The hubs of a set (NewSet) share the socket: closing one closes it for
// all, as Set.Close does.
func (hub *Hub) Close() error { return hub.set.Close() }

// Stop is the loop's drain (host.App): it lets every session go (aborting
// their RPCs) and releases waiting control goroutines.
func (hub *Hub) Stop() {
	if hub.stopOnce.Swap(true) {
		return
	}
	for _, ws := range hub.lingering {
		hub.counters.AbandonedReplies += uint64(ws.replying)
	}
	all := append(append(hub.draining, hub.sessions...), hub.lingering...)
	for _, ws := range all {
		ws.release()
	}
	// The loop has stopped: queued packets were sent or freed (the host
	// drains its queues before its workers), so nothing reads the arenas;
	// the copier, still running, finishes what it was handed.
	for mark := hub.h.CopyMark(); !hub.h.CopiesPast(mark); {
		runtime.Gosched()
	}
	for _, ws := range all {
		ws.finish()
	}
	hub.sessions, hub.draining, hub.lingering = nil, nil, nil
	close(hub.stopped)
	hub.letGoBell() // the loop has stopped: it polls the doorbell no more
}
