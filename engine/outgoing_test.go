package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// smallPackets: 1000-byte payloads, 3000 unscheduled bytes, 5000
// max_incoming, so grant logs stay short.
func smallPackets(c *Config) {
	c.MTU = 1000 + 20 + 56
	c.UnschedBytes = 3000
	c.Grant.MaxIncoming = 5000
	c.Incast.Budget = 0
}

func TestOutgoing_segmentationUnscheduledAndGrants(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(7500, 5)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.flush()
	// Three unscheduled packets; then one GRANT per packet received,
	// window 5000/2 past the bytes received, at the lowest level (one
	// message active); the last packet is short.
	wantLog(t, n, `
		c: xmit DATA 1000@0 p6
		c: xmit DATA 1000@1000 p6
		c: xmit DATA 1000@2000 p6
		s: xmit CUTOFFS v1
		s: xmit GRANT 3500@0
		s: xmit GRANT 4500@0
		s: xmit GRANT 5500@0
		c: xmit DATA 1000@3000 p0
		c: xmit DATA 1000@4000 p0
		c: xmit DATA 1000@5000 p0
		s: xmit GRANT 6500@0
		s: xmit GRANT 7500@0
		c: xmit DATA 1000@6000 p0
		c: xmit DATA 500@7000 p0`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("request bytes differ")
	}
}

// pacedConfig paces 1,000-byte packets on a slow link: the pacer lets
// two go (backlog ≤ 2 µs), then defers; threshold is PacerThreshold.
func pacedConfig(threshold int) func(c *Config) {
	return func(c *Config) {
		smallPackets(c)
		c.UnschedBytes = 100_000
		c.LinkBps = 8_000_000_000 // 1 byte/ns: a 1100-byte frame is 1124 ns
		c.MaxNICQueueNs = 2000
		c.PacerFIFOFraction = -1 // pure SRPT here; the FIFO share is sched's test
		c.PacerThreshold = threshold
	}
}

func TestOutgoing_pacerDefersLongMessagesShortestFirst(t *testing.T) {
	n := newTestNet(t)
	paced := pacedConfig(0)
	c := n.addHost("c", 1, paced)
	s := n.addHost("s", 2, paced)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	cli.Send(dst, msg(6000, 1))
	cli.Send(dst, msg(3000, 2))
	cli.Send(dst, msg(500, 3)) // under 1000 bytes: never deferred
	// The pacer let 2 packets of the first message go (backlog ≤ 2 µs),
	// then queued; the short ones jumped ahead as the link drained.
	got := n.takeLog()
	if want := "c: xmit DATA 1000@0 p6\nc: xmit DATA 1000@1000 p6\nc: xmit DATA 500@0 p6"; got != want {
		t.Fatalf("before the link drains:\n%s\nwant:\n%s", got, want)
	}
	if c.e.Metrics().ThrottleListAdds != 2 {
		t.Fatalf("throttle_list_adds %d", c.e.Metrics().ThrottleListAdds)
	}
	for c.e.sendq.Len() > 0 {
		n.now = c.e.NextDeadline()
		c.e.Run()
	}
	var order []string
	for _, l := range strings.Split(n.takeLog(), "\n") {
		order = append(order, strings.TrimPrefix(l, "c: xmit "))
	}
	// The 3000-byte message (0, 1000, 2000) goes before the rest of the
	// 6000-byte one, which has 4000 left.
	want := "DATA 1000@0 p6,DATA 1000@1000 p6,DATA 1000@2000 p6,DATA 1000@2000 p6,DATA 1000@3000 p6,DATA 1000@4000 p6,DATA 1000@5000 p6"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("paced order:\n%s\nwant:\n%s", got, want)
	}
}

