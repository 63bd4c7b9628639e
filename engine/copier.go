package engine

// The receive copy off the loop: with Config.Copier, each copy of at
// least CopyMin bytes into a message's committed buffer goes to a copier
// (Copy, Done) instead of being made here. Start at copyIn (the hand-off),
// then PollCopies (delivery behind the fence) and holdBuf (buffers of
// messages that ended undelivered). The rules that keep it correct are
// in docs/design.md#shards-and-the-receive-copier.

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
