package host

import (
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The neighbour tables against a stranger on the link (issue 30, finding
// 2): ARP requests, solicitations and advertisements from 32,768 spoofed
// addresses — enough to fill a table bounded as New bounds it — leave room
// for the next peer the engine needs, make no probes, and are gone an
// aging period later; an advertisement without Override does not move a
// live entry.

// floodSize is the table's bound under the default engine config: one
// spoofed packet per entry fills it.
var floodSize = neighbourBound(engine.DefaultConfig())

// Defaults of config/defaults.go: arp.timeout, arp.aging, arp.retries.
const (
	arpTimeout = int64(100 * time.Millisecond)
	arpAging   = int64(5 * time.Minute)
	arpRetries = 5
)

// floodClock is when the floods start (the host clock starts at 1 s).
const floodClock = int64(time.Second)

// spoofed4 is the i-th spoofed IPv4 address and MAC.
func spoofed4(i int) hostAddr {
	return hostAddr{ip: [4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)}, mac: wire.MAC{2, 0xee, 0, byte(i >> 16), byte(i >> 8), byte(i)}}
}

// spoofed6 is the i-th spoofed IPv6 address and MAC.
func spoofed6(i int) hostAddr {
	return hostAddr{ip6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 12: 0xee, 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)}, mac: spoofed4(i).mac}
}

// tenMinutes runs Retries every 100 ms for ten minutes from start,
// answering nothing, and returns how many requests went to addresses
// spoofed says are the flood's.
func tenMinutes[K comparable](nt *neighbourTable[K], start int64, spoofed func(K) bool) (probes int) {
	for now := start; now <= start+int64(10*time.Minute); now += int64(100 * time.Millisecond) {
		nt.Retries(now, func(ip K) {
			if spoofed(ip) {
				probes++
			}
		})
	}
	return probes
}

// left counts the flood's entries still in the table.
func left[K comparable](nt *neighbourTable[K], spoofed func(K) bool) int {
	n := 0
	for ip := range nt.entries {
		if spoofed(ip) {
			n++
		}
	}
	return n
}

// 32,768 ARP requests for our address from as many spoofed senders, each
// answered: a peer the engine needs next resolves at once (its request
// sent), one it held before the flood keeps its entry, no spoofed address
// is ever probed, and ten minutes later none of them is in the table.
func TestNeighbourTable_arpRequestFlood(t *testing.T) {
	nt := newNeighbourTable[[4]byte](arpTimeout, arpAging, arpRetries)
	nt.maxEntries = floodSize
	var c StackCounters
	held, _ := nt.Resolve(peer.ip, floodClock) // a peer of the engine's, answered
	handleARP(arpFrame(wire.ARPReply, peer, me.mac, me.ip), 14, me, nt, floodClock, &c)
	for i := range floodSize {
		if v := handleARP(arpFrame(wire.ARPRequest, spoofed4(i), wire.BroadcastMAC, me.ip), 14, me, nt, floodClock, &c); v != stackReply {
			t.Fatalf("request %d: verdict %v", i, v)
		}
	}
	isSpoofed := func(ip [4]byte) bool { return ip[0] == 172 }
	t.Logf("after %d requests: %d entries, %d of them spoofed, %d refused", floodSize, len(nt.entries), left(nt, isSpoofed), nt.Full)
	fresh := [4]byte{10, 0, 0, 3}
	if n, request := nt.Resolve(fresh, floodClock+1); n == nil || !request {
		t.Errorf("a new peer after the flood: entry %v, request sent %v (%d refused at the bound)", n, request, nt.Full)
	}
	if held.State != engine.LinkReachable || held.MAC != peer.mac {
		t.Errorf("the held peer's entry after the flood: %+v", *held)
	}
	probes := tenMinutes(nt, floodClock, isSpoofed)
	if k := left(nt, isSpoofed); k != 0 || probes != 0 {
		t.Errorf("ten minutes later: %d of %d spoofed entries left, %d probes sent to them; want 0, 0", k, floodSize, probes)
	}
	if n, request := nt.Resolve([4]byte{10, 0, 0, 4}, floodClock+int64(10*time.Minute)); n == nil || !request {
		t.Errorf("a new peer ten minutes later: entry %v, request sent %v (%d refused at the bound)", n, request, nt.Full)
	}
	if nt.Evicted+nt.Collected != uint64(floodSize) || nt.Full != 0 {
		t.Errorf("evicted %d + collected %d, want %d; %d refused", nt.Evicted, nt.Collected, floodSize, nt.Full)
	}
}

// floodV6 sends 32,768 neighbour discovery messages that build makes from
// as many spoofed addresses through handleIPv6 at floodClock.
func floodV6(t *testing.T, nt *neighbourTable[[16]byte], c *StackCounters, build func(s hostAddr) []byte) {
	t.Helper()
	for i := range floodSize {
		f := build(spoofed6(i))
		ip, proto, off, r := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
		if r != wire.DropNone {
			t.Fatalf("ParseIPv6: %v", r)
		}
		handleIPv6(f, ip, proto, off, me6, nt, floodClock, c)
	}
}