// Config.PacerThreshold (protocol.pacer_threshold) sets which messages
// bypass the pacer: at 4000, the 3000-byte message goes at once beside
// the deferred 6000-byte one; below 0, even 500 bytes wait.
func TestOutgoing_pacerThresholdConfigurable(t *testing.T) {
	for _, tc := range []struct {
		threshold int
		want      string
	}{
		{4000, "c: xmit DATA 1000@0 p6\nc: xmit DATA 1000@1000 p6\nc: xmit DATA 1000@0 p6\nc: xmit DATA 1000@1000 p6\nc: xmit DATA 1000@2000 p6"},
		{-1, "c: xmit DATA 1000@0 p6\nc: xmit DATA 1000@1000 p6"},
	} {
		n := newTestNet(t)
		paced := pacedConfig(tc.threshold)
		c := n.addHost("c", 1, paced)
		s := n.addHost("s", 2, paced)
		s.e.Bind(99)
		cli, _ := c.e.OpenClient()
		dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
		cli.Send(dst, msg(6000, 1))
		cli.Send(dst, msg(3000, 2))
		if tc.threshold < 0 {
			cli.Send(dst, msg(500, 3))
		}
		if got := n.takeLog(); got != tc.want {
			t.Errorf("threshold %d:\n%s\nwant:\n%s", tc.threshold, got, tc.want)
		}
	}
}

// TestOutgoing_queuedMessageFinishedUnpacedLeavesQueue: a message the
// pacer deferred whose last bytes go out unpaced (under
// ThrottleMinBytes left when a RESEND or GRANT makes it send) must leave
// the sender queue; a stale entry at the queue's head once stopped the
// pacer for every other message.
func TestOutgoing_queuedMessageFinishedUnpacedLeavesQueue(t *testing.T) {
	n := newTestNet(t)
	paced := func(c *Config) {
		smallPackets(c)
		c.UnschedBytes = 100_000
		c.LinkBps = 8_000_000_000 // 1 byte/ns: a 1100-byte frame is 1124 ns
		c.MaxNICQueueNs = 2000
	}
	c := n.addHost("c", 1, paced)
	s := n.addHost("s", 2, paced)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	id, _ := cli.Send(dst, msg(3500, 1))
	// Let the pacer send 1000@0..2000@2000, leaving 500 bytes queued.
	for c.e.rpcs.get(rpcKey{id: id}).out.next < 3000 {
		n.now = c.e.NextDeadline()
		c.e.Run()
	}
	r := c.e.rpcs.get(rpcKey{id: id})
	if !r.out.sq.Queued() || c.e.pacer.CanSend(n.now) {
		t.Fatal("set-up: the rest is not deferred")
	}
	// The receiver asks for the unsent rest: the sender answers BUSY and
	// sends it at once (under 1000 bytes left).
	c.out = nil
	c.e.Receive(resendFrame(s.ip, c.ip, cli.Num(), id^1, 3000, 500))
	if r.out.next != 3500 || r.out.sq.Queued() {
		t.Fatalf("after RESEND: next %d, queued %v", r.out.next, r.out.sq.Queued())
	}
	// A new message is paced normally.
	cli.Send(dst, msg(5000, 2))
	for range 20 {
		n.now = c.e.NextDeadline()
		c.e.Run()
	}
	if c.e.sendq.Len() != 0 {
		t.Fatalf("sender queue stuck with %d messages", c.e.sendq.Len())
	}
}

// resendFrame builds a RESEND from src (server port 99, server id sid)
// to dst's client port.
func resendFrame(src, dst [4]byte, dport uint16, sid uint64, offset, length uint32) []byte {
	return resendFrameOf(src, dst, dport, sid, offset, length, false)
}

// resendFrameOf is resendFrame, in the upstream subset's 36-byte form
// when upstream.
func resendFrameOf(src, dst [4]byte, dport uint16, sid uint64, offset, length uint32, upstream bool) []byte {
	n := wire.ResendHeaderLen
	if upstream {
		n = wire.ResendUpstreamLen
	}
	b := make([]byte, frameHomaOffset+n)
	eth := wire.EthernetFields{Dst: testMAC(dst), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 7, n)
	ip.Encode(b[frameIPOffset:])
	f := wire.ResendFields{Common: wire.CommonFields{SrcPort: 99, DstPort: dport, SenderID: sid},
		Offset: offset, Length: length, Priority: 7, Upstream: upstream}
	f.Encode(b[frameHomaOffset:])
	return b
}

