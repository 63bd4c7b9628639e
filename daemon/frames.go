package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Frames larger than ethdev allows on a software device. DPDK 22.11's
// ethdev refuses net_memif and net_af_packet any MTU above 1500 (their
// max_rx_pktlen is 1518 whatever their buffers hold); both carry larger
// frames all the same, bounded by buffers of their own, and host.SetupPort
// configures them at ethdev's default (host.ethdevRefusesMTU). Those
// buffers come from the device's arguments, which the daemon checks here
// against the port's MTU before it sets the port up, so that a frame the
// device would cut, drop or garble is refused at start-up instead.

// afPacketDevice is what the daemon needs of a net_af_packet port's
// arguments (the PMD's defaults where not given).
type afPacketDevice struct {
	iface   string // the kernel interface
	framesz int    // bytes of each packet-ring frame (2048)
	blocksz int    // bytes of each ring block (the page size)
}

func parseAFPacket(args string) afPacketDevice {
	a := afPacketDevice{framesz: 2048, blocksz: os.Getpagesize()}
	for _, kv := range strings.Split(args, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		switch {
		case k == "iface":
			a.iface = v
		case k == "framesz" && err == nil:
			a.framesz = n
		case k == "blocksz" && err == nil:
			a.blocksz = n
		}
	}
	return a
}

// kernelMTU reads a kernel interface's MTU (/sys/class/net/IFACE/mtu).
func kernelMTU(iface string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", iface, "mtu"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// checkFrameBuffers checks that port i's device buffers hold a frame of
// its MTU: net_memif's bsize (one buffer a frame, host.MemifBufferSize),
// and above MTU 1500 net_af_packet's framesz and blocksz, its mbufs and
// its interface's kernel MTU (read by ifMTU). Other devices are left to
// ethdev.
func checkFrameBuffers(spec *config.Spec, i int, ifMTU func(string) (int, error)) error {
	ps := spec.Ports[i]
	name, args := vdevOf(spec, i)
	frame := ps.MTU + wire.FrameOverhead
	switch {
	case strings.HasPrefix(name, "net_memif"):
		m := parseMemif(args)
		if m.bsize < frame {
			return fmt.Errorf("ports[%d].mtu: %d needs net_memif buffers of %d bytes (a frame with its 802.1Q tag), and %s has bsize %d: "+
				"give it bsize=%d (DPDK 22.11's memif garbles the frames sent after one that spans buffers)",
				i, ps.MTU, frame, name, m.bsize, host.MemifBufferSize(ps.MTU))
		}
	case strings.HasPrefix(name, "net_af_packet") && ps.MTU > 1500:
		a := parseAFPacket(args)
		need := host.AFPacketFrameSize(ps.MTU)
		if a.framesz < ps.MTU+wire.FrameOverhead+66 || a.blocksz%a.framesz != 0 || a.blocksz%os.Getpagesize() != 0 {
			return fmt.Errorf("ports[%d].mtu: %d needs net_af_packet frames of %d bytes (the frame and the packet ring's headers) in blocks a multiple of them and of the page, "+
				"and %s has framesz %d, blocksz %d: give it framesz=%d,blocksz=%d", i, ps.MTU, need, name, a.framesz, a.blocksz, need, host.AFPacketBlockSize(need))
		}
		if room := spec.Mempool.DataRoomFor(ps.MTU); room < a.framesz-32 {
			return fmt.Errorf("ports[%d].mtu: %s's framesz %d needs mbufs of %d bytes, and mempool.data_room gives %d: raise it", i, name, a.framesz, a.framesz-32, room)
		}
		if a.iface != "" {
			k, err := ifMTU(a.iface)
			if err != nil {
				return fmt.Errorf("ports[%d].mtu: the MTU of %s's interface %s: %w", i, name, a.iface, err)
			}
			if k < ps.MTU {
				return fmt.Errorf("ports[%d].mtu: %d, but %s's interface %s has MTU %d, and DPDK 22.11 cannot raise it (ethdev refuses net_af_packet more than 1500): "+
					"ip link set dev %s mtu %d", i, ps.MTU, name, a.iface, k, a.iface, ps.MTU)
			}
		}
	}
	return nil
}
