package shm

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A server with a doorbell says so in the header and hands each worker
// that asks the doorbell of its own session, once; what the worker writes
// there rings the daemon's set of doorbells. A worker that reads its
// descriptor dry takes only its own rings, and the wake-ups the other way
// (each session's eventfd) are each worker's own too. A server without a
// doorbell offers none. The descriptors go when the sessions end.
func TestControl_doorbellOfEachSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the credential check is tested as root")
	}
	bells, err := NewBells()
	if err != nil {
		t.Fatal(err)
	}
	defer bells.Close()
	path := filepath.Join(t.TempDir(), "workers.sock")
	var mu sync.Mutex
	var sessions []*Session
	srv, err := Listen(ServerConfig{Path: path, Params: controlParams(), Doorbell: true,
		OnAttach: func(s *Session) error {
			mu.Lock()
			sessions = append(sessions, s)
			mu.Unlock()
			return bells.Add(s.DoorbellFD())
		},
		OnDetach: func(s *Session) { bells.Remove(s.DoorbellFD()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	withSocket := openFDs(t)
	a, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	thief, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	if a.Layout.Features&FeatureDoorbell == 0 || a.Doorbell != -1 {
		t.Fatalf("features %#x, doorbell %d: want FeatureDoorbell offered, not yet given", a.Layout.Features, a.Doorbell)
	}
	for _, w := range []*Attach{a, thief} {
		if err := w.AskDoorbell(); err != nil {
			t.Fatal(err)
		}
	}
	if sa, st := sessions[0], sessions[1]; sa.DoorbellFD() < 0 || st.DoorbellFD() < 0 || sa.DoorbellFD() == st.DoorbellFD() {
		t.Fatalf("the sessions' doorbells %d and %d: want one each", sa.DoorbellFD(), st.DoorbellFD())
	}
	if rang := bells.Drain(); rang != 0 {
		t.Errorf("%d doorbells rang before any worker rang", rang)
	}
	// a rings; the thief reads its own descriptor dry, in vain.
	RingFD(a.Doorbell)
	var v [8]byte
	if _, err := unix.Read(thief.Doorbell, v[:]); err != unix.EAGAIN {
		t.Errorf("the thief read its doorbell: %v, want EAGAIN (another's ring taken)", err)
	}
	p := []unix.PollFd{{Fd: int32(bells.FD()), Events: unix.POLLIN}}
	if n, _ := unix.Poll(p, 0); n != 1 {
		t.Error("a worker's ring left the daemon's doorbells unreadable")
	}
	if rang := bells.Drain(); rang != 1 {
		t.Errorf("%d doorbells rang, want a's", rang)
	}
	if n, _ := unix.Poll(p, 0); n != 0 || bells.Drain() != 0 {
		t.Error("the doorbells stay readable after Drain")
	}
	// Every ring counts, the counter never read; a worker that takes
	// back its own ring (or blocks its copy) loses only its own.
	RingFD(a.Doorbell)
	if rang := bells.Drain(); rang != 1 {
		t.Errorf("a second ring: %d doorbells rang, want 1", rang)
	}
	unix.SetNonblock(thief.Doorbell, false) // the description the daemon shares: it never reads it
	RingFD(thief.Doorbell)
	unix.SetNonblock(thief.Doorbell, true)
	if _, err := unix.Read(thief.Doorbell, v[:]); err != nil {
		t.Fatal(err)
	}
	RingFD(a.Doorbell)
	if rang := bells.Drain(); rang != 1 {
		t.Errorf("%d doorbells rang, want a's alone (the thief took its own back)", rang)
	}
	// The daemon's wake-ups are each session's own.
	sessions[0].Wake()
	if _, err := unix.Read(thief.EventFD, v[:]); err != unix.EAGAIN {
		t.Errorf("the thief read a wake-up meant for a: %v", err)
	}
	if _, err := unix.Read(a.EventFD, v[:]); err != nil || v[0] != 1 {
		t.Errorf("a's wake-up: %v %v", v, err)
	}
	// A second request is refused; the session goes on.
	a.conn.Write([]byte(DoorbellRequest + "bogus\n"))
	a.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	var text string
	for len(text) < len("error the doorbell was given already\nerror unknown request\n") {
		n, err := a.conn.Read(buf)
		if err != nil {
			t.Fatalf("after %q: %v", text, err)
		}
		text += string(buf[:n])
	}
	if text != "error the doorbell was given already\nerror unknown request\n" {
		t.Errorf("answers %q", text)
	}
	a.Close()
	thief.Close()
	waitFor(t, "the sessions to end", func() bool { return srv.Sessions() == 0 })
	waitFor(t, "descriptors back to baseline", func() bool { return openFDs(t) == withSocket })

	plain := filepath.Join(t.TempDir(), "plain.sock")
	srv2, err := Listen(ServerConfig{Path: plain, Params: controlParams(),
		OnAttach: func(s *Session) error {
			if s.DoorbellFD() != -1 {
				t.Errorf("a session of a server without a doorbell has one: %d", s.DoorbellFD())
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	b, err := Dial(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Layout.Features&FeatureDoorbell != 0 || b.AskDoorbell() == nil {
		t.Errorf("a server without a doorbell offers one (features %#x)", b.Layout.Features)
	}
}

// Bells: every write to a watched doorbell rings once, whatever its
// counter; one that is no longer watched does not; Wait ends at a ring;
// one Drain takes as many as a sleep could have collected, and leaves no
// ring behind.
func TestBells_ringDrainRemove(t *testing.T) {
	bells, err := NewBells()
	if err != nil {
		t.Fatal(err)
	}
	defer bells.Close()
	const n = bellsBatch*2 + 3
	fds := make([]int, n)
	for i := range fds {
		if fds[i], err = newBellFD(); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[i])
		if err := bells.Add(fds[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, fd := range fds {
		RingFD(fd)
	}
	if rang := bells.Drain(); rang != n {
		t.Errorf("%d of %d doorbells rang", rang, n)
	}
	RingFD(fds[0])
	RingFD(fds[0])
	if rang := bells.Drain(); rang != 1 {
		t.Errorf("one doorbell rung twice: %d rang, want 1", rang)
	}
	bells.Remove(fds[1])
	RingFD(fds[1])
	if rang := bells.Drain(); rang != 0 {
		t.Errorf("a doorbell no longer watched rang (%d)", rang)
	}
	if bells.Wait(time.Millisecond) {
		t.Error("Wait says a doorbell rang; none did")
	}
	go func() { time.Sleep(time.Millisecond); RingFD(fds[2]) }()
	if !bells.Wait(time.Minute) {
		t.Error("Wait missed a ring")
	}
	if err := bells.Add(-1); err == nil {
		t.Error("Add of a bad descriptor: no error")
	}
}
