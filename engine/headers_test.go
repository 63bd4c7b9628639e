package engine

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// A frame's headers written from the peer's template are those the
// field encoders write — every priority and length, tagged or not, with
// the checksum computed or left to the NIC — and follow the neighbour
// entry's MAC when it changes.
func TestWriteHeaders_templateMatchesFieldEncoding(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pcp, csumOffload bool
	}{{"untagged", false, false}, {"tagged", true, false}, {"checksum offload", false, true}, {"tagged, offload", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var now int64 = 1_000_000_000
			e, _ := newCountingEndpoint(t, &now, func(c *Config) {
				c.MAC = wire.MAC{2, 0, 0, 0, 0, 2}
				c.PCP, c.VLAN, c.IPChecksumOffload = tc.pcp, 42, tc.csumOffload
			})
			p := e.peerFor(wire.MapIPv4([4]byte{10, 0, 0, 1}))
			if p == nil || !p.reachable() {
				t.Fatal("peer not reachable")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			got, want := make([]byte, 64), make([]byte, 64)
			for i := range 2000 {
				if i == 1000 { // the neighbour entry learns another MAC
					p.neigh.MAC = wire.MAC{2, 0, 0, 0, 0, 9}
				}
				prio, homaLen := rng.IntN(8), rng.IntN(9000)
				if i%500 == 0 {
					e.ipID = 0xffff - uint16(rng.IntN(3)) // the id wraps
				}
				e.writeHeaders(got, p, prio, homaLen)
				eth := e.ethernet(p, prio)
				eth.Encode(want)
				ip := wire.HomaIPv4Fields(e.cfg.IP, p.v4, uint8(prio), homaLen)
				ip.ID, ip.NoChecksum = e.ipID, tc.csumOffload
				ip.Encode(want[e.ipOff:])
				if !bytes.Equal(got[:e.homaOff], want[:e.homaOff]) {
					t.Fatalf("frame %d (prio %d, %d bytes of Homa):\n got % x\nwant % x", i, prio, homaLen, got[:e.homaOff], want[:e.homaOff])
				}
				if !tc.csumOffload && !wire.IPv4(got[e.ipOff:e.homaOff]).IsChecksumValid() {
					t.Fatalf("frame %d: IPv4 checksum invalid", i)
				}
			}
		})
	}
}
