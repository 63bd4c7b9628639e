package engine

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// homaFrame returns an Ethernet frame carrying homa from src to dst:
// IPv4 when dst is IPv4 mapped, IPv6 otherwise.
func homaFrame(src, dst [16]byte, homa []byte) []byte {
	if d4, ok := wire.UnmapIPv4(dst); ok {
		s4, _ := wire.UnmapIPv4(src)
		b := make([]byte, frameHomaOffset+len(homa))
		eth := wire.EthernetFields{Dst: testMAC(d4), Src: testMAC(s4), Type: wire.EtherTypeIPv4}
		eth.Encode(b)
		ip := wire.HomaIPv4Fields(s4, d4, 6, len(homa))
		ip.Encode(b[frameIPOffset:])
		copy(b[frameHomaOffset:], homa)
		return b
	}
	off := wire.EthernetHeaderLen + wire.IPv6HeaderLen
	b := make([]byte, off+len(homa))
	eth := wire.EthernetFields{Type: wire.EtherTypeIPv6}
	eth.Encode(b)
	ip := wire.HomaIPv6Fields(src, dst, 6, len(homa))
	ip.Encode(b[wire.EthernetHeaderLen:])
	copy(b[off:], homa)
	return b
}

// oneRequest is a whole 100-byte request from client port sport to
// server port dport, client id id.
func oneRequest(sport, dport uint16, id uint64) []byte {
	b := make([]byte, wire.DataHeaderLen+100)
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id},
		MessageLength: 100, Incoming: 100, CutoffVersion: 1}
	f.Encode(b)
	return b
}

// clientResend is a client's RESEND (client id id) to server port dport
// for the response's first bytes.
func clientResend(sport, dport uint16, id uint64) []byte {
	b := make([]byte, wire.ResendHeaderLen)
	f := wire.ResendFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id}, Length: 1000, Priority: 7}
	f.Encode(b)
	return b
}

// limitEndpoint is newCountingEndpoint with an IPv6 address too; it
// returns the endpoint's address in the family v6 says (IPv4 mapped
// when not).
func limitEndpoint(t *testing.T, now *int64, v6 bool, mod func(*Config)) (*Endpoint, *typeCounter, [16]byte) {
	me6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
	e, tx := newCountingEndpoint(t, now, func(c *Config) {
		c.IP6 = me6
		if mod != nil {
			mod(c)
		}
	})
	if v6 {
		return e, tx, me6
	}
	return e, tx, wire.MapIPv4(e.cfg.IP)
}

// strangerAt is a stranger's address in the family v6 says: 10.1.x.y,
// or 2001:db8:1::x:y.
func strangerAt(v6 bool, i int) [16]byte {
	if v6 {
		return [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 14: byte(i >> 8), 15: byte(i)}
	}
	return wire.MapIPv4([4]byte{10, 1, byte(i >> 8), byte(i)})
}

// apart returns n strangers' addresses (from the i-th on) whose buckets
// in l are all different and none of avoid's: the table is indexed by a
// hash under a random seed, and addresses that share a bucket share its
// allowance, which would make a count of unreachables depend on the seed.
func apart(l *ICMPLimiter, v6 bool, i, n int, avoid ...[16]byte) [][16]byte {
	taken := map[uint64]bool{}
	for _, a := range avoid {
		taken[l.bucket(&a)] = true
	}
	var got [][16]byte
	for ; len(got) < n; i++ {
		a := strangerAt(v6, i)
		if b := l.bucket(&a); len(l.dests) == 0 || !taken[b] { // no table: no limit per destination
			taken[b] = true
			got = append(got, a)
		}
	}
	return got
}

