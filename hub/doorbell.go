package hub

import "github.com/homa-dpdk/homa-dpdk/shm"

// The loop's doorbells (host.Sleeper). Before the loop sleeps it raises
// the wait flag of every session's submission ring and looks at the rings
// once more; a worker that pushes and then finds its flag raised rings
// its session's doorbell (the eventfd the daemon gave it), and the loop
// wakes. So a worker's submission to a sleeping daemon waits for a
// wake-up, not for the rest of the sleep (up to idle_max_sleep_us), and a
// worker that submits to a polling loop costs the loop nothing. Each
// session has a doorbell of its own (shm.Session.DoorbellFD), all of them
// in the hub's epoll set (shm.Bells) with the hub's own, which the
// control goroutines ring when a worker attaches or detaches: a worker
// can ring the loop, but cannot take another worker's ring.

// openBells gives the hub its doorbells (Config.Doorbell).
func (hub *Hub) openBells() error {
	bells, err := shm.NewBells()
	if err != nil {
		return err
	}
	bell, err := shm.NewDoorbell()
	if err != nil {
		bells.Close()
		return err
	}
	if err := bells.Add(bell.FD()); err != nil {
		bell.Close()
		bells.Close()
		return err
	}
	hub.bells, hub.bell = bells, bell
	hub.bellUsers.Store(2)
	return nil
}

// closeBells closes the doorbells (letGoBell, or a set that never opened
// its socket).
func (hub *Hub) closeBells() {
	hub.bellMu.Lock()
	defer hub.bellMu.Unlock()
	if hub.bell != nil && !hub.bellsClosed {
		hub.bellsClosed = true
		hub.bell.Close()
		hub.bells.Close()
	}
}

// watchBell adds the session's doorbell to the loop's (onAttach).
func (hub *Hub) watchBell(s *shm.Session) error {
	if hub.bells == nil || s.DoorbellFD() < 0 {
		return nil
	}
	return hub.bells.Add(s.DoorbellFD())
}

// unwatchBell takes it out again, before the server closes it.
func (hub *Hub) unwatchBell(s *shm.Session) {
	if hub.bells != nil && s.DoorbellFD() >= 0 {
		hub.bells.Remove(s.DoorbellFD())
	}
}

// DoorbellFD is what the loop polls while it sleeps (host.Sleeper): the
// doorbells' epoll set, -1 without (Config.Doorbell).
func (hub *Hub) DoorbellFD() int {
	if hub.bells == nil {
		return -1
	}
	return hub.bells.FD()
}

// DrainDoorbell takes the rings that woke the loop (host.Sleeper).
func (hub *Hub) DrainDoorbell() {
	if hub.bells != nil {
		hub.bells.Drain()
	}
}

// RingDoorbell wakes the loop, from any goroutine (host.Sleeper).
func (hub *Hub) RingDoorbell() { hub.ring() }

// ArmDoorbell raises the sessions' submission-ring wait flags and reports
// whether the loop may sleep: no submission waits to be read, no attach or
// detach to be taken (host.Sleeper). A session whose backlog is full is
// left unread by design (session.go, "Backlog"): its entries do not count.
func (hub *Hub) ArmDoorbell() bool {
	for _, ws := range hub.sessions {
		ws.SQ.SetWaiting(true)
	}
	if len(hub.events) > 0 {
		return false
	}
	for _, ws := range hub.sessions {
		if !ws.stalled && ws.SQ.Len() > 0 {
			return false
		}
	}
	return true
}

// DisarmDoorbell lowers the flags: the loop is awake and polls the rings
// (host.Sleeper).
func (hub *Hub) DisarmDoorbell() {
	for _, ws := range hub.sessions {
		ws.SQ.SetWaiting(false)
	}
}

// ring wakes the loop from another goroutine, if it has a doorbell that
// is still open: the loop's Stop rings it (lcore.Loop.Stop, through
// RingDoorbell) while the loop may be closing it in its drain, and a
// closed descriptor's number may already be another file's.
func (hub *Hub) ring() {
	hub.bellMu.RLock()
	defer hub.bellMu.RUnlock()
	if hub.bell != nil && !hub.bellsClosed {
		hub.bell.Ring()
	}
}

// letGoBell closes the doorbells once both their users are done with them:
// the loop (Stop) and the control goroutines (Close). Closed earlier, a
// descriptor number could be reused and written to, or polled, by mistake.
func (hub *Hub) letGoBell() {
	if hub.bell != nil && hub.bellUsers.Add(-1) == 0 {
		hub.closeBells()
	}
}
