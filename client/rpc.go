package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// maxServerPort is the largest server port (shm: 1..0x7fff).
const maxServerPort = 0x7fff

// Bind makes port (1..32767) a server port of this worker: requests to it
// arrive through Receive. It fails with ErrPortInUse if another worker
// has it.
func (c *Client) Bind(port uint16) error {
	if err := c.usable(); err != nil {
		return err
	}
	if port == 0 || port > maxServerPort {
		return fmt.Errorf("client: bind port %d (server ports are 1..%d): %w", port, maxServerPort, codeErr(shm.ErrCodeBadPort))
	}
	if _, err := c.call(&shm.Submission{Op: shm.OpBind, Port: port}); err != nil {
		return fmt.Errorf("client: bind port %d: %w", port, err)
	}
	return nil
}

// Send starts a client RPC: it copies msg into the transmit arena (waiting
// up to 10 s for room), submits it to dst and returns the RPC's id once
// the daemon accepts it. The response, or the RPC's failure, arrives
// through Wait(id) or Receive.
func (c *Client) Send(dst Addr, msg []byte) (uint64, error) {
	return c.send(dst, msg, time.Now().Add(answerWait))
}

// Call sends msg to dst and waits up to timeout for the response (see
// "Timeouts" in the package doc; the timeout also bounds the wait for
// arena room). The response's Data must be Released. If the RPC failed
// the error wraps its code (errors.Is(err, ErrTimeout), ...); if the wait
// timed out (ErrWaitTimeout) the RPC is aborted and its result dropped.
func (c *Client) Call(dst Addr, msg []byte, timeout time.Duration) (*Message, error) {
	end := deadline(timeout)
	room := time.Now().Add(answerWait)
	if !end.IsZero() && end.Before(room) {
		room = end
	}
	id, err := c.send(dst, msg, room)
	if err != nil {
		return nil, err
	}
	m, err := c.wait(id, end)
	if err == ErrWaitTimeout {
		c.abandon(id)
	}
	return m, err
}

// send is Send with room the end of the wait for arena space.
func (c *Client) send(dst Addr, msg []byte, room time.Time) (uint64, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if !dst.IP.IsValid() || dst.IP.IsUnspecified() {
		return 0, fmt.Errorf("client: send to %s: %w", dst, codeErr(shm.ErrCodeBadPeer))
	}
	if dst.Port == 0 || dst.Port > maxServerPort {
		return 0, fmt.Errorf("client: send to %s (server ports are 1..%d): %w", dst, maxServerPort, codeErr(shm.ErrCodeBadPort))
	}
	sp, err := c.stage(msg, room)
	if err != nil {
		return 0, fmt.Errorf("client: send to %s: %w", dst, err)
	}
	s := shm.Submission{Op: shm.OpSend, PeerPort: dst.Port, Length: uint32(len(msg))}
	s.PeerIP, s.PeerIP6 = shm.PeerFields(dst.IP)
	ans, err := c.submitStaged(&s, sp, &dst)
	if err != nil {
		return 0, fmt.Errorf("client: send to %s: %w", dst, err)
	}
	id := ans.RPCID
	if id == 0 || id&1 != 0 { // not recorded by takeAnswer
		c.stats.BadCompletions++
		return 0, fmt.Errorf("client: send to %s: daemon accepted it as RPC %d, not a client id: %w", dst, id, codeErr(shm.ErrCodeBadRPC))
	}
	c.stats.Sent++
	return id, nil
}

// stage checks msg's length, takes arena room for it (waiting until room
// passes) and copies it there.
func (c *Client) stage(msg []byte, room time.Time) (arenaSpan, error) {
	n := uint64(len(msg))
	if n == 0 || n > uint64(c.lim.MaxMessage) || n > c.arena.size {
		return arenaSpan{}, fmt.Errorf("%d bytes (1..%d, arena %d): %w", n, c.lim.MaxMessage, c.arena.size, ErrMessageSize)
	}
	sp, ok := c.arena.alloc(n)
	if !ok {
		c.stats.ArenaWaits++
		for !ok {
			if err := c.waitCQ(room); err == errEnd {
				return arenaSpan{}, fmt.Errorf("%d bytes, %d free in pieces: %w", n, c.arena.avail, ErrArenaFull)
			} else if err != nil {
				return arenaSpan{}, err
			}
			sp, ok = c.arena.alloc(n)
		}
	}
	copy(c.amem[sp.off:sp.off+n], msg)
	return sp, nil
}

