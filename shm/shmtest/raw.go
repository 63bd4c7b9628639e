package shmtest

import (
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Raw is a worker that speaks the ring protocol itself, for tests that
// write anything into its submission ring or its arena, whenever they
// like, as a hostile or careless worker may: against this package's
// engine, the daemon's hub, or a daemon.
type Raw struct {
	At  *shm.Attach
	SQ  *shm.Producer
	CQ  *shm.Consumer
	Lim shm.Limits
}

// DialRaw attaches to the worker socket at path; the region is let go
// when the test ends.
func DialRaw(t testing.TB, path string) *Raw {
	t.Helper()
	at, err := shm.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	sq, err1 := shm.NewProducer(at.Layout.SQ(at.Region), at.Layout.SQEntries)
	cq, err2 := shm.NewConsumer(at.Layout.CQ(at.Region), at.Layout.CQEntries)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	w := &Raw{At: at, SQ: sq, CQ: cq, Lim: at.Layout.Limits(0)}
	t.Cleanup(func() { w.At.Close() })
	return w
}

// Arena is the region's transmit arena.
func (w *Raw) Arena() []byte { return w.At.Layout.Arena(w.At.Region) }

// Message is the bytes of a Request or Response completion in the pool.
func (w *Raw) Message(c shm.Completion) []byte {
	off := uint64(c.Page) * shm.PageSize
	return w.At.Layout.Pool(w.At.Region)[off : off+uint64(c.Length)]
}

// PushSlot pushes s, waiting (5 s at most) while the ring is full. It
// does not ring the doorbell (RingIfAsleep).
func (w *Raw) PushSlot(t testing.TB, s *shm.Slot) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !w.SQ.Push(s) {
		if time.Now().After(deadline) {
			t.Fatal("submission ring stays full")
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// Submit pushes s (PushSlot).
func (w *Raw) Submit(t testing.TB, s shm.Submission) {
	t.Helper()
	var slot shm.Slot
	s.Encode(&slot)
	w.PushSlot(t, &slot)
}

// RingIfAsleep rings the doorbell if the loop went to sleep with this
// worker's submission ring's wait flag raised, as a client library does
// after its submissions.
func (w *Raw) RingIfAsleep() {
	if w.At.Doorbell >= 0 && w.SQ.TakeWaiter() {
		shm.RingFD(w.At.Doorbell)
	}
}

// Poll returns the next completion, if one came; a malformed one fails
// the test.
func (w *Raw) Poll(t testing.TB) (shm.Completion, bool) {
	t.Helper()
	var slot shm.Slot
	if !w.CQ.Pop(&slot) {
		return shm.Completion{}, false
	}
	c, code := shm.ParseCompletion(&slot, &w.Lim)
	if code != shm.ErrCodeNone {
		t.Fatalf("bad completion from the daemon: %v (%+v)", code, c)
	}
	return c, true
}

// Next returns the next completion, failing the test after timeout.
func (w *Raw) Next(t testing.TB, timeout time.Duration) shm.Completion {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if c, ok := w.Poll(t); ok {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", timeout)
		}
		time.Sleep(5 * time.Microsecond)
	}
}

// Expect returns the next completion (within 5 s), which must have op.
func (w *Raw) Expect(t testing.TB, op shm.CompOp) shm.Completion {
	t.Helper()
	c := w.Next(t, 5*time.Second)
	if c.Op != op {
		t.Fatalf("completion %v (err %v), want %v: %+v", c.Op, c.Err, op, c)
	}
	return c
}

// ExpectPastReleased is Expect for the next completion that is not a
// Released (those of earlier messages may come first), within timeout.
func (w *Raw) ExpectPastReleased(t testing.TB, op shm.CompOp, timeout time.Duration) shm.Completion {
	t.Helper()
	for {
		c := w.Next(t, timeout)
		if c.Op == op {
			return c
		}
		if c.Op != shm.CompReleased {
			t.Fatalf("completion %v (err %v), want %v: %+v", c.Op, c.Err, op, c)
		}
	}
}
