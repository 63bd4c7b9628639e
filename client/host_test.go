package client

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// TestHost_saidAndNot: Host is what the header says (FeatureHostInfo),
// its IPv4 address the one the worker is reached at (a Call to it reaches
// the fake engine's scripted port); an IPv6-only host has no IPv4 Addr;
// a daemon that says nothing gives false.
func TestHost_saidAndNot(t *testing.T) {
	both := shm.HostInfo{IPv4: host, IPv6: [16]byte{0xfd, 15: 1}, LinkMbps: 100000, MTU: 9000}
	only6 := shm.HostInfo{IPv6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 9}, LinkMbps: 25000}
	for _, tc := range []struct {
		name string
		info shm.HostInfo
		want HostInfo
		said bool
	}{
		{"both addresses", both, HostInfo{IPv4: netip.MustParseAddr("10.0.0.1"), IPv6: netip.MustParseAddr("fd00::1"),
			LinkMbps: 100000, MTU: 9000}, true},
		{"IPv6 only", only6, HostInfo{IPv6: netip.MustParseAddr("2001:db8::9"), LinkMbps: 25000}, true},
		{"not said", shm.HostInfo{}, HostInfo{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := shmtest.Start(shmtest.Config{Path: filepath.Join(t.TempDir(), "s"), Params: testParams(),
				Host: host, HostInfo: tc.info})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			c := dial(t, f, Options{})
			got, said := c.Host()
			if got != tc.want || said != tc.said {
				t.Fatalf("Host() = %+v, %v; want %+v, %v", got, said, tc.want, tc.said)
			}
			if !said || !got.IPv4.IsValid() {
				return
			}
			f.Script(7, shm.ErrCodeNone)
			resp, err := c.Call(Addr{IP: got.IPv4, Port: 7}, []byte("to myself"), 5*time.Second)
			if err != nil {
				t.Fatalf("a call to the host's own address: %v", err)
			}
			if string(resp.Data) != "to myself" {
				t.Errorf("echo %q", resp.Data)
			}
			resp.Release()
		})
	}
}
