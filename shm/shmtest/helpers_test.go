package shmtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

func testParams() shm.Params {
	return shm.Params{SQEntries: 16, CQEntries: 64, ArenaSize: 1 << 20, PoolPages: 8}
}

// start runs a fake engine on a fresh socket; the test's cleanup stops it.
func start(t *testing.T, cfg Config) *Engine {
	t.Helper()
	cfg.Path = filepath.Join(t.TempDir(), "s")
	if cfg.Params == (shm.Params{}) {
		cfg.Params = testParams()
	}
	e, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// worker is a bare worker over shm.Dial: it writes submissions and reads
// completions itself, so the tests see every entry the engine writes.
type worker struct {
	t    *testing.T
	a    *shm.Attach
	sq   *shm.Producer
	cq   *shm.Consumer
	next uint64 // the next free arena offset (never reused)
}

func attach(t *testing.T, e *Engine) *worker {
	t.Helper()
	a, err := shm.Dial(e.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sq, err := shm.NewProducer(a.Layout.SQ(a.Region), a.Layout.SQEntries)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := shm.NewConsumer(a.Layout.CQ(a.Region), a.Layout.CQEntries)
	if err != nil {
		t.Fatal(err)
	}
	return &worker{t: t, a: a, sq: sq, cq: cq}
}

func (w *worker) submit(s shm.Submission) {
	w.t.Helper()
	var slot shm.Slot
	s.Encode(&slot)
	if !w.sq.Push(&slot) {
		w.t.Fatal("submission ring full")
	}
}

// send writes msg into a fresh arena range and submits a Send of it.
func (w *worker) send(cookie uint64, ip [4]byte, port uint16, msg string) {
	w.t.Helper()
	copy(w.a.Layout.Arena(w.a.Region)[w.next:], msg)
	w.submit(shm.Submission{Op: shm.OpSend, Cookie: cookie, PeerIP: ip, PeerPort: port, Offset: w.next,
		Length: uint32(len(msg))})
	w.next += uint64(len(msg))
}

// reply answers request req (a Request completion) with msg.
func (w *worker) reply(cookie uint64, req shm.Completion, msg string) {
	w.t.Helper()
	copy(w.a.Layout.Arena(w.a.Region)[w.next:], msg)
	w.submit(shm.Submission{Op: shm.OpReply, Cookie: cookie, RPCID: req.RPCID, PeerIP: req.PeerIP,
		PeerPort: req.PeerPort, Offset: w.next, Length: uint32(len(msg))})
	w.next += uint64(len(msg))
}

// read returns the next n completions, each as a line (see line), and the
// last one decoded; it fails the test after 5 s.
func (w *worker) read(n int) (string, shm.Completion) {
	w.t.Helper()
	var lines []string
	var c shm.Completion
	lim := w.a.Layout.Limits(0)
	for deadline := time.Now().Add(5 * time.Second); len(lines) < n; {
		var slot shm.Slot
		if !w.cq.Pop(&slot) {
			if time.Now().After(deadline) {
				w.t.Fatalf("got %d completions of %d: %q", len(lines), n, lines)
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		var code shm.ErrCode
		if c, code = shm.ParseCompletion(&slot, &lim); code != shm.ErrCodeNone {
			lines = append(lines, fmt.Sprintf("bad %v", code))
			continue
		}
		lines = append(lines, w.line(c))
	}
	return strings.Join(lines, "; "), c
}

// line is a completion in a few words; a message shows its bytes.
func (w *worker) line(c shm.Completion) string {
	switch c.Op {
	case shm.CompAccepted:
		if c.Flags&shm.CompFlagReleased != 0 {
			return fmt.Sprintf("accepted c%d released", c.Cookie)
		}
		return fmt.Sprintf("accepted c%d", c.Cookie)
	case shm.CompReleased:
		return fmt.Sprintf("released c%d %d@%d", c.Cookie, c.Length, c.Offset)
	case shm.CompError:
		return fmt.Sprintf("error c%d %v", c.Cookie, c.Err)
	case shm.CompRequest, shm.CompResponse:
		pool := w.a.Layout.Pool(w.a.Region)
		msg := pool[int(c.Page)*shm.PageSize:][:c.Length]
		return fmt.Sprintf("%v c%d %q from %d", c.Op, c.Cookie, msg, c.PeerPort)
	}
	return c.Op.String()
}

// idle checks that nothing more arrives for a while.
func (w *worker) idle() {
	w.t.Helper()
	time.Sleep(5 * time.Millisecond)
	var slot shm.Slot
	if w.cq.Pop(&slot) {
		lim := w.a.Layout.Limits(0)
		c, _ := shm.ParseCompletion(&slot, &lim)
		w.t.Errorf("unexpected completion %s", w.line(c))
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
	}
}
