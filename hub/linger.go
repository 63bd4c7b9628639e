package hub

import "github.com/homa-dpdk/homa-dpdk/shm"

// Closing. A worker's close is a TCP close: what it wrote is delivered.
// When its connection ends (its Close, or its process's exit, which the
// daemon cannot tell apart), the loop
//
//  1. takes what is left in its submission ring, once and at most a
//     ring's worth (lastPoll): a reply pushed just before the close goes
//     out like the others (RepliesAfterClose); nothing else left there
//     is done, as its worker is no longer there to see it;
//  2. shuts its ports (shut): client RPCs end, requests not answered are
//     dropped, and the port numbers are free at once, so a request to one
//     now, or a RESEND for an RPC the engine dropped, is answered ICMP
//     port unreachable: its clients learn that the server closed
//     (ErrPortUnreachable), not that it restarted;
//  3. keeps the session, region and all, while its replies go out, until
//     each is acked (OutDone) or Config.Linger has passed (linger). Each
//     reply still going at the close counts in LingeredReplies, each
//     ended at the bound in AbandonedReplies (their clients then hear
//     ICMP port unreachable); then the session drains as any other.
//
// Nothing beyond the existing bounds is held for it: its replies are at
// most MaxOutstanding, in its own region, and a lingering session still
// holds its place under MaxSessionsPerUID (the shm server counts it until
// the loop lets it go), for at most Linger.

// detach takes a worker's detach: a live session lingers while it has
// replies going, and every other goes at once (remove).
func (hub *Hub) detach(ws *session) {
	if ws.state != stateLive {
		hub.remove(ws)
		return
	}
	ws.closing = true // its completion ring is read by no one now
	ws.lastPoll()
	ws.shut()
	if ws.replying == 0 || hub.lim.Linger < 0 {
		hub.counters.AbandonedReplies += uint64(ws.replying)
		hub.remove(ws)
		return
	}
	hub.sessions = deleteSession(hub.sessions, ws)
	hub.counters.Detached++
	hub.counters.LingeredReplies += uint64(ws.replying)
	ws.state = stateLingering
	ws.lingerEnd = hub.now + int64(hub.lim.Linger)
	hub.lingering = append(hub.lingering, ws)
}

// lastPoll takes the replies a worker left in its submission ring: at
// most one ring's worth, so that a worker still holding the mapping after
// its close cannot keep the loop reading. The pages riding on them go
// back with them; other entries are dropped.
func (ws *session) lastPoll() {
	hub := ws.hub
	for left := ws.SQ.Cap(); left > 0; {
		n := ws.SQ.PopBurst(hub.slots[:min(len(hub.slots), left)])
		if n == 0 {
			return
		}
		left -= n
		for i := range n {
			hub.counters.Submissions++
			sub, code := shm.ParseSubmission(&hub.slots[i], &ws.Limits)
			switch {
			case code != shm.ErrCodeNone:
				hub.counters.BadEntries++
			case sub.Op == shm.OpReply:
				hub.counters.RepliesAfterClose++
				ws.handle(&sub)
			}
		}
	}
}

// shut ends what the worker would have had to see (its client RPCs, the
// requests it did not answer) and frees its port numbers, leaving only
// its replies going (engine.Port.Shut).
func (ws *session) shut() {
	if ws.client != nil {
		ws.client.Close()
	}
	for _, p := range ws.servers {
		p.Shut()
	}
}

// linger lets go of the lingering sessions whose replies have all been
// acked, or whose Linger has passed (the replies still going abandoned).
func (hub *Hub) linger() {
	for i := 0; i < len(hub.lingering); i++ {
		ws := hub.lingering[i]
		if ws.replying > 0 && hub.now < ws.lingerEnd {
			continue
		}
		hub.counters.AbandonedReplies += uint64(ws.replying)
		hub.remove(ws) // takes it out of hub.lingering
		i--
	}
}
