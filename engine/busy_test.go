package engine

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// busyNet is a client endpoint (10.0.7.1) on memnet and a server: an
// engine endpoint (10.0.7.2, port 99) or a raw host (10.0.7.3) that
// builds its frames itself.
type busyNet struct {
	net     *memnet.Network
	neigh   StaticNeighbours
	c, s    *mnHost
	raw     *memnet.Host
	outDone int // the client's OutDone calls: its request's memory given back
}

func newBusyNet(t *testing.T, linkBps float64) *busyNet {
	b := &busyNet{net: memnet.New(memnet.Config{Seed: 7, LinkBps: linkBps})}
	mk := func(last byte) *mnHost {
		return newMNHost(t, b.net, [4]byte{10, 0, 7, last}, &b.neigh, uint64(last)<<32)
	}
	b.c, b.s = mk(1), mk(2)
	b.c.cli.SetHooks(PortHooks{OutDone: func(uint64, Addr, []byte) { b.outDone++ }})
	b.raw = b.net.AddHost([4]byte{10, 0, 7, 3})
	b.neigh.Add(netip.AddrFrom4(b.raw.IP()), b.raw.MAC())
	return b
}

// run drives the network for ms milliseconds, running both endpoints
// every 1 ms (the server's application never answers), and returns the
// client's outcome once there is one.
func (b *busyNet) run(ms int) (Message, bool) {
	for range ms {
		b.net.RunUntil(b.net.Now() + 1_000_000)
		b.c.e.Run()
		b.s.e.Run()
		if m, ok := b.c.cli.Receive(); ok {
			return m, true
		}
	}
	return Message{}, false
}

// repeatFirstPacket makes the raw host a server that answers every RESEND
// of the client's RPC with the first packet of a 100,000-byte response,
// again and again: the peer is heard from, and nothing progresses.
func (b *busyNet) repeatFirstPacket() {
	b.raw.SetReceive(func(frame []byte) {
		c := wire.Common(frame[frameHomaOffset:])
		if !c.IsValid() || c.Type() != wire.TypeResend {
			return
		}
		h := make([]byte, wire.DataHeaderLen+1400)
		f := wire.DataFields{Common: wire.CommonFields{SrcPort: 99, DstPort: c.SrcPort(), SenderID: c.SenderID() ^ 1},
			MessageLength: 100_000, Incoming: 10_000, CutoffVersion: 1}
		f.Encode(h)
		out := make([]byte, frameHomaOffset+len(h))
		eth := wire.EthernetFields{Dst: b.c.mh.MAC(), Src: b.raw.MAC(), Type: wire.EtherTypeIPv4}
		eth.Encode(out)
		ip := wire.HomaIPv4Fields(b.raw.IP(), b.c.e.cfg.IP, 6, len(h))
		ip.Encode(out[frameIPOffset:])
		copy(out[frameHomaOffset:], h)
		b.raw.Send(out)
	})
}

// TestBusy_clientRPCBoundedByBusyTimeout: a server that answers every
// RESEND with BUSY for ever (an engine whose application never replies:
// kernel Homa's design keeps the client waiting as long as that lasts),
// or with the same first packet of its response again and again, keeps
// resetting the client RPC's silence. The RPC fails with ErrBusyTimeout
// BusyTimeoutTicks (100 × TimeoutTicks: 10 s) after its last progress,
// counted in BusyTimeouts and RPCTimeouts, and its request's memory is
// given back (OutDone). Before the bound, the RPC was still alive after
// 60 s (12,000 BUSYs).
func TestBusy_clientRPCBoundedByBusyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  func(b *busyNet) Addr
	}{
		{"server answers BUSY for ever", func(b *busyNet) Addr { return Addr{IP: netip.AddrFrom4(b.s.e.cfg.IP), Port: 99} }},
		{"server repeats its first packet", func(b *busyNet) Addr {
			b.repeatFirstPacket()
			return Addr{IP: netip.AddrFrom4(b.raw.IP()), Port: 99}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBusyNet(t, 0)
			id, err := b.c.cli.Send(tc.dst(b), msg(1000, 1))
			if err != nil {
				t.Fatal(err)
			}
			m, ended := b.run(60_000)
			cm := b.c.e.Metrics()
			heard := cm.PacketsRcvd[wire.TypeBusy-wire.TypeData] + cm.PacketsRcvd[0]
			if !ended {
				t.Fatalf("after 60 s the client RPC is still alive: %d packets heard from the server (BUSY or DATA), "+
					"%d RESENDs sent, busy_timeouts %d", heard, cm.PacketsSent[wire.TypeResend-wire.TypeData], cm.BusyTimeouts)
			}
			at := b.net.Now() / 1_000_000
			t.Logf("failed at %d ms: %v; %d packets heard from the server", at, m.Err, heard)
			if m.ID != id || !errors.Is(m.Err, ErrBusyTimeout) || !errors.Is(m.Err, ErrTimeout) {
				t.Fatalf("outcome %+v, want ErrBusyTimeout", m)
			}
			if at < 10_000 || at > 10_050 {
				t.Fatalf("failed at %d ms, want 10,000 ms (BusyTimeoutTicks) after the last progress", at)
			}
			if heard < 1000 || cm.BusyTimeouts != 1 || cm.RPCTimeouts != 1 || b.c.e.NumRPCs() != 0 || b.outDone != 1 {
				t.Fatalf("heard %d, busy_timeouts %d, rpc_timeouts %d, client RPCs %d, OutDone %d; want >= 1000, 1, 1, 0, 1",
					heard, cm.BusyTimeouts, cm.RPCTimeouts, b.c.e.NumRPCs(), b.outDone)
			}
		})
	}
}

// TestBusy_progressKeepsRPC: the stall counts from the last progress, not
// from the RPC's start. BusyTimeoutTicks is 1 s; the server's application
// answers after 900 ms (BUSY meanwhile) with 1,000,000 bytes that take
// 1.6 s on a 5 Mb/s link: the RPC lives 2.5 s and completes.
func TestBusy_progressKeepsRPC(t *testing.T) {
	b := newBusyNet(t, 5_000_000)
	b.c.e.cfg.BusyTimeoutTicks = 1000
	id, _ := b.c.cli.Send(Addr{IP: netip.AddrFrom4(b.s.e.cfg.IP), Port: 99}, msg(1000, 1))
	if _, ended := b.run(900); ended {
		t.Fatal("ended while the server worked")
	}
	req, ok := b.s.srv.Receive()
	if !ok {
		t.Fatal("no request at the server")
	}
	if err := b.s.srv.Reply(req, msg(1_000_000, 2)); err != nil {
		t.Fatal(err)
	}
	m, ended := b.run(5_000)
	at := b.net.Now() / 1_000_000
	if !ended || m.ID != id || m.Err != nil || len(m.Data) != 1_000_000 || at < 2_000 || b.c.e.Metrics().BusyTimeouts != 0 {
		t.Fatalf("ended %v at %d ms: %v, %d bytes, busy_timeouts %d; want the whole response after 2 s",
			ended, at, m.Err, len(m.Data), b.c.e.Metrics().BusyTimeouts)
	}
}