// 32,768 unsolicited neighbour advertisements (Solicited and Override
// set, as a reply would have them) for as many spoofed targets, and
// separately 32,768 solicitations for our address from as many spoofed
// sources: a new peer resolves at once, no spoofed address is probed, and
// ten minutes later none is in the table. The advertisements make no entry
// at all.
func TestHandleIPv6_ndpFlood(t *testing.T) {
	isSpoofed := func(ip [16]byte) bool { return ip[12] == 0xee }
	for _, tc := range []struct {
		name    string
		build   func(s hostAddr) []byte
		adverts bool
	}{
		{"advertisements", func(s hostAddr) []byte {
			return v6Frame(s, me6.mac, s.ip6, me6.ip6, 255, ndp(wire.NDPFields{Type: wire.ICMPv6NeighborAdvert,
				Flags: wire.NDPFlagSolicited | wire.NDPFlagOverride, Target: s.ip6, MAC: s.mac}, s.ip6, me6.ip6))
		}, true},
		{"solicitations", func(s hostAddr) []byte {
			sn := wire.SolicitedNode(me6.ip6)
			return v6Frame(s, wire.MulticastMAC(sn), s.ip6, sn, 255,
				ndp(wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: me6.ip6, MAC: s.mac}, s.ip6, sn))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nt := newNeighbourTable[[16]byte](arpTimeout, arpAging, arpRetries)
			nt.maxEntries = floodSize
			var c StackCounters
			floodV6(t, nt, &c, tc.build)
			t.Logf("after %d %s: %d entries, %d of them spoofed, %d refused", floodSize, tc.name, len(nt.entries), left(nt, isSpoofed), nt.Full)
			if tc.adverts && (len(nt.entries) != 0 || nt.Unsolicited != uint64(floodSize)) {
				t.Errorf("%d entries, %d advertisements discarded; want 0, %d", len(nt.entries), nt.Unsolicited, floodSize)
			}
			fresh := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 3}
			if n, request := nt.Resolve(fresh, floodClock+1); n == nil || !request {
				t.Errorf("a new peer after the flood: entry %v, request sent %v (%d refused at the bound)", n, request, nt.Full)
			}
			probes := tenMinutes(nt, floodClock, isSpoofed)
			if k := left(nt, isSpoofed); k != 0 || probes != 0 {
				t.Errorf("ten minutes later: %d of %d spoofed entries left, %d probes sent to them; want 0, 0", k, floodSize, probes)
			}
			if n, request := nt.Resolve([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 4}, floodClock+int64(10*time.Minute)); n == nil || !request {
				t.Errorf("a new peer ten minutes later: entry %v, request sent %v (%d refused at the bound)", n, request, nt.Full)
			}
		})
	}
}

// An advertisement without Override carrying another MAC leaves a
// reachable entry's MAC as it is and only makes it stale (probed at
// once, RFC 4861 §7.2.5); the probe's answer keeps it; with Override the
// MAC changes.
func TestHandleIPv6_advertWithoutOverrideKeepsMAC(t *testing.T) {
	nt := newNeighbourTable[[16]byte](arpTimeout, arpAging, arpRetries)
	var c StackCounters
	advert := func(flags uint8, mac wire.MAC, now int64) {
		t.Helper()
		from := hostAddr{ip6: peer6.ip6, mac: mac}
		f := v6Frame(from, me6.mac, peer6.ip6, me6.ip6, 255,
			ndp(wire.NDPFields{Type: wire.ICMPv6NeighborAdvert, Flags: flags, Target: peer6.ip6, MAC: mac}, peer6.ip6, me6.ip6))
		ip, proto, off, _ := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
		if v := handleIPv6(f, ip, proto, off, me6, nt, now, &c); v != stackLearn {
			t.Fatalf("advertisement: verdict %v", v)
		}
	}
	n, _ := nt.Resolve(peer6.ip6, floodClock)
	advert(wire.NDPFlagSolicited|wire.NDPFlagOverride, peer6.mac, floodClock+1)
	if n.State != engine.LinkReachable || n.MAC != peer6.mac {
		t.Fatalf("after the answer: %+v", *n)
	}
	attacker := wire.MAC{2, 0x66, 0x66, 0x66, 0x66, 0x66}
	for _, flags := range []uint8{0, wire.NDPFlagSolicited} {
		advert(flags, attacker, floodClock+2)
		if n.MAC != peer6.mac || n.State != engine.LinkReachable {
			t.Fatalf("after an advertisement without Override (flags %#x): %+v, want MAC %v kept", flags, *n, peer6.mac)
		}
	}
	probes := 0
	nt.Retries(floodClock+3, func([16]byte) { probes++ })
	if probes != 1 || nt.NoOverride != 2 {
		t.Errorf("stale entry: %d probes at once, %d kept without Override; want 1, 2", probes, nt.NoOverride)
	}
	advert(wire.NDPFlagSolicited, peer6.mac, floodClock+4) // the probe's answer
	if nt.Retries(floodClock+arpAging/2, func([16]byte) { probes++ }); probes != 1 || n.State != engine.LinkReachable {
		t.Errorf("after the probe's answer: %+v, %d probes", *n, probes)
	}
	moved := wire.MAC{2, 0, 0, 0, 0, 0x42}
	advert(wire.NDPFlagOverride, moved, floodClock+5)
	if n.MAC != moved || n.State != engine.LinkReachable {
		t.Errorf("after an advertisement with Override: %+v, want MAC %v", *n, moved)
	}
}