// 10,000 requests to an unbound port, then 10,000 RESENDs to a closed
// server port, from one spoofed address at once draw 6 port
// unreachables (the per-destination burst), not 20,000; the address gets
// one more a second later, at most 6 after a long silence, and another
// address has its own 6. IPv4 and IPv6 alike.
func TestPortUnreachable_rateLimitedPerDestination(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		now := int64(1_000_000_000)
		e, tx, me := limitEndpoint(t, &now, v6, nil)
		addrs := apart(e.icmpLimit, v6, 7, 2)
		victim := addrs[0]
		flood := func(from [16]byte, n int) {
			for i := range n {
				e.Receive(homaFrame(from, me, oneRequest(0x8000, 100, uint64(2*i+2))))
				e.Receive(homaFrame(from, me, clientResend(0x8000, 98, uint64(2*i+2))))
			}
		}
		steps := []struct {
			name      string
			advanceNs int64
			from      [16]byte
			n         int
			sent      uint64 // port unreachables sent in all, after the step
		}{
			{"10,000 of each at once", 0, victim, 10_000, 6},
			{"a second later", 1_000_000_000, victim, 10_000, 7},
			{"another address", 0, addrs[1], 10_000, 13},
			{"after 100 s", 100_000_000_000, victim, 10_000, 19},
		}
		attempts := uint64(0)
		for _, st := range steps {
			now += st.advanceNs
			flood(st.from, st.n)
			attempts += 2 * uint64(st.n)
			m := e.Metrics()
			if m.ICMPPortUnreach != st.sent || uint64(tx.total) != st.sent {
				t.Fatalf("v6 %v, %s: %d port unreachables sent (%d frames) for %d requests and RESENDs, want %d",
					v6, st.name, m.ICMPPortUnreach, tx.total, attempts, st.sent)
			}
			if m.ICMPLimited != attempts-st.sent || m.ICMPLimitedAll != 0 {
				t.Fatalf("v6 %v, %s: %d held back (%d by the limit over all), want %d (0)",
					v6, st.name, m.ICMPLimited, m.ICMPLimitedAll, attempts-st.sent)
			}
		}
		if got := len(e.icmpLimit.dests); got != DefaultICMPRate().Buckets {
			t.Fatalf("v6 %v: %d buckets, want the table's %d", v6, got, DefaultICMPRate().Buckets)
		}
	}
}

// Requests from 5,000 addresses at once (a flood from spoofed sources,
// each address within its own burst) draw 50 port unreachables, the
// burst of the limit over all destinations; 100 ms later 50 more (the
// burst again, no more), and 10 ms after that 10 (1,000 a second).
func TestPortUnreachable_rateLimitedInTotal(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		now := int64(1_000_000_000)
		e, tx, me := limitEndpoint(t, &now, v6, nil)
		next := 0
		for _, st := range []struct {
			advanceNs int64
			sent      uint64
		}{{0, 50}, {100_000_000, 100}, {10_000_000, 110}} {
			now += st.advanceNs
			for range 5_000 {
				e.Receive(homaFrame(strangerAt(v6, next), me, oneRequest(0x8000, 100, 2)))
				next++
			}
			m := e.Metrics()
			if m.ICMPPortUnreach != st.sent || uint64(tx.total) != st.sent {
				t.Fatalf("v6 %v: %d port unreachables sent (%d frames) for %d requests from as many addresses, want %d",
					v6, m.ICMPPortUnreach, tx.total, next, st.sent)
			}
			if held := uint64(next) - st.sent; m.ICMPLimited != held || m.ICMPLimitedAll != held {
				t.Fatalf("v6 %v: %d held back, %d by the limit over all; want %d, all of them", v6, m.ICMPLimited, m.ICMPLimitedAll, held)
			}
		}
	}
}

