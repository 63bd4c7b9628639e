package engine

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
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

// A stranger's request takes the port's only buffer, hands copies of its
// bytes to the copier (which has not got to them) and ends at once, by
// an RPC_UNKNOWN. The buffer is not given to the next message while
// those copies are pending: a real client's request, whose bytes the
// loop writes (a one-packet request is staged, then copied in by its
// commit) or the copier does after the stranger's, is delivered whole
// and stays whole once every copy has run. It waits for the buffer,
// refused meanwhile (its client resends); the buffer's return is counted
// in recv_bufs_held_for_copier.
func TestCopier_endedMessageBufferNotReusedWhileCopiesPending(t *testing.T) {
	for _, tc := range []struct {
		size       int
		laneFilled bool // the copier takes no more copies once the stranger's are in
	}{{4_200, false}, {2_000, true}} {
		size := tc.size
		cp := &testCopier{}
		n := newTestNet(t)
		c := n.addHost("c", 1, nil)
		s := n.addHost("s", 2, func(cfg *Config) { cfg.Copier = cp })
		srv, _ := s.e.Bind(99)
		page, lent := make([]byte, 64<<10), false
		srv.SetHooks(PortHooks{RecvBufUnit: 64 << 10,
			RecvBuf: func(k int) ([]byte, bool) {
				if lent {
					return nil, false
				}
				lent = true
				return page[:k], true
			},
			FreeRecvBuf: func([]byte) { lent = false },
		})
		pl := s.e.payload
		stranger := [4]byte{10, 0, 0, 66}
		for _, p := range []int{3, 4, 0, 1} { // the third commits the page: its bytes and the next go to the copier
			f := strangerData(s, stranger, 2, 10*pl, p*pl, pl)
			for i := frameHomaOffset + wire.DataHeaderLen; i < len(f); i++ {
				f[i] = 0xEE
			}
			s.e.Receive(f)
		}
		if !lent || len(cp.jobs) == 0 {
			t.Fatalf("the stranger's request: page lent %v, %d copies pending", lent, len(cp.jobs))
		}
		uf := wire.ControlFields{Type: wire.TypeRPCUnknown,
			Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2}}
		b := make([]byte, frameHomaOffset+wire.ControlHeaderLen)
		eth := wire.EthernetFields{Dst: testMAC(s.ip), Src: testMAC(stranger), Type: wire.EtherTypeIPv4}
		eth.Encode(b)
		ip := wire.HomaIPv4Fields(stranger, s.ip, 0, wire.ControlHeaderLen)
		ip.Encode(b[frameIPOffset:])
		uf.Encode(b[frameHomaOffset:])
		s.e.Receive(b)
		if s.e.Metrics().ServerRPCDiscards != 1 {
			t.Fatal("the stranger's RPC_UNKNOWN did not end its request")
		}

		cp.refuse = tc.laneFilled
		cli, _ := c.e.OpenClient()
		req := msg(size, 1)
		cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
		n.flush()
		var got []Message
		check := func(when string) {
			for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
				got = append(got, m)
			}
			for _, m := range got {
				if diff := bytesDiffer(m.Data, req); diff != 0 {
					t.Fatalf("%d-byte request %s: %d of its bytes are not its own", size, when, diff)
				}
			}
		}
		check("as delivered")
		cp.run(len(cp.jobs))
		s.e.PollCopies()
		check("once the copier ran")
		for ms := 0; len(got) == 0 && ms < 200; ms++ {
			s.e.PollCopies()
			n.advance(1_000_000)
			cp.run(len(cp.jobs))
			check("after a resend")
		}
		if len(got) != 1 {
			t.Fatalf("%d-byte request delivered %d times, want once", size, len(got))
		}
		if held := s.e.Metrics().RecvBufsHeldForCopier; held != 1 {
			t.Fatalf("recv_bufs_held_for_copier %d, want 1", held)
		}
	}
}

// bytesDiffer counts the bytes in which a and b differ, and the bytes of
// the longer past the shorter.
func bytesDiffer(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
