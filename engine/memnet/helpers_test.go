package memnet

import (
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// addr returns the test address 10.0.0.i.
func addr(i int) [4]byte { return [4]byte{10, 0, 0, byte(i)} }

// newNet returns a network with hosts 10.0.0.1 .. 10.0.0.count.
func newNet(cfg Config, count int) (*Network, []*Host) {
	n := New(cfg)
	hosts := make([]*Host, count)
	for i := range hosts {
		hosts[i] = n.AddHost(addr(i + 1))
	}
	return n, hosts
}

// homaFrame returns an Ethernet/IPv4/Homa frame of size bytes from src to
// dst at priority prio: a DATA packet carrying seq in its sequence field,
// or a GRANT when size is 0 (67 bytes).
func homaFrame(t testing.TB, src, dst *Host, prio uint8, size int, seq uint32) []byte {
	t.Helper()
	const hdr = wire.EthernetHeaderLen + wire.IPv4MinHeaderLen
	if size == 0 {
		size = hdr + wire.GrantHeaderLen
	}
	if size < hdr+wire.DataHeaderLen && size != hdr+wire.GrantHeaderLen {
		t.Fatalf("homaFrame: size %d too small", size)
	}
	b := make([]byte, size)
	eth := wire.EthernetFields{Dst: dst.MAC(), Src: src.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src.IP(), dst.IP(), prio, size-hdr)
	ip.Encode(b[wire.EthernetHeaderLen:])
	common := wire.CommonFields{SrcPort: 1000, DstPort: 99, Sequence: seq, SenderID: 2}
	if size == hdr+wire.GrantHeaderLen {
		g := wire.GrantFields{Common: common, Offset: seq, Priority: prio}
		g.Encode(b[hdr:])
	} else {
		d := wire.DataFields{Common: common, MessageLength: 1 << 20, Offset: wire.OffsetInSequence}
		d.Encode(b[hdr:])
	}
	var f wire.Frame
	if r := wire.ParseFrame(b, &f); r != wire.DropNone {
		t.Fatalf("homaFrame: built an invalid frame: %v", r)
	}
	return b
}

// seqOf returns the sequence field of a frame built by homaFrame.
func seqOf(t testing.TB, frame []byte) uint32 {
	var f wire.Frame
	if r := wire.ParseFrame(frame, &f); r != wire.DropNone {
		t.Fatalf("delivered frame does not parse: %v", r)
	}
	return f.Homa.Sequence()
}

// tracer collects trace lines.
type tracer struct{ lines []string }

func (tr *tracer) add(line string) { tr.lines = append(tr.lines, line) }

func (tr *tracer) String() string { return strings.Join(tr.lines, "\n") }

// traced attaches a new tracer to n.
func traced(n *Network) *tracer {
	tr := &tracer{}
	n.SetTrace(tr.add)
	return tr
}

// checkTrace compares the collected lines with want (one line each).
func checkTrace(t *testing.T, tr *tracer, want ...string) {
	t.Helper()
	if got, w := tr.String(), strings.Join(want, "\n"); got != w {
		t.Errorf("trace:\n%s\nwant:\n%s", got, w)
	}
}

// checkConserved checks that an idle network accounted for every frame.
func checkConserved(t *testing.T, n *Network) Stats {
	t.Helper()
	s := n.Stats()
	if n.Pending() != 0 {
		t.Fatalf("network not idle: %d events pending", n.Pending())
	}
	if s.Sent+s.Duplicated != s.Delivered+s.TotalDropped() {
		t.Errorf("sent %d + duplicated %d != delivered %d + dropped %d %v",
			s.Sent, s.Duplicated, s.Delivered, s.TotalDropped(), s.Dropped)
	}
	return s
}
