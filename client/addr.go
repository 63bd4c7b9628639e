package client

import (
	"fmt"
	"net/netip"
)

// Addr is a Homa endpoint: an IPv4 address and a port. As a destination
// (Send, Call) the port is a server port, 1..32767.
type Addr struct {
	IP   [4]byte
	Port uint16
}

// ParseAddr parses "a.b.c.d:port", e.g. "10.0.0.2:99".
func ParseAddr(s string) (Addr, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return Addr{}, fmt.Errorf("client: address %q: %w", s, err)
	}
	ip := ap.Addr().Unmap()
	if !ip.Is4() {
		return Addr{}, fmt.Errorf("client: address %q: not an IPv4 address", s)
	}
	return Addr{IP: ip.As4(), Port: ap.Port()}, nil
}

// String returns "a.b.c.d:port".
func (a Addr) String() string {
	return netip.AddrPortFrom(netip.AddrFrom4(a.IP), a.Port).String()
}