// submitStaged submits s (Send or Reply), whose message stage put in sp,
// and waits for its answer (sendTo: as await). The range stays taken,
// under s's cookie, until the daemon releases it; if s could not be
// submitted it is freed.
func (c *Client) submitStaged(s *shm.Submission, sp arenaSpan, sendTo *Addr) (ans shm.Completion, err error) {
	cookie, err := c.pushStaged(s, sp)
	if err != nil {
		return ans, err
	}
	ans, err = c.await(cookie, sendTo)
	c.flush()
	if err == nil && ans.Op == shm.CompError {
		err = codeErr(ans.Err)
	}
	return ans, err
}

// pushStaged submits s, whose message stage put in sp, and records the
// range as in flight under its cookie; if s could not be submitted the
// range is freed.
func (c *Client) pushStaged(s *shm.Submission, sp arenaSpan) (uint64, error) {
	s.Offset = sp.off
	cookie, err := c.submit(s)
	if err != nil {
		c.arena.release(sp)
		return 0, err
	}
	// Nothing was read since the push: the range is recorded before any
	// completion could release it.
	c.inflight[cookie] = sent{span: sp, length: s.Length, rode: pageRun{s.Page, s.Pages}}
	return cookie, nil
}

// call submits s and waits for its answer; an Error answer becomes a
// *CodeError.
func (c *Client) call(s *shm.Submission) (shm.Completion, error) {
	cookie, err := c.submit(s)
	if err != nil {
		return shm.Completion{}, err
	}
	ans, err := c.await(cookie, nil)
	c.flush()
	if err != nil {
		return ans, err
	}
	if ans.Op == shm.CompError {
		return ans, codeErr(ans.Err)
	}
	return ans, nil
}

// Wait returns the result of client RPC id, waiting up to timeout for it
// (see "Timeouts" in the package doc): the response, whose Data must be
// Released, or the RPC's failure as an error wrapping its code. It
// returns ErrNoRPC if id is not an RPC of this client whose result is
// still to be taken (Receive may have taken it).
func (c *Client) Wait(id uint64, timeout time.Duration) (*Message, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if id == 0 || id&1 != 0 {
		return nil, fmt.Errorf("client: wait for RPC %d (client ids are even): %w", id, codeErr(shm.ErrCodeBadRPC))
	}
	return c.wait(id, deadline(timeout))
}

func (c *Client) wait(id uint64, end time.Time) (*Message, error) {
	for {
		if i := c.find(id); i >= 0 {
			m := c.take(i)
			if m.Err != nil {
				return nil, m.Err
			}
			return m, nil
		}
		if _, ok := c.rpcs[id]; !ok {
			return nil, fmt.Errorf("client: wait for RPC %d: %w", id, codeErr(shm.ErrCodeNoRPC))
		}
		if err := c.waitCQ(end); err == errEnd {
			return nil, ErrWaitTimeout
		} else if err != nil {
			return nil, err
		}
	}
}

// abandon aborts client RPC id and drops its result when it comes.
func (c *Client) abandon(id uint64) {
	if r, ok := c.rpcs[id]; ok {
		r.abandoned = true
		c.rpcs[id] = r
		c.call(&shm.Submission{Op: shm.OpAbort, RPCID: id}) // NoRPC: it ended meanwhile
	}
	if i := c.find(id); i >= 0 { // arrived while the abort was answered
		c.take(i).Release()
	}
}

