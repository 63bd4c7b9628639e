package client

import (
	"fmt"
	"runtime"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// submit gives s the next cookie, pushes it on the submission ring and
// returns the cookie. When the ring is full it yields and retries,
// reading completions meanwhile (the engine may be waiting for room in
// the completion ring), for up to answerWait, or until the daemon is
// found gone; once it is, nothing is pushed.
func (c *Client) submit(s *shm.Submission) (uint64, error) {
	if c.gone {
		return 0, ErrDaemonGone
	}
	c.cookie++
	s.Cookie = c.cookie
	c.ride(s)
	s.Encode(&c.sub)
	if c.sq.Push(&c.sub) {
		c.ringIfAsleep()
		return s.Cookie, nil
	}
	c.stats.SQFull++
	end := time.Now().Add(answerWait)
	for !c.sq.Push(&c.sub) {
		now := time.Now()
		if now.After(end) {
			c.unride(s)
			return 0, ErrNoAnswer
		}
		if c.daemonGone(now) {
			return 0, ErrDaemonGone
		}
		c.ringIfAsleep() // a full ring may be waiting for a sleeping loop
		c.reap()
		runtime.Gosched()
	}
	c.ringIfAsleep()
	return s.Cookie, nil
}

// ringIfAsleep rings the daemon's doorbell if its loop went to sleep with
// our submission ring's wait flag raised; a plain load when it did not.
func (c *Client) ringIfAsleep() {
	if c.att.Doorbell >= 0 && c.sq.TakeWaiter() {
		shm.RingFD(c.att.Doorbell)
		c.stats.Doorbells++
	}
}

// ride puts a run of pages to give back on s, a Send or Reply, where the
// daemon takes them there (FeatureReturnOnSubmit): one entry fewer.
func (c *Client) ride(s *shm.Submission) {
	if c.features&shm.FeatureReturnOnSubmit == 0 || len(c.toReturn) == 0 || (s.Op != shm.OpSend && s.Op != shm.OpReply) {
		return
	}
	r := c.toReturn[len(c.toReturn)-1]
	c.toReturn = c.toReturn[:len(c.toReturn)-1]
	s.Page, s.Pages = r.page, r.pages
	c.stats.PagesOnSubmit++
}

// unride takes back the pages ride put on s, which was never submitted.
func (c *Client) unride(s *shm.Submission) {
	if s.Pages != 0 && s.Op != shm.OpReturnPages {
		c.toReturn = append(c.toReturn, pageRun{s.Page, s.Pages})
		c.stats.PagesOnSubmit--
		s.Page, s.Pages = 0, 0
	}
}

// await waits for the Accepted or Error that answers the submission with
// cookie, dispatching every other completion as it comes. For a Send,
// sendTo is its destination: the RPC is recorded as soon as its Accepted
// is read, as its Response may follow in the same burst.
func (c *Client) await(cookie uint64, sendTo *Addr) (shm.Completion, error) {
	c.awaiting, c.answered, c.awaitSend = cookie, false, sendTo != nil
	if sendTo != nil {
		c.sendPeer = *sendTo
	}
	end := time.Now().Add(answerWait)
	for !c.answered {
		if err := c.waitCQ(end); err != nil && !c.answered {
			c.awaiting = 0
			if err == errEnd {
				err = ErrNoAnswer
			}
			return shm.Completion{}, err
		}
	}
	return c.answer, nil
}

// progress reads and dispatches what the completion ring holds and
// returns the completions read. Pages to give back wait in toReturn for
// the next Send or Reply (ride) where the daemon takes them there, until
// a wait finds nothing (waitCQ), or until holdRuns of them wait;
// otherwise they go back at once.
func (c *Client) progress() int {
	n := c.reap()
	if c.features&shm.FeatureReturnOnSubmit == 0 || len(c.toReturn) >= holdRuns {
		c.flush()
	}
	return n
}

// holdRuns bounds the page runs a client keeps back for its next Send or
// Reply.
const holdRuns = 16

// keepBack reports whether released run may wait for the next Send or
// Reply: the daemon takes pages there, fewer than holdRuns runs wait, and
// the pages waiting would stay within a quarter of the pool, so that the
// next message, a long one above all, still finds room.
func (c *Client) keepBack(run pageRun) bool {
	if c.features&shm.FeatureReturnOnSubmit == 0 || len(c.toReturn) >= holdRuns {
		return false
	}
	waiting := uint64(run.pages)
	for _, r := range c.toReturn {
		waiting += uint64(r.pages)
	}
	return waiting <= c.lim.PoolPages/4
}

// reap pops completions in bursts until the ring is empty, or a ring's
// worth has been read (an engine that keeps pushing cannot hold it here),
// and dispatches each. It submits nothing, so submit may call it.
func (c *Client) reap() int {
	total := 0
	for total < c.cq.Cap() {
		n := c.cq.PopBurst(c.slots[:])
		for i := range n {
			c.dispatch(&c.slots[i])
		}
		total += n
		if n < len(c.slots) {
			break
		}
	}
	return total
}

// flush submits ReturnPages for the runs dispatch set aside.
func (c *Client) flush() {
	for len(c.toReturn) > 0 {
		r := c.toReturn[len(c.toReturn)-1]
		c.toReturn = c.toReturn[:len(c.toReturn)-1]
		c.returnPages(r)
	}
}

// returnPages submits ReturnPages for r. The daemon answers only if we did
// not hold the pages; that Error is counted as stray.
func (c *Client) returnPages(r pageRun) {
	s := shm.Submission{Op: shm.OpReturnPages, Page: r.page, Pages: r.pages}
	c.submit(&s) // fails only if the daemon is gone (or stuck), and then so are the pages
}

// dispatch acts on one completion: validate it, free arena ranges, take
// the awaited answer, queue messages. It never submits (pages to give
// back go to toReturn) and never panics, whatever the slot holds.
func (c *Client) dispatch(slot *shm.Slot) {
	comp, code := shm.ParseCompletion(slot, &c.lim)
	if code != shm.ErrCodeNone {
		c.stats.BadCompletions++
		return
	}
	switch comp.Op {
	case shm.CompReleased:
		c.released(comp.Cookie, comp.Offset, comp.Length)
		if r, ok := c.replies[comp.Cookie]; ok && r.quiet { // a quiet ReplyAsync accepted, and done
			delete(c.replies, comp.Cookie)
			c.stats.Replies++
		}
	case shm.CompAccepted, shm.CompError:
		if comp.Op == shm.CompError {
			c.stats.Errors++
		}
		if comp.Flags&shm.CompFlagReleased != 0 {
			c.releasedAll(comp.Cookie, comp.Op == shm.CompError && comp.Err < shm.ErrCodeTimeout)
		}
		switch {
		case c.awaiting != 0 && comp.Cookie == c.awaiting:
			c.takeAnswer(&comp)
		case c.asyncAnswer(&comp):
		case comp.Op == shm.CompError && comp.RPCID != 0:
			c.rpcEnded(&comp)
		default:
			c.stats.Stray++ // a late answer, or an Error of ReturnPages
		}
	case shm.CompRequest:
		c.request(&comp)
	case shm.CompResponse:
		c.response(&comp)
	}
}

// takeAnswer keeps the answer to the awaited submission; a Send's
// Accepted starts its RPC.
func (c *Client) takeAnswer(comp *shm.Completion) {
	c.answer, c.answered, c.awaiting = *comp, true, 0
	if c.awaitSend && comp.Op == shm.CompAccepted && comp.RPCID != 0 && comp.RPCID&1 == 0 {
		c.rpcs[comp.RPCID] = clientRPC{cookie: comp.Cookie, peer: c.sendPeer}
	}
}

// asyncAnswer takes the answer to a ReplyAsync, if comp is one: an
// acceptance is counted, a refusal queued as the reply's failure.
func (c *Client) asyncAnswer(comp *shm.Completion) bool {
	r, ok := c.replies[comp.Cookie]
	if !ok {
		return false
	}
	delete(c.replies, comp.Cookie)
	if comp.Op == shm.CompAccepted {
		c.stats.Replies++
		return true
	}
	c.stats.ReplyRefused++
	c.push(&Message{ID: r.id, Peer: r.peer, Err: fmt.Errorf("client: reply to RPC %d from %s: %w", r.id, r.peer, codeErr(comp.Err))})
	return true
}

// released frees the arena range of cookie's message, if the completion
// names it exactly.
func (c *Client) released(cookie, off uint64, length uint32) {
	s, ok := c.inflight[cookie]
	if !ok || s.span.off != off || s.length != length {
		c.stats.Stray++ // not ours, or not the range we gave: freeing it could corrupt the arena
		return
	}
	c.releasedAll(cookie, false)
}

// releasedAll frees the arena range of cookie's message; malformed: the
// daemon refused the entry as malformed, so pages that rode on it are
// still ours to give back.
func (c *Client) releasedAll(cookie uint64, malformed bool) {
	s, ok := c.inflight[cookie]
	if !ok {
		c.stats.Stray++
		return
	}
	delete(c.inflight, cookie)
	c.arena.release(s.span)
	if malformed && s.rode.pages != 0 {
		c.toReturn = append(c.toReturn, s.rode)
	}
}

// rpcEnded queues the failure of a client RPC.
func (c *Client) rpcEnded(comp *shm.Completion) {
	r, ok := c.rpcs[comp.RPCID]
	if !ok || r.cookie != comp.Cookie {
		c.stats.Stray++
		return
	}
	delete(c.rpcs, comp.RPCID)
	if r.abandoned {
		return
	}
	c.push(&Message{ID: comp.RPCID, Peer: r.peer, Err: rpcErr(comp.RPCID, r.peer, comp.Err)})
}

// request queues a request to a bound port.
func (c *Client) request(comp *shm.Completion) {
	run := pageRun{comp.Page, comp.Pages}
	if comp.RPCID&1 == 0 || comp.Port == 0 || comp.PeerIP == [4]byte{} && comp.PeerIP6 == [16]byte{} || comp.PeerPort == 0 {
		c.stats.BadCompletions++ // not a server RPC we could reply to
		c.toReturn = append(c.toReturn, run)
		return
	}
	m := c.message(comp)
	m.Port, m.Request = comp.Port, true
	c.push(m)
}

// response queues the response of a client RPC, or gives its pages back
// if nobody expects it.
func (c *Client) response(comp *shm.Completion) {
	run := pageRun{comp.Page, comp.Pages}
	r, ok := c.rpcs[comp.RPCID]
	if !ok || r.cookie != comp.Cookie {
		c.stats.Stray++
		c.toReturn = append(c.toReturn, run)
		return
	}
	delete(c.rpcs, comp.RPCID)
	if r.abandoned {
		c.toReturn = append(c.toReturn, run)
		return
	}
	m := c.message(comp)
	if m.Peer == (Addr{}) {
		m.Peer = r.peer
	}
	c.push(m)
}

// message makes the Message of a validated Request or Response:
// ParseCompletion checked that its pages lie in the pool and hold Length.
func (c *Client) message(comp *shm.Completion) *Message {
	start := uint64(comp.Page) * shm.PageSize
	end := start + uint64(comp.Length)
	c.stats.Received++
	c.stats.PagesHeld += uint64(comp.Pages)
	return &Message{
		ID: comp.RPCID, Peer: compPeer(comp),
		Data: c.pool[start:end:end],
		c:    c, page: comp.Page, pages: comp.Pages,
	}
}

// push queues m for Wait or Receive.
func (c *Client) push(m *Message) { c.queue = append(c.queue, m) }

// take removes and returns queue entry i, keeping the others in order.
func (c *Client) take(i int) *Message {
	m := c.queue[i]
	copy(c.queue[i:], c.queue[i+1:])
	c.queue[len(c.queue)-1] = nil
	c.queue = c.queue[:len(c.queue)-1]
	return m
}

// find returns the queue index of client RPC id's result, or -1.
func (c *Client) find(id uint64) int {
	for i, m := range c.queue {
		if m.ID == id && !m.Request {
			return i
		}
	}
	return -1
}
