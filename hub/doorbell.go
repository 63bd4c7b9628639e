package hub

// The loop's doorbell (host.Sleeper). Before the loop sleeps it raises the
// wait flag of every session's submission ring and looks at the rings once
// more; a worker that pushes and then finds its flag raised rings the
// doorbell (the eventfd the daemon gave it), and the loop wakes. So a
// worker's submission to a sleeping daemon waits for a wake-up, not for
// the rest of the sleep (up to idle_max_sleep_us), and a worker that
// submits to a polling loop costs the loop nothing. The control goroutines
// ring it too when a worker attaches or detaches.

// DoorbellFD is the doorbell's eventfd (host.Sleeper), -1 without one
// (Config.Doorbell).
func (hub *Hub) DoorbellFD() int {
	if hub.bell == nil {
		return -1
	}
	return hub.bell.FD()
}

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

// ring wakes the loop from another goroutine, if it has a doorbell.
func (hub *Hub) ring() {
	if hub.bell != nil {
		hub.bell.Ring()
	}
}

// letGoBell closes the doorbell once both its users are done with it: the
// loop (Stop) and the control goroutines (Close). Closed earlier, its
// descriptor number could be reused and written to, or polled, by mistake.
func (hub *Hub) letGoBell() {
	if hub.bell != nil && hub.bellUsers.Add(-1) == 0 {
		hub.bell.Close()
	}
}
