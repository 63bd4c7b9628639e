package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// testNet joins test endpoints directly: frames sent are queued and
// delivered by flush in order, unless drop says otherwise. Every frame
// sent is logged as "<host>: xmit ..." (see describe).
type testNet struct {
	t     testing.TB
	now   int64
	hosts []*testHost
	log   []string
	// drop, if set, is asked about every frame before delivery, with
	// its log line; true discards the frame.
	drop func(line string) bool
	// inspect, if set, sees every frame delivered or dropped.
	inspect func(frame []byte, line string)
}

type testHost struct {
	n    *testNet
	name string
	ip   [4]byte
	ip6  [16]byte // its IPv6 address, when its Config has one (addHost6)
	e    *Endpoint
	buf  []byte
	out  []sentFrame // frames sent, not yet delivered
	// busy, while true, makes Buffer lend nothing (a transmit side
	// backed up); each refusal is logged as "<host>: busy".
	busy bool
	// As a DataSender: zcRefuse makes SendData refuse; zcRefs records the
	// refs of the payloads it took.
	zcRefuse bool
	zcRefs   []PayloadRef
	// neigh is the host's neighbour table: Resolve adds the address of
	// every host on the net, reachable at testMAC, when first asked;
	// tests change entries in place. resolves counts Resolve calls.
	neigh    StaticNeighbours
	resolves int
}

// SendData makes testHost a DataSender: the payload is appended to the
// headers as a separate segment would be on the wire.
func (h *testHost) SendData(frame, payload []byte, ref PayloadRef, prio int) bool {
	if h.zcRefuse {
		return false
	}
	h.zcRefs = append(h.zcRefs, ref)
	h.Send(append(slices.Clone(frame), payload...), prio)
	return true
}

type sentFrame struct {
	frame []byte
	line  string // as logged
}

func (h *testHost) Buffer() []byte {
	if h.busy {
		h.n.log = append(h.n.log, h.name+": busy")
		return nil
	}
	return h.buf
}

func (h *testHost) Send(frame []byte, prio int) {
	line := h.name + ": xmit " + describe(frame, prio)
	h.out = append(h.out, sentFrame{slices.Clone(frame), line})
	h.n.log = append(h.n.log, line)
}

func testMAC(ip [4]byte) wire.MAC { return wire.MAC{2, 0, ip[0], ip[1], ip[2], ip[3]} }

// allReachable returns a Resolve under which every address is reachable
// at its testMAC.
func allReachable() func(a netip.Addr) *Neighbour {
	var t StaticNeighbours
	return func(a netip.Addr) *Neighbour {
		if nb := t.Resolve(a); nb != nil {
			return nb
		}
		return t.Add(a, testMACOf(a))
	}
}

// testMACOf is testMAC of an address of either family: its last 4 bytes.
func testMACOf(a netip.Addr) wire.MAC {
	b := a.As16()
	return testMAC([4]byte(b[12:]))
}

// addHost6 is addHost with an IPv6 address too, 2001:db8::<last>.
func (n *testNet) addHost6(name string, last byte, mod func(*Config)) *testHost {
	ip6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: last}
	h := n.addHost(name, last, func(c *Config) {
		c.IP6 = ip6
		if mod != nil {
			mod(c)
		}
	})
	h.ip6 = ip6
	return h
}

func newTestNet(t testing.TB) *testNet { return &testNet{t: t, now: 1_000_000_000} }

// addHost adds an endpoint named name at 10.0.0.<n> with cfg's tunables.
func (n *testNet) addHost(name string, last byte, mod func(*Config)) *testHost {
	ip := [4]byte{10, 0, 0, last}
	h := &testHost{n: n, name: name, ip: ip, buf: make([]byte, 2048)}
	cfg := DefaultConfig()
	cfg.IP, cfg.MAC = ip, testMAC(ip)
	cfg.Clock = func() int64 { return n.now }
	cfg.Resolve = func(a netip.Addr) *Neighbour {
		h.resolves++
		if nb := h.neigh.Resolve(a); nb != nil {
			return nb
		}
		for _, o := range n.hosts {
			if netip.AddrFrom4(o.ip) == a || o.ip6 != ([16]byte{}) && netip.AddrFrom16(o.ip6) == a {
				return h.neigh.Add(a, testMACOf(a))
			}
		}
		return nil
	}
	cfg.IDSeed = 100
	cfg.Grant.Increment = 1 // a GRANT for every raise: the logs show each decision
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg, h)
	if err != nil {
		n.t.Fatal(err)
	}
	h.e = e
	n.hosts = append(n.hosts, h)
	return h
}