// The upstream subset's RESEND has no priority byte: the bytes go again
// at the priority they were first sent at, not at 0.
func TestOutgoing_upstreamResendRetransmitsAtTheDataPriority(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	cli, err := c.e.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	id, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.out) != 1 {
		t.Fatalf("%d frames sent, want the one DATA", len(c.out))
	}
	first := wire.IPv4(c.out[0].frame[wire.EthernetHeaderLen:]).Priority()
	c.out = nil
	c.e.Receive(resendFrameOf(s.ip, c.ip, cli.Num(), id^1, 0, 100, true))
	if len(c.out) != 1 {
		t.Fatalf("%d frames after the 36-byte RESEND, want one retransmission", len(c.out))
	}
	var f wire.Frame
	if r := wire.ParseFrame(c.out[0].frame, &f); r != wire.DropNone || f.Type != wire.TypeData || wire.Data(f.Homa).Retransmit() != 1 {
		t.Fatalf("sent %v %v", r, f.Type)
	}
	if p := f.IPv4.Priority(); p != first || p == 0 {
		t.Errorf("retransmitted at priority %d, first sent at %d", p, first)
	}
}

func TestOutgoing_ipChecksumOffloadLeavesChecksumZero(t *testing.T) {
	for _, offload := range []bool{false, true} {
		n := newTestNet(t)
		a := n.addHost("a", 1, func(c *Config) { c.IPChecksumOffload = offload })
		n.addHost("b", 2, nil)
		p, err := a.e.OpenClient()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, msg(100, 1)); err != nil {
			t.Fatal(err)
		}
		if len(a.out) == 0 {
			t.Fatal("nothing sent")
		}
		ip := wire.IPv4(a.out[0].frame[wire.EthernetHeaderLen:])
		switch {
		case offload && ip.Checksum() != 0:
			t.Errorf("offload: checksum %#x, want 0 for the NIC to fill in", ip.Checksum())
		case !offload && !ip.IsChecksumValid():
			t.Errorf("software checksum %#x is wrong", ip.Checksum())
		}
	}
}

func TestOutgoing_pcpMarkingTagsEveryFrameWithItsPriority(t *testing.T) {
	n := newTestNet(t)
	pcp := func(c *Config) { c.PCP, c.VLAN = true, 42 }
	a := n.addHost("a", 1, pcp)
	b := n.addHost("b", 2, pcp)
	srv, err := b.e.Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := a.e.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	req := msg(60_000, 3) // unscheduled and granted DATA, GRANTs
	if _, err := cl.Send(Addr{IP: netip.AddrFrom4(b.ip), Port: 99}, req); err != nil {
		t.Fatal(err)
	}
	frames := 0
	n.inspect = func(frame []byte, line string) {
		frames++
		var f wire.Frame
		if r := wire.ParseFrame(frame, &f); r != wire.DropNone {
			t.Fatalf("unparseable frame (%v): %s", r, line)
		}
		if len(f.VLAN) == 0 {
			t.Fatalf("untagged frame: %s", line)
		}
		tag := wire.VLAN(f.VLAN)
		if tag.VID() != 42 || tag.PCP() != f.IPv4.Priority() {
			t.Errorf("VLAN %d PCP %d for priority %d: %s", tag.VID(), tag.PCP(), f.IPv4.Priority(), line)
		}
	}
	n.flush()
	for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
		if err := srv.Reply(m, m.Data[:10]); err != nil {
			t.Fatal(err)
		}
	}
	n.flush()
	m := receive(t, cl)
	if m.Err != nil || len(m.Data) != 10 {
		t.Fatalf("result %v, %d bytes", m.Err, len(m.Data))
	}
	if frames < 43 { // 60,000 bytes are 43 DATA packets, before grants and the response
		t.Errorf("only %d frames checked", frames)
	}
}

// newResendTarget returns an endpoint at 10.0.0.1 with a client RPC of
// a 1,000,000-byte request to 10.0.0.2 port 99 whose unscheduled bytes
// are sent and which no GRANT has reached, its transmit side counting
// packets by type, and the RPC's id.
func newResendTarget(t *testing.T, now *int64) (*Endpoint, *typeCounter, uint64) {
	tx := &typeCounter{buf: make([]byte, 2048)}
	cfg := DefaultConfig()
	cfg.IP = [4]byte{10, 0, 0, 1}
	cfg.Clock = func() int64 { return *now }
	cfg.Resolve = allReachable()
	cfg.IDSeed = 100
	e, err := New(cfg, tx)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := e.OpenClient()
	id, _ := p.Send(Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}, make([]byte, 1_000_000))
	return e, tx, id
}