// The limits are settable: PerDestNs and PerSec below 0 turn them off
// (every request answered), and other bursts and rates apply.
func TestPortUnreachable_rateSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		rate ICMPRate
		sent uint64 // of 100 requests from one address and 100 from as many
	}{
		{"both off", ICMPRate{PerDestNs: -1, PerSec: -1}, 200},
		{"per destination off", ICMPRate{PerDestNs: -1, Burst: 120}, 120},
		{"over all off", ICMPRate{PerSec: -1, PerDestBurst: 2}, 102},
		{"burst 3, over all 20", ICMPRate{PerDestBurst: 3, Burst: 20}, 20},
	} {
		now := int64(1_000_000_000)
		e, _, me := limitEndpoint(t, &now, false, func(cfg *Config) { cfg.ICMPRate = c.rate })
		one := strangerAt(false, 1_000)
		many := apart(e.icmpLimit, false, 0, 100, one)
		for i := range 100 {
			e.Receive(homaFrame(one, me, oneRequest(0x8000, 100, uint64(2*i+2))))
			e.Receive(homaFrame(many[i], me, oneRequest(0x8000, 100, 2)))
		}
		if m := e.Metrics(); m.ICMPPortUnreach != c.sent || m.ICMPLimited != 200-c.sent {
			t.Errorf("%s: %d sent, %d held back; want %d sent", c.name, m.ICMPPortUnreach, m.ICMPLimited, c.sent)
		}
	}
}

// The shards of a port share one limiter (Shard.ICMP): what one sends to
// a destination is spent for the other.
func TestPortUnreachable_shardsShareTheLimits(t *testing.T) {
	now := int64(1_000_000_000)
	shared := NewICMPLimiter(ICMPRate{})
	var eps [2]*Endpoint
	for i := range eps {
		eps[i], _, _ = limitEndpoint(t, &now, false, func(c *Config) {
			c.Shard = Shard{Index: i, Count: 2, ForwardAck: func(int, netip.Addr, uint64, uint16) {}, ICMP: shared}
		})
	}
	me, from := wire.MapIPv4(eps[0].cfg.IP), strangerAt(false, 1)
	for i := range 10 {
		for _, e := range eps {
			e.Receive(homaFrame(from, me, oneRequest(0x8000, 100, uint64(2*(2*(i+1)+e.cfg.Shard.Index)))))
		}
	}
	a, b := eps[0].Metrics(), eps[1].Metrics()
	if a.ICMPPortUnreach+b.ICMPPortUnreach != 6 || a.ICMPLimited+b.ICMPLimited != 14 {
		t.Fatalf("the shards sent %d + %d and held back %d + %d, want 6 sent in all",
			a.ICMPPortUnreach, b.ICMPPortUnreach, a.ICMPLimited, b.ICMPLimited)
	}
}

// A request to an unbound port that the limits hold back allocates
// nothing: a flood of them makes no garbage.
func TestPortUnreachable_heldBackAllocatesNothing(t *testing.T) {
	now := int64(1_000_000_000)
	e, _, me := limitEndpoint(t, &now, false, nil)
	frame := homaFrame(strangerAt(false, 1), me, oneRequest(0x8000, 100, 2))
	for range 10 {
		e.Receive(frame)
	}
	if a := testing.AllocsPerRun(1000, func() { e.Receive(frame) }); a != 0 {
		t.Fatalf("%v allocations per request held back", a)
	}
	if m := e.Metrics(); m.ICMPPortUnreach != 6 {
		t.Fatalf("%d sent, want 6", m.ICMPPortUnreach)
	}
}

// One limiter asked from several goroutines at once (the shards' loops)
// lets exactly the burst go, however the asks interleave: 6 to one
// address, and 50 in all to many.
func TestICMPLimiter_concurrentAsksSpendOnce(t *testing.T) {
	l := NewICMPLimiter(ICMPRate{})
	const now = int64(1_000_000_000)
	var sent [2]atomic.Int64 // to one address; to many
	one := strangerAt(false, 1)
	many := apart(l, false, 2, 4_000, one)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1_000 {
				if l.allow(&one, now) == icmpSend {
					sent[0].Add(1)
				}
				if l.allow(&many[g*1_000+i], now) == icmpSend {
					sent[1].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if a, b := sent[0].Load(), sent[1].Load(); a != 6 || a+b != 50 {
		t.Fatalf("%d sent to one address, %d to the others: want 6, and 50 in all", a, b)
	}
}
