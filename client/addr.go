package client

import (
	"fmt"
	"net/netip"

	"github.com/homa-dpdk/homa-dpdk/shm"
)

// Addr is a Homa endpoint: an IPv4 or IPv6 address and a port. As a
// destination (Send, Call) the port is a server port, 1..32767.
type Addr struct {
	IP   netip.Addr
	Port uint16
}

// ParseAddr parses "a.b.c.d:port" or "[v6]:port", e.g. "10.0.0.2:99",
// "[2001:db8::2]:99".
func ParseAddr(s string) (Addr, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return Addr{}, fmt.Errorf("client: address %q: %w", s, err)
	}
	if ap.Addr().Zone() != "" {
		return Addr{}, fmt.Errorf("client: address %q: zoned addresses are not taken", s)
	}
	return Addr{IP: ap.Addr().Unmap(), Port: ap.Port()}, nil
}

// String returns "a.b.c.d:port" or "[v6]:port".
func (a Addr) String() string { return netip.AddrPortFrom(a.IP, a.Port).String() }

// peerFields is a's address as entries carry it: IPv4 in the 4-byte
// field, IPv6 in the 16-byte one (both zero for no address).
func (a Addr) peerFields() (ip [4]byte, ip6 [16]byte) {
	switch u := a.IP.Unmap(); {
	case !u.IsValid():
	case u.Is4():
		ip = u.As4()
	default:
		ip6 = u.As16()
	}
	return ip, ip6
}

// compPeer is the peer a completion names.
func compPeer(c *shm.Completion) Addr {
	a := netip.AddrFrom4(c.PeerIP)
	if c.PeerIP6 != [16]byte{} {
		a = netip.AddrFrom16(c.PeerIP6)
	} else if c.PeerIP == [4]byte{} {
		return Addr{}
	}
	return Addr{IP: a, Port: c.PeerPort}
}
