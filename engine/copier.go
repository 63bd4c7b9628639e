package engine

// The receive copy off the loop.
//
// Every byte a message receives is copied once, from the frame into the
// message's committed buffer (a worker's pool pages, or the heap): on the
// polling loop that is the largest part of a long message's cost. With
// Config.Copier the engine hands each such copy of at least CopyMin bytes
// to a copier (host.Copier: a thread of its own; a DMA engine would do
// as well) and goes on; the copier does them in order and says how far it
// got (Done). So:
//
//   - the frame a copy reads must stay as it is until the copier is past
//     that copy: the owner of the frame (the host, which holds the mbuf)
//     keeps it until Done reaches the number Copy returned;
//   - a message whose last copy is not done yet is not delivered: it
//     waits in the endpoint's fence, in order, and PollCopies (the loop,
//     each pass) delivers those the copier is past. A message is never
//     delivered before its bytes are in its buffer;
//   - a buffer whose message ends undelivered (its RPC ended: an
//     RPC_UNKNOWN, an ACK, an eviction, a closed port) goes back to its
//     owner only once the copier is past every copy into it (heldBuf,
//     counted in RecvBufsHeldForCopier), as a receive DMA's buffer is
//     reused only after its completion. Not that the copies run in
//     order: the next message to get the buffer has bytes the loop
//     writes itself (those staged before its commit, payloads under
//     CopyMin, copies the copier refused), which the old message's
//     pending copies would overwrite, after its delivery when it has no
//     copy of its own to wait for;
//   - memory a copy writes must stay mapped until the copier is past it:
//     the worker hub lets a session's region go only once the copier is
//     past the copies handed over before the session ended
//     (hub.Host.CopyMark, CopiesPast), without waiting on the loop.
//
// Tenants stay apart as without a copier: the engine chooses every
// destination (the buffer its port's RecvBuf gave), within its message's
// bounds, and the copier writes nothing else.

// Copier copies message bytes off the polling loop (see above).
type Copier interface {
	// Copy takes the copy of src into dst (len(dst) == len(src)) and
	// returns its number, higher than every earlier one; 0 when it cannot
	// take it now (the engine copies it itself). src stays unchanged until
	// Done reaches the number.
	Copy(dst, src []byte) uint64
	// Done is the number of the last copy finished, all earlier ones
	// finished too.
	Done() uint64
}

// DefaultCopyMin is Config.CopyMin's zero value: a payload shorter than
// this is copied by the engine (handing it over costs about as much).
const DefaultCopyMin = 512

// fenced is a message whose bytes the copier is still writing.
type fenced struct {
	seq     uint64
	port    *Port
	m       Message
	private bool
}

// heldBuf is the buffer of a message that ended undelivered while copies
// into it were pending: it goes back to its owner (FreeRecvBuf, or the
// heap budget) once the copier is past seq.
type heldBuf struct {
	seq   uint64
	buf   []byte
	hooks *PortHooks
	heap  bool
}

// holdBuf reports whether in's buffer must wait for the copier before it
// is given back, and if so keeps it (releaseIn).
func (e *Endpoint) holdBuf(in *inMsg, h *PortHooks) bool {
	if in.copySeq == 0 || in.copySeq <= e.cfg.Copier.Done() {
		return false
	}
	e.heldBufs = append(e.heldBufs, heldBuf{in.copySeq, in.buf, h, in.heap})
	e.m.RecvBufsHeldForCopier++
	return true
}

// freeHeldBufs gives back the held buffers the copier is past (done).
func (e *Endpoint) freeHeldBufs(done uint64) {
	k := 0
	for _, b := range e.heldBufs {
		if b.seq > done {
			e.heldBufs[k] = b
			k++
			continue
		}
		if b.heap {
			e.recvHeap -= len(b.buf)
		} else if b.hooks.FreeRecvBuf != nil {
			b.hooks.FreeRecvBuf(b.buf)
		}
	}
	clear(e.heldBufs[k:])
	e.heldBufs = e.heldBufs[:k]
}

// copyIn copies src into dst, in's buffer: by the copier when there is
// one and src is long enough, else here.
func (e *Endpoint) copyIn(in *inMsg, dst, src []byte) {
	if c := e.cfg.Copier; c != nil && len(src) >= e.copyMin {
		if seq := c.Copy(dst, src); seq != 0 {
			in.copySeq = seq
			e.m.CopiesHandedOff++
			return
		}
		e.m.CopiesRefused++
	}
	copy(dst, src)
}

// deliverCopied delivers m to p once the copier is past seq (0: no copy
// pending), in order with the messages already waiting.
func (e *Endpoint) deliverCopied(p *Port, m Message, private bool, seq uint64) {
	if seq != 0 && (len(e.fence) > 0 || seq > e.cfg.Copier.Done()) {
		e.fence = append(e.fence, fenced{seq, p, m, private})
		return
	}
	p.deliver(m, private)
}

// deliver delivers a fenced message; one whose port closed while it
// waited gives its buffer back instead.
func (f *fenced) deliver() {
	if p := f.port; p.closed {
		if free := p.hooks.FreeRecvBuf; free != nil && f.m.Data != nil {
			free(f.m.Data)
		}
		return
	}
	f.port.deliver(f.m, f.private)
}

// PollCopies delivers the messages whose copies the copier finished, and
// gives back the held buffers it is past. The loop calls it each pass
// (it returns at once when nothing waits).
func (e *Endpoint) PollCopies() {
	if len(e.fence) == 0 && len(e.heldBufs) == 0 {
		return
	}
	done := e.cfg.Copier.Done()
	if len(e.heldBufs) > 0 {
		e.freeHeldBufs(done)
	}
	k := 0
	for ; k < len(e.fence) && e.fence[k].seq <= done; k++ {
		f := &e.fence[k]
		f.deliver()
		*f = fenced{}
	}
	if k > 0 {
		e.fence = e.fence[:copy(e.fence, e.fence[k:])]
	}
}

// CopiesPending reports whether messages or buffers wait for the copier.
func (e *Endpoint) CopiesPending() bool { return len(e.fence) > 0 || len(e.heldBufs) > 0 }