// flush delivers queued frames until none are left.
func (n *testNet) flush() {
	for progress := true; progress; {
		progress = false
		for _, h := range n.hosts {
			out := h.out
			h.out = nil
			for _, sf := range out {
				progress = true
				if n.inspect != nil {
					n.inspect(sf.frame, sf.line)
				}
				if n.drop != nil && n.drop(sf.line) {
					continue
				}
				var l wire.Link
				wire.ParseLink(sf.frame, &l)
				for _, o := range n.hosts {
					if l.Type == wire.EtherTypeIPv6 && o.ip6 == wire.IPv6(l.Payload).Dst() ||
						l.Type != wire.EtherTypeIPv6 && o.ip == wire.IPv4(l.Payload).Dst() {
						o.e.Receive(sf.frame)
					}
				}
			}
		}
	}
}

// advance moves the clock by ns in steps of 1 ms, running every endpoint
// and delivering frames after each step.
func (n *testNet) advance(ns int64) {
	end := n.now + ns
	for n.now < end {
		n.now = min(n.now+1_000_000, end)
		for _, h := range n.hosts {
			h.e.Run()
		}
		n.flush()
	}
}

// takeLog returns the log since the last call, one line per frame.
func (n *testNet) takeLog() string {
	s := strings.Join(n.log, "\n")
	n.log = nil
	return s
}

// describe renders a frame as a compact log entry: "DATA 1424@0 p6",
// "GRANT 20000@3", "RESEND 0+1424@7", "BUSY", "ACK 2", ...
func describe(frame []byte, prio int) string {
	s := describeFrame(frame)
	if strings.HasPrefix(s, "DATA") {
		s += fmt.Sprintf(" p%d", prio)
	}
	return s
}

func describeFrame(frame []byte) string {
	var f wire.Frame
	var l wire.Link
	wire.ParseLink(frame, &l)
	if r := wire.ParseHomaIP(&l, &f, true); r != wire.DropNone {
		if ip := wire.IPv4(frame[14:]); ip.Protocol() == wire.IPProtoICMP {
			return "ICMP port-unreachable"
		}
		return "bad " + r.String()
	}
	switch f.Type {
	case wire.TypeData:
		d := wire.Data(f.Homa)
		off, p := d.Segment()
		s := fmt.Sprintf("DATA %d@%d", len(p), off)
		if d.Retransmit() != 0 {
			s += " retx"
		}
		if a := d.Ack(); a.ClientID() != 0 {
			s += fmt.Sprintf(" ack%d", a.ClientID())
		}
		return s
	case wire.TypeGrant:
		g := wire.Grant(f.Homa)
		return fmt.Sprintf("GRANT %d@%d", g.Offset(), g.Priority())
	case wire.TypeResend:
		r := wire.Resend(f.Homa)
		if r.Length() == wire.ResendAll {
			return fmt.Sprintf("RESEND %d+all@%d", r.Offset(), r.Priority())
		}
		return fmt.Sprintf("RESEND %d+%d@%d", r.Offset(), r.Length(), r.Priority())
	case wire.TypeAck:
		return fmt.Sprintf("ACK %d", wire.Ack(f.Homa).NumAcks())
	case wire.TypeCutoffs:
		return fmt.Sprintf("CUTOFFS v%d", wire.Cutoffs(f.Homa).Version())
	}
	return f.Type.String()
}

// msg returns n bytes of a recognisable pattern.
func msg(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// receive takes one message from p or fails.
func receive(t testing.TB, p *Port) Message {
	t.Helper()
	m, ok := p.Receive()
	if !ok {
		t.Fatal("no message")
	}
	return m
}

// wantLog compares the log with want (lines trimmed of indentation).
func wantLog(t testing.TB, n *testNet, want string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	if got := n.takeLog(); got != strings.Join(lines, "\n") {
		t.Fatalf("packet log:\n%s\nwant:\n%s", got, strings.Join(lines, "\n"))
	}
}

// ipOffsetOf is where a frame's IPv4 header starts: after the Ethernet
// header and its 802.1Q tag, if any.
func ipOffsetOf(frame []byte) int {
	if wire.Ethernet(frame).Type() == wire.EtherTypeVLAN {
		return wire.EthernetHeaderLen + wire.VLANTagLen
	}
	return wire.EthernetHeaderLen
}

// serverAndClient binds port on server's endpoint and opens a client
// port on client's.
func serverAndClient(t testing.TB, server, client *testHost, port uint16) (srv, cl *Port) {
	t.Helper()
	srv, err := server.e.Bind(port)
	if err != nil {
		t.Fatal(err)
	}
	if cl, err = client.e.OpenClient(); err != nil {
		t.Fatal(err)
	}
	return srv, cl
}

// allPeers lists e's peers of both families.
func allPeers(e *Endpoint) []*peer {
	var ps []*peer
	for _, p := range e.peers4 {
		ps = append(ps, p)
	}
	for _, p := range e.peers6 {
		ps = append(ps, p)
	}
	return ps
}
