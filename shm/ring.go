package shm

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// A ring's bytes: a 256-byte control block, then Entries slots of
// EntrySize bytes. The producer's index and the consumer's index sit 128
// bytes apart, so neither the line nor its adjacent-line prefetch partner
// is shared between the two writers.
//
//	off size field  written by   meaning
//	  0  8   tail   producer     entries ever pushed (free-running, wraps at 2^64)
//	128  8   head   consumer     entries ever popped (free-running)
//	136  4   wait   consumer     nonzero: the consumer is about to sleep; wake it
//	256 ...  slots  producer     slot i holds the entry with index i mod Entries
const (
	// RingHeaderSize is the bytes of a ring's control block.
	RingHeaderSize = 256
	// EntrySize is the bytes of one ring slot.
	EntrySize = 64
	// MaxRingEntries bounds a ring (64 MB of slots).
	MaxRingEntries = 1 << 20

	ringTail = 0
	ringHead = 128
	ringWait = 136
)

// RingBytes is the size of a ring of entries slots.
func RingBytes(entries uint64) uint64 { return RingHeaderSize + entries*EntrySize }

// Slot is one ring entry's bytes. Entries are encoded into a Slot the
// caller owns and copied into the ring by Push, and copied out by Pop, so
// the consumer never decodes bytes the producer can still change.
type Slot [EntrySize]byte

var (
	// ErrRingGeometry: ring memory of the wrong size or alignment, or
	// entries not a power of two in 1..MaxRingEntries.
	ErrRingGeometry = errors.New("shm: bad ring geometry")
	// ErrRingCorrupt: the indices in the ring say more than Entries
	// entries are outstanding.
	ErrRingCorrupt = errors.New("shm: ring indices corrupt")
)

// ring is what both ends share: views of the memory and the counter of
// corrupt index observations.
type ring struct {
	slots   []byte  // Entries*EntrySize bytes in the shared memory
	size    uint64  // Entries
	mask    uint64  // Entries-1
	tail    *uint64 // producer's index in the shared memory
	head    *uint64 // consumer's index in the shared memory
	wait    *uint32 // consumer's sleep flag in the shared memory
	corrupt uint64  // times the other end's index was out of range
}

func newRing(mem []byte, entries uint64) (ring, error) {
	if entries == 0 || entries&(entries-1) != 0 || entries > MaxRingEntries {
		return ring{}, fmt.Errorf("%w: %d entries", ErrRingGeometry, entries)
	}
	if uint64(len(mem)) != RingBytes(entries) {
		return ring{}, fmt.Errorf("%w: %d bytes for %d entries, want %d", ErrRingGeometry, len(mem), entries, RingBytes(entries))
	}
	if !isAligned(mem, CacheLine) {
		return ring{}, fmt.Errorf("%w: memory not 64-byte aligned", ErrRingGeometry)
	}
	return ring{
		slots: mem[RingHeaderSize:len(mem):len(mem)],
		size:  entries,
		mask:  entries - 1,
		tail:  u64At(mem, ringTail),
		head:  u64At(mem, ringHead),
		wait:  u32At(mem, ringWait),
	}, nil
}

// slot returns the slot for index i. Masking keeps it inside the ring
// whatever i is.
func (r *ring) slot(i uint64) *Slot {
	off := (i & r.mask) * EntrySize
	return (*Slot)(r.slots[off : off+EntrySize])
}

// InitRing writes a fresh control block: both indices at start, no
// waiter. Only the region's creator calls it, before either end attaches.
// start is 0 in use; tests start near 2^64 to cross the wrap.
func InitRing(mem []byte, entries, start uint64) error {
	r, err := newRing(mem, entries)
	if err != nil {
		return err
	}
	clear(mem[:RingHeaderSize])
	atomic.StoreUint64(r.tail, start)
	atomic.StoreUint64(r.head, start)
	return nil
}

// attach reads both indices once and checks them. The caller trusts the
// ring at attach time (the daemon attaches before the worker gets the
// region; a worker trusts the daemon).
func attach(r *ring) (tail, head uint64, err error) {
	tail, head = atomic.LoadUint64(r.tail), atomic.LoadUint64(r.head)
	if tail-head > r.size {
		return 0, 0, fmt.Errorf("%w: tail %d head %d for %d entries", ErrRingCorrupt, tail, head, r.size)
	}
	return tail, head, nil
}

// Producer is the end of a ring that pushes. It keeps its own index in
// private memory and only ever writes it to the ring, so the other end
// cannot move it. Use from one goroutine.
type Producer struct {
	r    ring
	tail uint64 // next index to push; authoritative, private
	head uint64 // consumer's index as last seen and found valid
}

// NewProducer attaches the producer end of the ring in mem (RingBytes(
// entries) bytes, 64-byte aligned, initialised by InitRing). mem must
// stay mapped while the Producer is used.
func NewProducer(mem []byte, entries uint64) (*Producer, error) {
	r, err := newRing(mem, entries)
	if err != nil {
		return nil, err
	}
	tail, head, err := attach(&r)
	if err != nil {
		return nil, err
	}
	return &Producer{r: r, tail: tail, head: head}, nil
}

// refresh reloads the consumer's index (acquire: its reads of the slots
// it released are done). A value claiming more than Entries outstanding,
// or ahead of what was pushed, is counted and ignored.
func (p *Producer) refresh() {
	h := atomic.LoadUint64(p.r.head)
	if p.tail-h > p.r.size {
		p.r.corrupt++
		return
	}
	p.head = h
}

