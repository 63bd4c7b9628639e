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

// compPeer is the peer a completion names (the zero Addr for none).
func compPeer(c *shm.Completion) Addr {
	if a := shm.PeerAddr(c.PeerIP, c.PeerIP6); a.IsValid() {
		return Addr{IP: a, Port: c.PeerPort}
	}
	return Addr{}
}