// One RESEND naming a whole 1 MB message that was granted only its
// unscheduled bytes makes at most those bytes go: a RESEND retransmits
// what was sent, it is no grant.
func TestOutgoing_resendNeverSendsPastGranted(t *testing.T) {
	var now int64 = 1_000_000_000
	e, tx, id := newResendTarget(t, &now)
	r := e.rpcs.get(rpcKey{id: id})
	granted := r.out.granted
	sent := tx.sent[0]
	if granted != 41_296 || sent != 29 {
		t.Fatalf("set-up: granted %d, %d DATA sent", granted, sent)
	}
	client := r.port.num
	e.Receive(resendFrame([4]byte{10, 0, 0, 2}, e.cfg.IP, client, id^1, 0, 1_000_000))
	if got := tx.sent[0] - sent; got != 29 || r.out.granted != granted || r.out.next != granted {
		t.Fatalf("one RESEND made %d DATA packets go (granted %d, next %d), want the 29 sent before",
			got, r.out.granted, r.out.next)
	}
}

// A RESEND storm is rate-limited: an RPC retransmits at most
// MaxResendBytes per ResendInterval ticks, the rest of what is asked
// counted in ResendsLimited.
func TestOutgoing_resendStormRateLimited(t *testing.T) {
	var now int64 = 1_000_000_000
	e, tx, id := newResendTarget(t, &now)
	r := e.rpcs.get(rpcKey{id: id})
	// The server grants the whole message and the client sends it all.
	e.Receive(grantFrame([4]byte{10, 0, 0, 2}, e.cfg.IP, r.port.num, id^1, 1_000_000))
	sent := tx.sent[0]
	if r.out.next != 1_000_000 {
		t.Fatalf("set-up: next %d", r.out.next)
	}
	const storm = 1000
	resend := resendFrame([4]byte{10, 0, 0, 2}, e.cfg.IP, r.port.num, id^1, 0, wire.ResendAll)
	for range storm {
		e.Receive(resend)
	}
	budget := DefaultConfig().MaxResendBytes
	maxPackets := (budget + 1423) / 1424
	got := tx.sent[0] - sent
	t.Logf("%d RESENDs for all of 1 MB: %d DATA packets retransmitted (%d limited)", storm, got, e.Metrics().ResendsLimited)
	if got > maxPackets || got == 0 || e.Metrics().ResendsLimited == 0 {
		t.Fatalf("%d RESENDs made %d packets go, want at most %d (and some)", storm, got, maxPackets)
	}
	// The budget comes back after ResendInterval ticks.
	for range DefaultConfig().ResendInterval {
		now += 1_000_000
		e.Run()
	}
	before := tx.sent[0]
	e.Receive(resend)
	if got := tx.sent[0] - before; got != maxPackets {
		t.Fatalf("after the interval a RESEND made %d packets go, want %d", got, maxPackets)
	}
}

// grantFrame builds a GRANT from src (server port 99, server id sid) to
// dst's client port.
func grantFrame(src, dst [4]byte, dport uint16, sid uint64, offset uint32) []byte {
	b := make([]byte, frameHomaOffset+wire.GrantHeaderLen)
	eth := wire.EthernetFields{Dst: testMAC(dst), Src: testMAC(src), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, dst, 7, wire.GrantHeaderLen)
	ip.Encode(b[frameIPOffset:])
	g := wire.GrantFields{Common: wire.CommonFields{SrcPort: 99, DstPort: dport, SenderID: sid}, Offset: offset}
	g.Encode(b[frameHomaOffset:])
	return b
}

