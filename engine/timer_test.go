package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// dropOnce drops the first frame whose log line equals line.
func dropOnce(line string) func(string) bool {
	done := false
	return func(l string) bool {
		if !done && l == line {
			done = true
			return true
		}
		return false
	}
}

// ownResends is smallPackets with Config.MessagePriorityResends.
func ownResends(c *Config) { smallPackets(c); c.MessagePriorityResends = true }

func TestTimer_resendAfterFiveSilentTicksAtNamedPriority(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, ownResends)
	s := n.addHost("s", 2, ownResends)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(2500, 1)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.drop = dropOnce("c: xmit DATA 1000@1000 p6")
	n.flush()
	n.takeLog()
	n.advance(4_000_000)
	wantLog(t, n, ``) // four silent ticks: nothing yet
	n.advance(1_000_000)
	// The server asks for the gap at the message's unscheduled priority
	// under its cutoffs (2500 bytes: 6); the client resends it there. The
	// client, silent too, asks for its response and hears BUSY.
	wantLog(t, n, `
		c: xmit RESEND 0+1000@7
		s: xmit RESEND 1000+1000@6
		s: xmit BUSY
		c: xmit DATA 1000@1000 retx p6`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("bytes differ")
	}
	if c.e.Metrics().ResentPackets != 1 {
		t.Fatal("resent_packets")
	}
}

func TestTimer_resendRepeatsEveryInterval(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(2500, 1))
	n.drop = func(l string) bool {
		return l == "c: xmit DATA 500@2000 p6" || strings.HasPrefix(l, "c: xmit DATA 500@2000 retx")
	}
	n.flush()
	n.takeLog()
	n.advance(15_000_000)
	// RESENDs at ticks 5, 10, 15 from the server for the tail; the client
	// answers each (dropped).
	wantLog(t, n, `
		c: xmit RESEND 0+all@7
		s: xmit RESEND 2000+500@7
		s: xmit BUSY
		c: xmit DATA 500@2000 retx p7
		c: xmit RESEND 0+all@7
		s: xmit RESEND 2000+500@7
		s: xmit BUSY
		c: xmit DATA 500@2000 retx p7
		c: xmit RESEND 0+all@7
		s: xmit RESEND 2000+500@7
		s: xmit BUSY
		c: xmit DATA 500@2000 retx p7`)
}

// Kernel Homa's RESENDs (the default): every one names priority 7, and
// one for a response of which nothing has come asks for all of it.
func TestTimer_resendsAreTheKernels(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(2500, 1)
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.drop = dropOnce("c: xmit DATA 1000@1000 p6")
	n.flush()
	t.Log(n.takeLog())
	n.advance(5_000_000)
	wantLog(t, n, `
		c: xmit RESEND 0+all@7
		s: xmit RESEND 1000+1000@7
		s: xmit BUSY
		c: xmit DATA 1000@1000 retx p7`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("bytes differ")
	}
}

func TestTimer_busyWhileServerWorks(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.flush()
	n.takeLog()
	n.advance(300_000_000) // 300 ticks: far past the timeout
	log := n.takeLog()
	if strings.Count(log, "c: xmit RESEND 0+all@7") != 60 || strings.Count(log, "s: xmit BUSY") != 60 {
		t.Fatalf("want a RESEND/BUSY pair every 5 ticks, got:\n%.300s", log)
	}
	if _, ok := cli.Receive(); ok {
		t.Fatal("the client gave up on a busy server")
	}
	m := receive(t, srv)
	srv.Reply(m, msg(20, 2))
	n.flush()
	if r := receive(t, cli); r.Err != nil || len(r.Data) != 20 {
		t.Fatalf("result %+v", r)
	}
}

func TestTimer_timeoutAfterHundredSilentTicks(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	s := n.addHost("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	n.drop = func(l string) bool { return strings.HasPrefix(l, "s:") } // server mute
	id, _ := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, msg(10, 1))
	n.advance(99_000_000)
	if _, ok := cli.Receive(); ok {
		t.Fatal("timed out early")
	}
	n.advance(1_000_000)
	m := receive(t, cli)
	if m.ID != id || m.Err != ErrTimeout || c.e.Metrics().RPCTimeouts != 1 || c.e.NumRPCs() != 0 {
		t.Fatalf("result %+v", m)
	}
	// The server's application answers late: the response finds no RPC,
	// and the server's NEED_ACK is answered with an ACK, so no state
	// remains on either side.
	n.drop = nil
	n.takeLog()
	srv.Reply(receive(t, srv), msg(10, 2))
	n.advance(2_000_000)
	wantLog(t, n, `
		s: xmit DATA 10@0 p6
		s: xmit NEED_ACK
		c: xmit ACK 0`)
	if s.e.NumRPCs() != 0 || c.e.Metrics().UnknownRPCs != 1 {
		t.Fatalf("server rpcs %d", s.e.NumRPCs())
	}
}

