package host

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/nicq"
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
	// accepted at 1500.
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
	// have no set-MTU operation, and take jumbo frames this way.
	conf := dpdk.PortConf{MTU: uint16(s.MTU)}
	if info.TxOffloadCapa&dpdk.TxOffloadIPv4Cksum != 0 {
		conf.TxOffloads |= dpdk.TxOffloadIPv4Cksum // the NIC computes IPv4 header checksums
	}
	if ZeroCopyPort(info) {
		conf.TxOffloads |= dpdk.TxOffloadMultiSegs // workers' payloads as external buffers
	}
	st := StartedPort{Driver: info.Driver, RxQueues: nrx, TxQueues: ntx, Offloads: Offloads{
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
		if err := p.SetMAC(s.MAC); err != nil {
			return st, &PortError{"mac", err}
		}
	}
	if s.MTU != 0 {
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
	deadline := time.Now().Add(timeout)
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
				return fmt.Errorf("link of %s still down after %v (is the peer up?)", p.Name, timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}