// Push copies s into the next slot and publishes it. It returns false if
// the ring is full.
func (p *Producer) Push(s *Slot) bool {
	if p.tail-p.head == p.r.size {
		if p.refresh(); p.tail-p.head == p.r.size {
			return false
		}
	}
	*p.r.slot(p.tail) = *s
	p.tail++
	atomic.StoreUint64(p.r.tail, p.tail) // release: the slot is written
	return true
}

// PushBurst pushes as many of src as fit, in order, with one index
// update, and returns how many.
func (p *Producer) PushBurst(src []Slot) int {
	free := p.r.size - (p.tail - p.head)
	if free < uint64(len(src)) {
		p.refresh()
		free = p.r.size - (p.tail - p.head)
	}
	n := min(uint64(len(src)), free)
	for i := range n {
		*p.r.slot(p.tail + i) = src[i]
	}
	if n > 0 {
		p.tail += n
		atomic.StoreUint64(p.r.tail, p.tail)
	}
	return int(n)
}

// Len returns the entries pushed and not yet popped, as far as the
// consumer's index shows.
func (p *Producer) Len() int { p.refresh(); return int(p.tail - p.head) }

// Free returns the slots Push can fill now.
func (p *Producer) Free() int { return int(p.r.size) - p.Len() }

// Cap returns the ring's entries.
func (p *Producer) Cap() int { return int(p.r.size) }

// Corrupt returns how many times the consumer's index was found out of
// range. Any nonzero count means the other end is broken or hostile.
func (p *Producer) Corrupt() uint64 { return p.r.corrupt }

// ConsumerWaiting reports whether the consumer has said it is going to
// sleep. Call it after Push: the consumer sets its flag and then rereads
// the tail, the producer writes the tail and then reads the flag; with
// sequentially consistent atomics one of them sees the other.
func (p *Producer) ConsumerWaiting() bool { return atomic.LoadUint32(p.r.wait) != 0 }

// TakeWaiter clears the consumer's sleep flag and reports whether it was
// set: the producer then wakes the consumer, once per sleep. Call it
// after Push, as ConsumerWaiting.
func (p *Producer) TakeWaiter() bool {
	if atomic.LoadUint32(p.r.wait) == 0 { // the common case: a plain load, no locked op
		return false
	}
	return atomic.SwapUint32(p.r.wait, 0) != 0
}

// Consumer is the end of a ring that pops. Its index is private and
// authoritative; the producer's index is checked on every load. Use from
// one goroutine.
type Consumer struct {
	r    ring
	head uint64 // next index to pop; authoritative, private
	tail uint64 // producer's index as last seen and found valid
}

// NewConsumer attaches the consumer end of the ring in mem, as
// NewProducer does.
func NewConsumer(mem []byte, entries uint64) (*Consumer, error) {
	r, err := newRing(mem, entries)
	if err != nil {
		return nil, err
	}
	tail, head, err := attach(&r)
	if err != nil {
		return nil, err
	}
	return &Consumer{r: r, tail: tail, head: head}, nil
}

// refresh reloads the producer's index (acquire: the slots it published
// are written). A value behind the consumer or more than Entries ahead
// is counted and ignored.
func (c *Consumer) refresh() {
	t := atomic.LoadUint64(c.r.tail)
	if t-c.head > c.r.size {
		c.r.corrupt++
		return
	}
	c.tail = t
}

// Pop copies the oldest entry into dst and frees its slot. It returns
// false if the ring is empty (or its tail is corrupt; see Corrupt).
func (c *Consumer) Pop(dst *Slot) bool {
	if c.tail == c.head {
		if c.refresh(); c.tail == c.head {
			return false
		}
	}
	*dst = *c.r.slot(c.head)
	c.head++
	atomic.StoreUint64(c.r.head, c.head) // release: the slot is read
	return true
}

// PopBurst pops up to len(dst) entries, in order, with one index update,
// and returns how many.
func (c *Consumer) PopBurst(dst []Slot) int {
	avail := c.tail - c.head
	if avail < uint64(len(dst)) {
		c.refresh()
		avail = c.tail - c.head
	}
	n := min(uint64(len(dst)), avail)
	for i := range n {
		dst[i] = *c.r.slot(c.head + i)
	}
	if n > 0 {
		c.head += n
		atomic.StoreUint64(c.r.head, c.head)
	}
	return int(n)
}

// Len returns the entries waiting to be popped.
func (c *Consumer) Len() int { c.refresh(); return int(c.tail - c.head) }

// Free returns the slots the producer may still fill.
func (c *Consumer) Free() int { return int(c.r.size) - c.Len() }

// Cap returns the ring's entries.
func (c *Consumer) Cap() int { return int(c.r.size) }

// Corrupt returns how many times the producer's index was found out of
// range. Any nonzero count means the other end is broken or hostile.
func (c *Consumer) Corrupt() uint64 { return c.r.corrupt }

// SetWaiting sets or clears the consumer's sleep flag. To sleep: set it,
// then check Len once more and sleep only if it is still 0; clear it on
// waking. The producer wakes the consumer only when ConsumerWaiting.
func (c *Consumer) SetWaiting(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(c.r.wait, v)
}
