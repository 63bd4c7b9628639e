package nicq

// ring is a bounded FIFO of packet handles with room for returns at the
// head: a power-of-two circular buffer owned by one thread.
type ring[T any] struct {
	buf        []T
	head, tail uint // head: next to pop; tail: next free slot
}

func newRing[T any](capacity int) ring[T] {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return ring[T]{buf: make([]T, n)}
}

func (r *ring[T]) len() int   { return int(r.tail - r.head) }
func (r *ring[T]) full() bool { return r.len() == len(r.buf) }

func (r *ring[T]) pushBack(v T) bool {
	if r.full() {
		return false
	}
	r.buf[r.tail&uint(len(r.buf)-1)] = v
	r.tail++
	return true
}

// pushFront returns a packet to the head (a packet the NIC did not take).
func (r *ring[T]) pushFront(v T) bool {
	if r.full() {
		return false
	}
	r.head--
	r.buf[r.head&uint(len(r.buf)-1)] = v
	return true
}

func (r *ring[T]) peek() T { return r.buf[r.head&uint(len(r.buf)-1)] }

func (r *ring[T]) popFront() T {
	var zero T
	i := r.head & uint(len(r.buf)-1)
	v := r.buf[i]
	r.buf[i] = zero
	r.head++
	return v
}
