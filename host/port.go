package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// PortSetup is how SetupPort configures a port for a host. The daemon,
// the demo and the test pairs all set their ports up through it.
type PortSetup struct {
	// TxQueues carry the 8 priorities; 0 takes as many as the device
	// allows, up to 8.
	TxQueues int
	// RxQueues are all polled by the host; 0 takes 1, or as many as the
	// TX queues on net_memif, whose peers need matching queue pairs.
	RxQueues int
	RxDesc   int // descriptors per RX queue (0: 1024)
	TxDesc   int // descriptors per TX queue (0: 1024)
	Pool     *dpdk.Mempool
	// MAC overrides the port's address; nil keeps it.
	MAC net.HardwareAddr
	// MTU is set on the port when not 0; a device that cannot set it is
	// accepted at 1500. net_memif and net_af_packet take a larger one
	// although ethdev refuses it (see ethdevRefusesMTU): the engine then
	// keeps to it, and the device's own buffers (memif's bsize,
	// af_packet's framesz) must hold its frames.
	MTU int
}

// Offloads are what a started port does for the host.
type Offloads struct {
	// IPv4Checksum: the port computes IPv4 header checksums.
	IPv4Checksum bool
	// MultiSeg: the port sends chained mbufs and needs no DMA mapping
	// (ZeroCopyPort), so workers' payloads go without a copy.
	MultiSeg bool
}

// StartedPort is what SetupPort did.
type StartedPort struct {
	Driver             string
	RxQueues, TxQueues int
	Offloads           Offloads
	// MTUPastEthdev: ethdev refuses the MTU on this device, which carries
	// such frames all the same (net_memif, net_af_packet): the port was
	// configured at ethdev's default MTU, 1500, and only the engine keeps
	// to PortSetup.MTU.
	MTUPastEthdev bool
	// MACInFramesOnly: the device could not take PortSetup.MAC (net_ring
	// has no such operation) and filters by none: the host puts that MAC
	// in its frames, the port keeps its own.
	MACInFramesOnly bool
}

// PortError is a failed step of SetupPort; Setting names the PortSetup
// field that the step applied, in snake case (tx_queues, rx_desc, mac,
// mtu), or "" for starting the port.
type PortError struct {
	Setting string
	Err     error
}

func (e *PortError) Error() string {
	if e.Setting == "" {
		return e.Err.Error()
	}
	return e.Setting + ": " + e.Err.Error()
}
func (e *PortError) Unwrap() error { return e.Err }

