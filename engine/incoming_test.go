package engine

import (
	"bytes"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// dataFrame builds a DATA frame from 10.0.0.1 port 0x8000 to 10.0.0.2
// port 99 for client RPC 2 of a message of msgLen bytes.
func dataFrame(msgLen, incoming, offset int, payload []byte) []byte {
	src, dst := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	b := make([]byte, frameHomaOffset+wire.DataHeaderLen+len(payload))
	eth := wire.EthernetFields{Dst: testMAC(dst), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 6, wire.DataHeaderLen+len(payload))
	ip.Encode(b[frameIPOffset:])
	d := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2},
		MessageLength: uint32(msgLen), Incoming: uint32(incoming), CutoffVersion: 1, Offset: uint32(offset)}
	d.Encode(b[frameHomaOffset:])
	copy(b[frameHomaOffset+wire.DataHeaderLen:], payload)
	return b
}

func TestIncoming_reassemblyWithGapsDuplicatesOverlaps(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	whole := msg(5000, 3)
	seg := func(off, end int) []byte { return dataFrame(5000, 5000, off, whole[off:end]) }
	steps := []struct {
		frame []byte
		cause DropCause // expected drop, or 0
	}{
		{seg(2000, 3000), 0}, // creates the RPC; gap [0,2000)
		{seg(4000, 5000), 0}, // gap [3000,4000)
		{seg(2000, 3000), DropDuplicate},
		{seg(500, 1000), 0},           // splits [0,2000) into [0,500) [1000,2000)
		{seg(900, 1100), DropOverlap}, // half received
		{dataFrame(5000, 5000, 4500, make([]byte, 501)), DropPastEnd},
		{dataFrame(6000, 6000, 0, whole[:10]), DropBadLength},
		{seg(0, 500), 0},
		{seg(1000, 2000), 0},
		{seg(3000, 3500), 0},
	}
	for i, st := range steps {
		before := s.e.Metrics().Drops
		s.e.Receive(st.frame)
		after := s.e.Metrics().Drops
		for c := range after {
			want := uint64(0)
			if DropCause(c) == st.cause && st.cause != 0 {
				want = 1
			}
			if after[c]-before[c] != want {
				t.Fatalf("step %d: drops_%s +%d, want +%d", i, DropCause(c), after[c]-before[c], want)
			}
		}
	}
	if _, ok := srv.Receive(); ok {
		t.Fatal("delivered with a gap left")
	}
	s.e.Receive(seg(3500, 4000))
	m := receive(t, srv)
	if !bytes.Equal(m.Data, whole) {
		t.Fatal("reassembled bytes differ")
	}
	// A retransmitted request packet after delivery is stale, not a new
	// execution.
	s.e.Receive(seg(0, 500))
	if _, ok := srv.Receive(); ok || s.e.Metrics().Drops[DropStale] != 1 || s.e.Metrics().RequestsReceived != 1 {
		t.Fatal("request executed twice")
	}
}

func TestIncoming_offsetInSequenceForm(t *testing.T) {
	n := newTestNet(t)
	n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	whole := msg(3000, 9)
	f1 := dataFrame(3000, 3000, 1500, whole[1500:])
	h := wire.Data(f1[frameHomaOffset:])
	h.Common().SetSequence(1500)
	h.SetSegOffset(wire.OffsetInSequence)
	s.e.Receive(f1)
	s.e.Receive(dataFrame(3000, 3000, 0, whole[:1500]))
	if m := receive(t, srv); !bytes.Equal(m.Data, whole) {
		t.Fatal("bytes differ")
	}
}

func TestIncoming_unboundPortGetsICMPAndClientFails(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	cli, _ := c.e.OpenClient()
	id, _ := cli.Send(Addr{IP: s.ip, Port: 7}, msg(10, 0))
	n.flush()
	wantLog(t, n, `
		c: xmit DATA 10@0 p6
		s: xmit ICMP port-unreachable`)
	m := receive(t, cli)
	if m.ID != id || m.Err != ErrPortUnreachable || c.e.NumRPCs() != 0 || s.e.NumRPCs() != 0 {
		t.Fatalf("result %+v, rpcs %d/%d", m, c.e.NumRPCs(), s.e.NumRPCs())
	}
	if s.e.Metrics().Drops[DropNoPort] != 1 {
		t.Fatal("drop not counted")
	}
}

func TestIncoming_notForUsAndBadFramesCounted(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	f := dataFrame(10, 10, 0, msg(10, 0)) // to 10.0.0.2
	c.e.Receive(f)
	c.e.Receive(f[:20])
	m := c.e.Metrics()
	if m.Drops[DropNotForUs] != 1 || m.Drops[DropCause(wire.DropShortIPHeader)] != 1 {
		t.Fatalf("drops %v", m.Drops)
	}
}