// Receive returns the oldest request or client-RPC result not yet taken,
// waiting up to timeout for one (see "Timeouts" in the package doc). A
// failed RPC comes back as a Message with Err set and a nil error.
func (c *Client) Receive(timeout time.Duration) (*Message, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	end := deadline(timeout)
	for len(c.queue) == 0 {
		if err := c.waitCQ(end); err == errEnd {
			return nil, ErrWaitTimeout
		} else if err != nil {
			return nil, err
		}
	}
	return c.take(0), nil
}

// Reply answers request req (from Receive) with resp, copied into the
// transmit arena, and returns when the daemon accepts it. req is not
// released: its Data stays valid until req.Release.
func (c *Client) Reply(req *Message, resp []byte) error { return c.reply(req, resp, false) }

// ReplyAsync answers request req like Reply, but returns once the reply is
// on the submission ring, without waiting for the daemon's answer, so a
// server can answer a burst of requests within one pass of the daemon's
// loop instead of one pass each. The daemon's answer is read later, by
// any call that reads completions: an acceptance counts in
// Stats.Replies (where the daemon takes quiet submissions, the reply asks
// for no Accepted, and it counts when its arena range comes back); a refusal (the RPC has ended: its client aborted or
// timed out, or it was never ours) counts in Stats.Errors and
// Stats.ReplyRefused and is queued as a Message for Receive, with req's
// ID and Peer, Request false and Err set — the reply is not lost
// silently. Errors returned here are local: the message's length, no
// arena room within 10 s, a full submission ring.
func (c *Client) ReplyAsync(req *Message, resp []byte) error { return c.reply(req, resp, true) }

// reply is Reply, or ReplyAsync when async.
func (c *Client) reply(req *Message, resp []byte, async bool) error {
	if err := c.usable(); err != nil {
		return err
	}
	if req == nil || !req.Request || req.c != c {
		return errors.New("client: reply: not a request received by this client")
	}
	sp, err := c.stage(resp, time.Now().Add(answerWait))
	if err == nil {
		s := shm.Submission{Op: shm.OpReply, RPCID: req.ID, PeerPort: req.Peer.Port,
			Length: uint32(len(resp))}
		s.PeerIP, s.PeerIP6 = shm.PeerFields(req.Peer.IP)
		if async {
			quiet := c.features&shm.FeatureQuietAccept != 0
			if quiet {
				s.Flags = shm.SubFlagQuiet // accepted: its Released says so; refused: an Error
			}
			var cookie uint64
			if cookie, err = c.pushStaged(&s, sp); err == nil {
				c.replies[cookie] = asyncReply{id: req.ID, peer: req.Peer, quiet: quiet}
			}
		} else if _, err = c.submitStaged(&s, sp, nil); err == nil {
			c.stats.Replies++
		}
	}
	if err != nil {
		return fmt.Errorf("client: reply to RPC %d from %s: %w", req.ID, req.Peer, err)
	}
	return nil
}

// Abort aborts client RPC id. Its result, an error wrapping ErrAborted,
// still arrives through Wait(id) or Receive. It fails with ErrNoRPC if
// the RPC has already ended.
func (c *Client) Abort(id uint64) error {
	if err := c.usable(); err != nil {
		return err
	}
	if id == 0 || id&1 != 0 {
		return fmt.Errorf("client: abort RPC %d (client ids are even): %w", id, codeErr(shm.ErrCodeBadRPC))
	}
	if _, err := c.call(&shm.Submission{Op: shm.OpAbort, RPCID: id}); err != nil {
		return fmt.Errorf("client: abort RPC %d: %w", id, err)
	}
	return nil
}

// AbortAll aborts every client RPC of this worker. When it returns, the
// failure of each (ErrAborted) has arrived, for Wait or Receive.
func (c *Client) AbortAll() error {
	if err := c.usable(); err != nil {
		return err
	}
	if _, err := c.call(&shm.Submission{Op: shm.OpAbortAll}); err != nil {
		return fmt.Errorf("client: abort all: %w", err)
	}
	return nil
}