// SetupPort configures and starts p: queues, descriptors, offloads
// (IPv4 checksum when offered; chained mbufs on software devices, see
// ZeroCopyPort), MAC and MTU.
func SetupPort(p *dpdk.Port, s PortSetup) (StartedPort, error) {
	info, err := p.Info()
	if err != nil {
		return StartedPort{}, &PortError{Err: err}
	}
	ntx := s.TxQueues
	if ntx == 0 {
		ntx = min(int(info.MaxTxQueues), nicq.NumPriorities)
	}
	nrx := s.RxQueues
	if nrx == 0 {
		// memif pairs queues: the peer's TX queue i is our RX queue i, and
		// the link comes up only when both sides have as many of each.
		nrx = 1
		if info.Driver == "net_memif" {
			nrx = ntx
		}
	}
	rxDesc, txDesc := s.RxDesc, s.TxDesc
	if rxDesc == 0 {
		rxDesc = 1024
	}
	if txDesc == 0 {
		txDesc = 1024
	}
	// The MTU goes to configure, which checks it against the device's
	// limits and records it: devices without an MTU of their own (net_ring)
	// have no set-MTU operation, and take jumbo frames this way. Where
	// ethdev would refuse it on a device that carries such frames anyway,
	// configure gets ethdev's default instead (ethdevRefusesMTU).
	conf := dpdk.PortConf{MTU: uint16(s.MTU)}
	pastEthdev := s.MTU != 0 && ethdevRefusesMTU(info, s.MTU) && carriesFramesPastMaxRxPktLen(info.Driver)
	if pastEthdev {
		conf.MTU = 0
	}
	if info.TxOffloadCapa&dpdk.TxOffloadIPv4Cksum != 0 {
		conf.TxOffloads |= dpdk.TxOffloadIPv4Cksum // the NIC computes IPv4 header checksums
	}
	if ZeroCopyPort(info) {
		conf.TxOffloads |= dpdk.TxOffloadMultiSegs // workers' payloads as external buffers
	}
	st := StartedPort{Driver: info.Driver, RxQueues: nrx, TxQueues: ntx, MTUPastEthdev: pastEthdev, Offloads: Offloads{
		IPv4Checksum: conf.TxOffloads&dpdk.TxOffloadIPv4Cksum != 0,
		MultiSeg:     conf.TxOffloads&dpdk.TxOffloadMultiSegs != 0,
	}}
	if err := p.Configure(uint16(nrx), uint16(ntx), conf); err != nil {
		return st, &PortError{"rx_queues/tx_queues", err}
	}
	for q := range nrx {
		if err := p.RxQueueSetup(uint16(q), uint16(rxDesc), s.Pool); err != nil {
			return st, &PortError{"rx_desc", err}
		}
	}
	for q := range ntx {
		if err := p.TxQueueSetup(uint16(q), uint16(txDesc)); err != nil {
			return st, &PortError{"tx_desc", err}
		}
	}
	if s.MAC != nil {
		err := p.SetMAC(s.MAC)
		switch {
		case err != nil && info.Driver == "net_ring" && errors.Is(err, syscall.ENOTSUP):
			// net_ring cannot change its MAC, and every ring port has the
			// same one; but nothing in a ring filters by MAC, so the host
			// may use the one asked for in its frames (a ring switch tells
			// the ports apart by it).
			st.MACInFramesOnly = true
		case err != nil:
			return st, &PortError{"mac", err}
		}
	}
	if s.MTU != 0 && !pastEthdev {
		// Also set it on the device (configure only checks and records it
		// for some drivers); one that has no such operation keeps what
		// configure accepted.
		if err := p.SetMTU(uint16(s.MTU)); err != nil && s.MTU != 1500 && !errors.Is(err, syscall.ENOTSUP) {
			return st, &PortError{"mtu", err}
		}
	}
	if err := p.Start(); err != nil {
		return st, &PortError{Err: err}
	}
	return st, nil
}

// ethdevRefusesMTU reports whether DPDK 22.11's ethdev refuses mtu on a
// device (rte_eth_dev_configure's rxmode.mtu and rte_eth_dev_set_mtu check
// it alike, eth_dev_validate_mtu): above the driver's max_mtu, or a frame
// (mtu plus the overhead, max_rx_pktlen - max_mtu when the driver gives a
// max_mtu, else 18: the Ethernet header and CRC) longer than its
// max_rx_pktlen. net_memif and net_af_packet give no max_mtu and a
// max_rx_pktlen of RTE_ETHER_MAX_LEN, 1518, whatever their buffers hold,
// so ethdev refuses them any MTU above 1500 with EINVAL ("Frame size
// (9018) > device max frame size (1518)").
func ethdevRefusesMTU(info dpdk.DevInfo, mtu int) bool {
	overhead := ethdevOverhead
	if info.MaxMTU != 0 && info.MaxMTU != 0xffff && info.MaxRxPktLen > uint32(info.MaxMTU) {
		overhead = int(info.MaxRxPktLen) - int(info.MaxMTU)
	}
	return (info.MaxMTU != 0 && mtu > int(info.MaxMTU)) || uint32(mtu+overhead) > info.MaxRxPktLen
}

// ethdevOverhead is what ethdev adds to an MTU for its frame when the
// driver gives no max_mtu: the Ethernet header and the CRC.
const ethdevOverhead = 14 + 4

// carriesFramesPastMaxRxPktLen reports whether a driver's data path
// carries frames longer than the max_rx_pktlen it reports, bounded by
// buffers of its own instead, and never reads the MTU (DPDK 22.11):
// net_memif copies a frame into as many descriptor buffers of bsize bytes
// as it needs and out into as many mbufs (MemifBufferSize: one buffer a
// frame, for a chained frame's descriptors keep a mark that garbles later
// frames); net_af_packet takes frames up to its framesz less the packet
// ring's headers (AFPacketFrameSize), on an interface whose kernel MTU
// holds them.
func carriesFramesPastMaxRxPktLen(driver string) bool {
	return driver == "net_memif" || driver == "net_af_packet"
}