func TestTimer_lostGrantRecoveredByResend(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(7500, 1)
	n.drop = dropOnce("s: xmit GRANT 7500@0") // the last grant
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.flush()
	log := n.takeLog()
	if !strings.HasSuffix(log, "s: xmit GRANT 7500@0\nc: xmit DATA 1000@6000 p0") {
		t.Fatalf("log:\n%s", log)
	}
	n.advance(5_000_000)
	// The server names bytes up to 7500 at the message's scheduled
	// priority. A RESEND is no grant: the client, which sent nothing of
	// that, answers BUSY, and the server, hearing that the client is
	// alive and not sending what it granted, repeats its GRANT.
	wantLog(t, n, `
		c: xmit RESEND 0+all@7
		s: xmit RESEND 7000+500@7
		s: xmit BUSY
		c: xmit BUSY
		s: xmit GRANT 7500@0
		c: xmit DATA 500@7000 p0`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("bytes differ")
	}
}

// A Run that comes long after the last one (the polling loop was
// descheduled or stopped by the garbage collector) runs one tick, not
// one per missed period: the packets that arrived meanwhile are still
// unread, so the missed time is not silence. Running every missed tick
// back to back timed out every RPC after a 100 ms stall.
func TestTimer_lateRunRunsOneTick(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	dst := Addr{IP: netip.AddrFrom4(s.ip), Port: 99}
	req := msg(2500, 1)
	id, _ := cli.Send(dst, req)
	n.takeLog()
	// Both loops stall for 150 ms with the request still in the network,
	// then run their timers before reading it.
	n.now += 150_000_000
	c.e.Run()
	s.e.Run()
	wantLog(t, n, ``) // one tick: not yet time for RESEND
	if c.e.Metrics().RPCTimeouts != 0 || c.e.NumRPCs() != 1 {
		t.Fatal("the client RPC timed out on a late Run")
	}
	if got := c.e.Metrics().TimerTicksSkipped; got != 149 {
		t.Fatalf("timer_ticks_skipped %d, want 149", got)
	}
	// The next tick is one period after the late one.
	if d := c.e.NextDeadline(); d != n.now+1_000_000 {
		t.Fatalf("next deadline %d ns from now", d-n.now)
	}
	n.flush()
	m := receive(t, srv)
	srv.Reply(m, m.Data)
	n.flush()
	if r := receive(t, cli); r.ID != id || r.Err != nil || !bytes.Equal(r.Data, req) {
		t.Fatalf("result %+v", r)
	}
}

// fakeProgress is a TxProgress whose frames leave when the test says.
type fakeProgress struct{ done [8]uint64 }

func (p *fakeProgress) TxDone(prio int) uint64 { return p.done[prio] }

// A RESEND for bytes the transmit side still holds (TxProgress) is
// answered BUSY, not with copies that would queue behind them; once they
// have left, it is answered with the bytes (issue 31).
func TestHandleResend_stillQueuedAnsweredBusy(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, smallPackets)
	s := n.addHost("s", 2, smallPackets)
	prog := &fakeProgress{}
	c.e.txProg = prog // nothing has left the client's NIC
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req := msg(2500, 1)
	n.drop = dropOnce("c: xmit DATA 1000@1000 p6")
	cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	n.flush()
	n.takeLog()
	n.advance(5_000_000)
	wantLog(t, n, `
		c: xmit RESEND 0+all@7
		s: xmit RESEND 1000+1000@7
		s: xmit BUSY
		c: xmit BUSY`)
	if m := c.e.Metrics(); m.ResendsQueued != 1 || m.ResentPackets != 0 {
		t.Fatalf("resends_queued %d, resent %d", m.ResendsQueued, m.ResentPackets)
	}
	prog.done = c.e.txSent // every frame has left
	n.advance(5_000_000)
	wantLog(t, n, `
		c: xmit RESEND 0+all@7
		s: xmit RESEND 1000+1000@7
		s: xmit BUSY
		c: xmit DATA 1000@1000 retx p7`)
	if m := receive(t, srv); !bytes.Equal(m.Data, req) {
		t.Fatal("bytes differ")
	}
}