// ScheduledDataQueue hands scheduled DATA to the Transmitter at priority
// 0 (its lowest TX queue) while the IPv4 header keeps the priority the
// receiver granted; unscheduled DATA keeps its own for both. Without it
// the two are always the same. (In the cluster simulation a NIC served
// strictly by priority otherwise held one message's queued packets back
// for milliseconds behind the same host's higher-priority ones.)
func TestOutgoing_scheduledDataQueue(t *testing.T) {
	for _, on := range []bool{false, true} {
		n := newTestNet(t)
		mod := func(c *Config) {
			smallPackets(c)
			c.Grant.MaxIncoming = 40_000          // room for four messages' windows
			c.Cutoffs = sched.Cutoffs{7: 100_000} // unscheduled at 7; scheduled 0..6 by rank
			c.PeerCutoffs = c.Cutoffs
			c.ScheduledDataQueue = on
		}
		c := n.addHost("c", 1, mod)
		s := n.addHost("s", 2, mod)
		srv, _ := s.e.Bind(99)
		cli, _ := c.e.OpenClient()
		var sched, schedHigh, unsched int
		n.inspect = func(frame []byte, line string) {
			var f wire.Frame
			if wire.ParseFrame(frame, &f) != wire.DropNone || f.Type != wire.TypeData {
				return
			}
			tos := int(wire.IPv4(frame[ipOffsetOf(frame):]).Priority())
			queue := -1
			fmt.Sscanf(line[strings.LastIndex(line, " p")+2:], "%d", &queue)
			off, _ := wire.Data(f.Homa).Segment()
			switch {
			case off < 3000:
				unsched++
				if queue != tos {
					t.Errorf("on %v: unscheduled DATA at %d: TOS %d, passed at %d", on, off, tos, queue)
				}
			case on:
				sched++
				if tos > 0 {
					schedHigh++
				}
				if queue != 0 {
					t.Errorf("scheduled DATA at %d passed at %d, want 0 (TOS %d)", off, queue, tos)
				}
			default:
				sched++
				if tos > 0 {
					schedHigh++
				}
				if queue != tos {
					t.Errorf("off: scheduled DATA at %d: TOS %d, passed at %d", off, tos, queue)
				}
			}
		}
		for i := range 4 {
			cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(20_000+1000*i, byte(i)))
		}
		n.flush()
		for range 4 {
			receive(t, srv)
		}
		if sched == 0 || unsched == 0 || schedHigh == 0 {
			t.Fatalf("on %v: %d scheduled DATA (%d above priority 0), %d unscheduled: the test sends none of a kind", on, sched, schedHigh, unsched)
		}
	}
}

// SendRefAt names the priority of a request's unscheduled packets; the
// granted ones stay the receiver's to choose (the same as without it),
// and prio -1 is SendRef.
func TestOutgoing_sendRefAtSetsTheUnscheduledPriority(t *testing.T) {
	// run sends two messages, the first with SendRefAt(prio): the
	// priorities of its unscheduled DATA, and those of all scheduled DATA
	// in order
	run := func(prio int) (unsched map[int]int, scheduled []int) {
		n := newTestNet(t)
		mod := func(c *Config) {
			smallPackets(c)
			c.Cutoffs = sched.Cutoffs{7: 100_000} // unscheduled at 7; scheduled 0..6 by rank
			c.PeerCutoffs = c.Cutoffs
		}
		c := n.addHost("c", 1, mod)
		s := n.addHost("s", 2, mod)
		srv, _ := s.e.Bind(99)
		cli, _ := c.e.OpenClient()
		unsched = map[int]int{}
		n.inspect = func(frame []byte, line string) {
			var f wire.Frame
			if wire.ParseFrame(frame, &f) != wire.DropNone || f.Type != wire.TypeData {
				return
			}
			d := wire.Data(f.Homa)
			tos := int(wire.IPv4(frame[ipOffsetOf(frame):]).Priority())
			switch off, _ := d.Segment(); {
			case off >= 3000:
				scheduled = append(scheduled, tos)
			case d.MessageLength() == 20_000:
				unsched[tos]++
			case tos != 7:
				t.Errorf("the second message's unscheduled DATA at %d, want 7 (its cutoffs)", tos)
			}
		}
		dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
		if _, err := cli.SendRefAt(dst, msg(20_000, 1), 0, prio); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.SendRef(dst, msg(20_001, 2), 0); err != nil {
			t.Fatal(err)
		}
		n.flush()
		for range 2 {
			receive(t, srv)
		}
		if _, err := cli.SendRefAt(dst, msg(10, 4), 0, wire.NumPriorities); err != ErrPriority {
			t.Errorf("SendRefAt at %d: %v, want ErrPriority", wire.NumPriorities, err)
		}
		return unsched, scheduled
	}
	u2, s2 := run(2)
	u, s := run(-1)
	if len(u2) != 1 || u2[2] != 3 {
		t.Errorf("at priority 2: unscheduled DATA by priority %v, want 3 at 2", u2)
	}
	if len(u) != 1 || u[7] != 3 {
		t.Errorf("at -1: unscheduled DATA by priority %v, want 3 at 7 (the cutoffs')", u)
	}
	if len(s2) == 0 || fmt.Sprint(s2) != fmt.Sprint(s) {
		t.Errorf("scheduled DATA's priorities %v at 2, %v at -1: the receiver's grants should choose them alike", s2, s)
	}
}