// MemifBufferSize is the bsize (bytes of each memif descriptor's buffer)
// a net_memif port needs for frames of an IP MTU: one buffer holds a whole
// frame, 802.1Q tag included (wire.BufferRoom: 2048, memif's default, up
// to MTU 2030; 9216 at 9000). With smaller buffers DPDK 22.11's memif
// chains a frame's descriptors (MEMIF_DESC_FLAG_NEXT) but, on transmit,
// never clears that flag on the first descriptor of the next frame it
// writes into a slot: a one-descriptor frame sent from a slot that last
// held the head or middle of a chained one is read by the receiver as
// joined to the frames after it. The client's bsize is the one that
// counts: it makes the rings' buffers, and sets their length for the
// server's transmissions.
func MemifBufferSize(mtu int) int { return wire.BufferRoom(max(mtu, 1500)) }

// MemifDevargs are a net_memif port's devargs for this project's links:
// role, interface id 0, the control socket as a file (the default is
// abstract, and does not cross network namespaces) and the bsize of mtu
// (MemifBufferSize).
func MemifDevargs(role, sock string, mtu int) string {
	return fmt.Sprintf("role=%s,id=0,socket=%s,socket-abstract=no,bsize=%d", role, sock, MemifBufferSize(mtu))
}

// AFPacketFrameSize is the framesz a net_af_packet port needs for frames
// of an IP MTU (802.1Q tag included), in KB, at least the PMD's default,
// 2048: the packet ring's frame holds the kernel's tpacket2 header and
// address before the Ethernet header, 66 bytes on receive (a longer frame
// is cut to fit, and the PMD passes it on cut). 9216 at MTU 9000. The
// port's blocksz must be a multiple of it and of the page size
// (AFPacketBlockSize): the PMD places frame i at i x framesz in its
// mapping, where the kernel leaves a block's tail unused when framesz does
// not divide blocksz (9088 in blocks of 12288: one frame went out, then
// none). Its pool's mbufs must hold framesz - 32 bytes (the PMD checks that
// when it sets up an RX queue).
func AFPacketFrameSize(mtu int) int {
	const rxHeaders = 66 // TPACKET_ALIGN(tpacket2 header + 16) - the Ethernet header
	return max(2048, (mtu+wire.FrameOverhead+rxHeaders+1023)/1024*1024)
}

// AFPacketBlockSize is the smallest blocksz for a framesz: a multiple of
// both it and the page size (36864 for 9216 on 4 KB pages).
func AFPacketBlockSize(framesz int) int {
	page := os.Getpagesize()
	a, b := framesz, page
	for b != 0 {
		a, b = b, a%b
	}
	return framesz / a * page
}

// ZeroCopyPort reports whether DATA payloads can be sent from workers'
// shared memory on a port (chained external-buffer mbufs): it must send
// chains (TxOffloadMultiSegs), and be a software device, which reads the
// memory with the CPU. A physical NIC would need the worker regions
// registered with DPDK and DMA-mapped first (rte_extmem_register,
// rte_dev_dma_map), which the daemon does not do yet: on a NIC, payloads
// are copied once into the mbuf.
func ZeroCopyPort(info dpdk.DevInfo) bool {
	if info.TxOffloadCapa&dpdk.TxOffloadMultiSegs == 0 {
		return false
	}
	switch info.Driver {
	case "net_ring", "net_memif", "net_af_packet", "net_tap":
		return true
	}
	return false
}

// LinkRate is the port's link speed in bits/s, or def when the port does
// not say (net_memif says 100 Gbit/s, net_ring 10).
func LinkRate(p *dpdk.Port, def float64) float64 {
	if l, err := p.Link(); err == nil && l.SpeedMbps > 0 && l.SpeedMbps < 1<<31 {
		return float64(l.SpeedMbps) * 1e6
	}
	return def
}

// WaitLinks waits until every port's link is up, or timeout.
func WaitLinks(ports []*dpdk.Port, timeout time.Duration, up func(i int, l dpdk.Link)) error {
	return WaitLinksContext(context.Background(), ports, timeout, up)
}

// WaitLinksContext is WaitLinks that gives up, within one 10 ms poll,
// when ctx is done: it then returns ctx's cause.
func WaitLinksContext(ctx context.Context, ports []*dpdk.Port, timeout time.Duration, up func(i int, l dpdk.Link)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i, p := range ports {
		for {
			l, err := p.Link()
			if err == nil && l.Up {
				if up != nil {
					up(i, l)
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("link of %s still down after %v (is the peer up?)", p.Name, timeout.Round(100*time.Millisecond))
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-tick.C:
			}
		}
	}
	return nil
}
