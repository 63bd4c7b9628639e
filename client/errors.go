package client

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Errors the daemon reports, one per shm.ErrCode of an RPC or an accepted
// submission. They arrive wrapped in a *CodeError (and usually in an error
// that names the operation): test with errors.Is.
var (
	ErrTimeout         = errors.New("homa: RPC timed out (peer silent too long)")
	ErrUnreachable     = errors.New("homa: peer address unreachable")
	ErrPortUnreachable = errors.New("homa: server port unreachable at the peer")
	ErrAborted         = errors.New("homa: RPC aborted")
	ErrNoBufferSpace   = errors.New("homa: no receive-pool pages for the message")
	ErrNoRPC           = errors.New("homa: no such RPC")
	ErrPortInUse       = errors.New("homa: port in use")
	ErrLimit           = errors.New("homa: per-worker limit reached")
	ErrPeerRestarted   = errors.New("homa: peer restarted and lost the RPC")
	// ErrPeerMessageLength: a message above DefaultMaxMessage to a peer
	// that may run kernel Homa, which takes no longer ones (the daemon's
	// protocol.long_message_peers does not name it). After a refused
	// Reply the request may be answered again, shorter.
	ErrPeerMessageLength = errors.New("homa: message too long for the peer (kernel Homa takes at most 1,000,000 bytes)")
	// ErrClosed: the daemon closed the port or session, or this Client
	// was closed.
	ErrClosed = errors.New("homa: closed")
)

// Errors of this package's own waiting and checks.
var (
	// ErrWaitTimeout: a wait (Wait, Receive, Call) ran out of its timeout.
	// The RPC, if any, goes on (except under Call, which aborts it).
	// errors.Is(ErrWaitTimeout, os.ErrDeadlineExceeded) holds.
	ErrWaitTimeout = fmt.Errorf("client: wait timed out: %w", os.ErrDeadlineExceeded)
	// ErrArenaFull: the transmit arena had no room for the message within
	// the call's bound (10 s for Send and Reply; Call's timeout, if
	// shorter). Nothing was submitted.
	ErrArenaFull = errors.New("client: transmit arena full")
	// ErrMessageSize: a message of 0 bytes, or longer than MaxMessage or
	// than the transmit arena. Nothing was submitted.
	ErrMessageSize = errors.New("client: message size out of range")
	// ErrNoAnswer: the daemon did not take a submission (the submission
	// ring stayed full) or did not answer it within 10 s, though its
	// control connection is open: it is stuck, not gone.
	ErrNoAnswer = errors.New("client: no answer from the daemon")
	// ErrDaemonGone: the daemon closed this session's control connection
	// — it exited, was killed, or ended the session — so no completion
	// will come. A wait that was under way returns it within about a
	// millisecond, and every later call of the Client returns it; only
	// Close is left to do (Release does nothing).
	ErrDaemonGone = errors.New("client: the daemon is gone (it closed the control connection)")
)

// CodeError is an shm.ErrCode, from an error completion or from this
// package's own check of a submission before it is sent (a bad port, a
// peer address 0.0.0.0, an RPC id of the wrong kind). It unwraps to the
// matching Err* variable for the codes that have one; the codes of bad
// entries (1..15) have none and are told apart with errors.As.
type CodeError struct {
	Code shm.ErrCode
}

func (e *CodeError) Error() string {
	if s := e.Unwrap(); s != nil {
		return s.Error()
	}
	return "homa: " + e.Code.String() + " (code " + strconv.Itoa(int(e.Code)) + ")"
}

// Unwrap returns the Err* variable of the code, or nil.
func (e *CodeError) Unwrap() error {
	switch e.Code {
	case shm.ErrCodeTimeout:
		return ErrTimeout
	case shm.ErrCodeUnreachable:
		return ErrUnreachable
	case shm.ErrCodePortUnreachable:
		return ErrPortUnreachable
	case shm.ErrCodeAborted:
		return ErrAborted
	case shm.ErrCodeNoBufferSpace:
		return ErrNoBufferSpace
	case shm.ErrCodeNoRPC:
		return ErrNoRPC
	case shm.ErrCodePortInUse:
		return ErrPortInUse
	case shm.ErrCodeLimit:
		return ErrLimit
	case shm.ErrCodePeerRestarted:
		return ErrPeerRestarted
	case shm.ErrCodeClosed:
		return ErrClosed
	case shm.ErrCodePeerMessageLength:
		return ErrPeerMessageLength
	}
	return nil
}

func codeErr(c shm.ErrCode) error { return &CodeError{Code: c} }

// rpcErr is the error of a client RPC that failed.
func rpcErr(id uint64, peer Addr, c shm.ErrCode) error {
	return fmt.Errorf("client: RPC %d to %s: %w", id, peer, codeErr(c))
}
