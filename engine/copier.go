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
//   - a buffer given back before delivery (its RPC ended) may be taken by
//     another message at once: the copier works in order, so the new
//     message's copies come after the old ones, and it is delivered only
//     after them;
//   - memory a copy writes must stay mapped until the copier is past it:
//     the worker hub asks the host to settle its copies before a
//     session's region is let go (hub.Host.SettleCopies).
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

// PollCopies delivers the messages whose copies the copier finished. The
// loop calls it each pass while CopiesPending.
func (e *Endpoint) PollCopies() {
	if len(e.fence) == 0 {
		return
	}
	done := e.cfg.Copier.Done()
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

// CopiesPending reports whether messages wait for the copier.
func (e *Endpoint) CopiesPending() bool { return len(e.fence) > 0 }
