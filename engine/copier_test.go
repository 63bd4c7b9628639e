package engine

import (
	"bytes"
	"net/netip"
	"testing"
)

// testCopier holds the copies it takes until run, as a copier thread
// that has not got to them yet would; refuse makes it take none.
type testCopier struct {
	jobs   [][2][]byte
	next   uint64
	done   uint64
	refuse bool
}

func (c *testCopier) Copy(dst, src []byte) uint64 {
	if c.refuse {
		return 0
	}
	c.jobs = append(c.jobs, [2][]byte{dst, src})
	c.next++
	return c.next
}

func (c *testCopier) Done() uint64 { return c.done }

// run finishes the first n copies taken and not yet done.
func (c *testCopier) run(n int) {
	for ; n > 0 && len(c.jobs) > 0; n-- {
		copy(c.jobs[0][0], c.jobs[0][1])
		c.jobs = c.jobs[1:]
		c.done++
	}
}

// A server whose receive copies go to a copier: the request is not
// delivered while a copy of it is pending, even with every packet in,
// and is whole when it is; a second request, whose copies come after,
// waits behind it. A copier that takes nothing leaves the engine to copy:
// the request is delivered at once.
func TestCopier_deliveryWaitsForTheCopies(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		cp := &testCopier{refuse: refuse}
		n := newTestNet(t)
		c := n.addHost("c", 1, nil)
		s := n.addHost("s", 2, func(cfg *Config) { cfg.Copier = cp })
		srv, _ := s.e.Bind(99)
		cli, _ := c.e.OpenClient()
		req1, req2 := msg(30_000, 1), msg(20_000, 2)
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req1)
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req2)
		n.flush()
		m := s.e.Metrics()
		if refuse {
			if m.CopiesHandedOff != 0 || m.CopiesRefused == 0 || s.e.CopiesPending() {
				t.Fatalf("refusing copier: %d handed off, %d refused, pending %v", m.CopiesHandedOff, m.CopiesRefused, s.e.CopiesPending())
			}
			for _, want := range [][]byte{req1, req2} {
				got, ok := srv.Receive()
				if !ok || !bytes.Equal(got.Data, want) {
					t.Fatalf("refusing copier: request of %d bytes not delivered whole", len(want))
				}
			}
			continue
		}
		if m.CopiesHandedOff == 0 || len(cp.jobs) == 0 {
			t.Fatal("no copy went to the copier")
		}
		if _, ok := srv.Receive(); ok {
			t.Fatal("a request was delivered while its copies were pending")
		}
		first := len(cp.jobs) - 1 // all but the last: the first request is not done
		cp.run(first)
		s.e.PollCopies()
		if got, ok := srv.Receive(); ok {
			if !bytes.Equal(got.Data, req1) {
				t.Fatal("the first request delivered with copies pending or bytes wrong")
			}
			if _, ok := srv.Receive(); ok {
				t.Fatal("the second request delivered before its last copy")
			}
		}
		cp.run(len(cp.jobs))
		s.e.PollCopies()
		var got []Message
		for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
			got = append(got, m)
		}
		if s.e.CopiesPending() {
			t.Fatal("messages still fenced with every copy done")
		}
		if last := got[len(got)-1]; !bytes.Equal(last.Data, req2) {
			t.Fatal("the second request's bytes differ")
		}
	}
}

// A message fenced when its port closes gives its buffer back instead of
// being delivered.
func TestCopier_closedPortFreesFencedBuffer(t *testing.T) {
	cp := &testCopier{}
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, func(cfg *Config) { cfg.Copier = cp })
	srv, _ := s.e.Bind(99)
	freed := 0
	srv.SetHooks(PortHooks{
		RecvBuf:     func(n int) ([]byte, bool) { return make([]byte, n), true },
		FreeRecvBuf: func([]byte) { freed++ },
	})
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(30_000, 1))
	n.flush()
	if !s.e.CopiesPending() {
		t.Fatal("nothing fenced")
	}
	srv.Shut()
	srv.Close()
	cp.run(len(cp.jobs))
	s.e.PollCopies()
	if freed != 1 || s.e.CopiesPending() {
		t.Fatalf("freed %d buffers, pending %v", freed, s.e.CopiesPending())
	}
}
