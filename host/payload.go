package host

import (
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
)

// Zero-copy payloads. A message sent from a worker's shared memory goes
// out as packets whose payload mbufs are attached to that memory as an
// external buffer (dpdk.ExtBuf), which counts when the last mbuf attached
// to it is freed — by the driver, once the packet has left. The transmit
// side owns those buffers: the worker hub asks for a reference
// (HoldPayload), hands it to the engine with the message, lets go of it
// when the engine is done with the message (LetGoPayload), and polls
// PayloadSent until the memory may be reused. References are small
// integers (index + 1); 0 is none.

// payloadTable is the host's external buffers, reused.
type payloadTable struct {
	bufs []payloadBuf        // reference r is bufs[r-1]
	free []engine.PayloadRef // references not in use
}

type payloadBuf struct {
	ext  *dpdk.ExtBuf
	base uint64 // ext.Released() when the message took it
	used bool
}

// ext returns the buffer of reference r, or nil.
func (t *payloadTable) ext(r engine.PayloadRef) *dpdk.ExtBuf {
	if r == 0 || r > engine.PayloadRef(len(t.bufs)) || !t.bufs[r-1].used {
		return nil
	}
	return t.bufs[r-1].ext
}

// HoldPayload returns a reference for one message sent from memory that
// must stay unchanged until PayloadSent, or false when the port cannot
// send from memory (its payloads are then copied). Loop thread only.
func (h *Host) HoldPayload() (engine.PayloadRef, bool) {
	if !h.tx.multiSeg {
		return 0, false
	}
	t := &h.tx.payloads
	var r engine.PayloadRef
	if n := len(t.free); n > 0 {
		r = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		e, err := dpdk.NewExtBuf()
		if err != nil {
			return 0, false // sent with a copy instead
		}
		t.bufs = append(t.bufs, payloadBuf{ext: e})
		r = engine.PayloadRef(len(t.bufs))
	}
	b := &t.bufs[r-1]
	b.ext.Hold()
	b.base, b.used = b.ext.Released(), true
	return r, true
}

// LetGoPayload says the message of reference r no longer needs its
// memory beyond the packets already sent from it: the engine is done
// with it, or refused it.
func (h *Host) LetGoPayload(r engine.PayloadRef) {
	if e := h.tx.payloads.ext(r); e != nil {
		e.Unhold() // counts the release at once when no mbuf is attached
	}
}

// PayloadSent reports, after LetGoPayload, whether the last packet
// attached to r's memory has been freed; r is then free for reuse and
// must not be used again.
func (h *Host) PayloadSent(r engine.PayloadRef) bool {
	t := &h.tx.payloads
	if t.ext(r) == nil {
		return true
	}
	b := &t.bufs[r-1]
	if b.ext.Released() == b.base {
		return false
	}
	b.used = false
	t.free = append(t.free, r)
	return true
}

// close frees the buffers; no mbuf may still be attached to them.
func (t *payloadTable) close() {
	for _, b := range t.bufs {
		b.ext.Close()
	}
	t.bufs, t.free = nil, nil
}
