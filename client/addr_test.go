package client

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

func TestParseAddr(t *testing.T) {
	a, err := ParseAddr("10.0.0.2:99")
	if err != nil || a != (Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}) {
		t.Fatalf("got %+v, %v", a, err)
	}
	if s := a.String(); s != "10.0.0.2:99" {
		t.Errorf("String %q", s)
	}
	if a, err := ParseAddr("[::ffff:1.2.3.4]:5"); err != nil || a.String() != "1.2.3.4:5" {
		t.Errorf("v4-mapped: %v, %v", a, err)
	}
	if a, err := ParseAddr("[2001:db8::2]:99"); err != nil || a.String() != "[2001:db8::2]:99" || !a.IP.Is6() {
		t.Errorf("IPv6: %v, %v", a, err)
	} else if ip, ip6 := shm.PeerFields(a.IP); ip != [4]byte{} || ip6 != a.IP.As16() {
		t.Errorf("IPv6 entry fields %v %v", ip, ip6)
	}
	for _, bad := range []string{"", "10.0.0.2", "10.0.0.2:", "10.0.0.2:70000", "[fe80::1%eth0]:9", "host:9"} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
