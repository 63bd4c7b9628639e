package dpdk

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// TX and RX offload capability bits (rte_eth_dev_info.tx_offload_capa and
// rx_offload_capa) used by homa-dpdk.
const (
	TxOffloadIPv4Cksum    = uint64(C.RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)
	TxOffloadMultiSegs    = uint64(C.RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
	TxOffloadMbufFastFree = uint64(C.RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
	RxOffloadIPv4Cksum    = uint64(C.RTE_ETH_RX_OFFLOAD_IPV4_CKSUM)
)

// Port is one ethdev port. There is one *Port per port id, shared by all
// callers (PortByName and PortByID return the same value).
type Port struct {
	ID   uint16
	Name string

	started atomic.Bool // set by Start, cleared by Stop and Close; a redial's outcome

	driverOnce sync.Once
	driver     string // the driver's name, for onIntrThread
	// redialing: Redial scheduled a restart whose outcome RedialResult
	// has not read yet. Owned by the thread that redials.
	redialing bool

	// Packets offered to TxBurst, and RxBurst calls made, while the port was
	// not started: refused and counted, never passed to the driver (whose
	// stand-in burst functions log a stack dump on every call).
	txNotStarted atomic.Uint64
	rxNotStarted atomic.Uint64

	nrx, ntx uint16 // queues configured
}

var ports struct {
	mu  sync.Mutex
	all [MaxPorts]*Port
}

// portFor returns the shared *Port for an id, making it on first use.
func portFor(id uint16) *Port {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if p := ports.all[id]; p != nil {
		return p
	}
	var buf [C.RTE_ETH_NAME_MAX_LEN]C.char
	name := ""
	if C.rte_eth_dev_get_name_by_port(C.uint16_t(id), &buf[0]) == 0 {
		name = C.GoString(&buf[0])
	}
	p := &Port{ID: id, Name: name}
	ports.all[id] = p
	return p
}

// forget drops the *Port of a closed port id, which DPDK may reuse.
func forget(id uint16) {
	ports.mu.Lock()
	ports.all[id] = nil
	ports.mu.Unlock()
}

// PortByName finds a port by its device name: a vdev name such as
// "net_null0" or a PCI address such as "0000:3b:00.0".
func PortByName(name string) (*Port, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var id C.uint16_t
	if rc := C.rte_eth_dev_get_port_by_name(cname, &id); rc < 0 {
		return nil, fmt.Errorf("port %q: %w (known ports: %v)", name, ErrNoPort, PortNames())
	}
	return portFor(uint16(id)), nil
}

// PortByID returns the port with this id, if it exists.
func PortByID(id uint16) (*Port, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	if C.rte_eth_dev_is_valid_port(C.uint16_t(id)) == 0 {
		return nil, fmt.Errorf("port id %d: %w (known ports: %v)", id, ErrNoPort, PortNames())
	}
	return portFor(id), nil
}

// PortNames lists the names of the available ports, by id.
func PortNames() []string {
	var names []string
	for id := C.rte_eth_find_next(0); id < C.RTE_MAX_ETHPORTS; id = C.rte_eth_find_next(id + 1) {
		names = append(names, portFor(uint16(id)).Name)
	}
	return names
}

func (p *Port) op(what string) string { return fmt.Sprintf("%s port %d (%s)", what, p.ID, p.Name) }

// DevInfo is what a port's driver reports about itself.
type DevInfo struct {
	Driver        string
	MaxRxQueues   uint16
	MaxTxQueues   uint16
	RxOffloadCapa uint64
	TxOffloadCapa uint64
	MaxRxPktLen   uint32
	MinMTU        uint16
	MaxMTU        uint16
	RxDescMax     uint16 // most descriptors per RX queue
	TxDescMax     uint16 // most descriptors per TX queue
	Socket        int    // NUMA socket, or -1
}

// Info returns the port's device information.
func (p *Port) Info() (DevInfo, error) {
	var di C.struct_rte_eth_dev_info
	if rc := C.rte_eth_dev_info_get(C.uint16_t(p.ID), &di); rc < 0 {
		return DevInfo{}, newError(p.op("get info of"), int(rc))
	}
	return DevInfo{
		Driver:        C.GoString(di.driver_name),
		MaxRxQueues:   uint16(di.max_rx_queues),
		MaxTxQueues:   uint16(di.max_tx_queues),
		RxOffloadCapa: uint64(di.rx_offload_capa),
		TxOffloadCapa: uint64(di.tx_offload_capa),
		MaxRxPktLen:   uint32(di.max_rx_pktlen),
		MinMTU:        uint16(di.min_mtu),
		MaxMTU:        uint16(di.max_mtu),
		RxDescMax:     uint16(di.rx_desc_lim.nb_max),
		TxDescMax:     uint16(di.tx_desc_lim.nb_max),
		Socket:        int(C.rte_eth_dev_socket_id(C.uint16_t(p.ID))),
	}, nil
}

// PortConf is a port's configuration beyond its queue counts.
type PortConf struct {
	TxOffloads uint64 // e.g. TxOffloadIPv4Cksum; each must be in TxOffloadCapa
	RxOffloads uint64 // each must be in RxOffloadCapa
	MTU        uint16 // 0 keeps the driver's default
}

// Configure sets the number of RX and TX queues and the offloads. It
// checks the request against the device's limits first, so the error
// names what the device allows.
func (p *Port) Configure(nrx, ntx uint16, conf PortConf) error {
	op := p.op("configure")
	info, err := p.Info()
	if err != nil {
		return err
	}
	if nrx > info.MaxRxQueues {
		return fmt.Errorf("%s: %d RX queues requested, the device (%s) allows at most %d", op, nrx, info.Driver, info.MaxRxQueues)
	}
	if ntx > info.MaxTxQueues {
		return fmt.Errorf("%s: %d TX queues requested, the device (%s) allows at most %d", op, ntx, info.Driver, info.MaxTxQueues)
	}
	if missing := conf.TxOffloads &^ info.TxOffloadCapa; missing != 0 {
		return fmt.Errorf("%s: TX offloads %#x not supported by the device (%s offers %#x)", op, missing, info.Driver, info.TxOffloadCapa)
	}
	if missing := conf.RxOffloads &^ info.RxOffloadCapa; missing != 0 {
		return fmt.Errorf("%s: RX offloads %#x not supported by the device (%s offers %#x)", op, missing, info.Driver, info.RxOffloadCapa)
	}
	var c C.struct_rte_eth_conf
	c.txmode.offloads = C.uint64_t(conf.TxOffloads)
	c.rxmode.offloads = C.uint64_t(conf.RxOffloads)
	if conf.MTU != 0 {
		c.rxmode.mtu = C.uint32_t(conf.MTU)
	}
	if rc := C.rte_eth_dev_configure(C.uint16_t(p.ID), C.uint16_t(nrx), C.uint16_t(ntx), &c); rc < 0 {
		return newError(fmt.Sprintf("%s with %d RX and %d TX queues", op, nrx, ntx), int(rc))
	}
	p.nrx, p.ntx = nrx, ntx
	return nil
}

// RxQueueSetup sets up RX queue q with nbDesc descriptors, filled from pool.
func (p *Port) RxQueueSetup(q, nbDesc uint16, pool *Mempool) error {
	if q >= p.nrx {
		return fmt.Errorf("%s: RX queue %d does not exist (%d configured)", p.op("set up RX queue of"), q, p.nrx)
	}
	sock := C.rte_eth_dev_socket_id(C.uint16_t(p.ID))
	if sock < 0 {
		sock = 0
	}
	if rc := C.rte_eth_rx_queue_setup(C.uint16_t(p.ID), C.uint16_t(q), C.uint16_t(nbDesc), C.uint(sock), nil, pool.mp); rc < 0 {
		return newError(fmt.Sprintf("%s: RX queue %d with %d descriptors", p.op("set up"), q, nbDesc), int(rc))
	}
	return nil
}

// TxQueueSetup sets up TX queue q with nbDesc descriptors.
func (p *Port) TxQueueSetup(q, nbDesc uint16) error {
	if q >= p.ntx {
		return fmt.Errorf("%s: TX queue %d does not exist (%d configured)", p.op("set up TX queue of"), q, p.ntx)
	}
	sock := C.rte_eth_dev_socket_id(C.uint16_t(p.ID))
	if sock < 0 {
		sock = 0
	}
	if rc := C.rte_eth_tx_queue_setup(C.uint16_t(p.ID), C.uint16_t(q), C.uint16_t(nbDesc), C.uint(sock), nil); rc < 0 {
		return newError(fmt.Sprintf("%s: TX queue %d with %d descriptors", p.op("set up"), q, nbDesc), int(rc))
	}
	return nil
}

// RxQueues and TxQueues are the queue counts given to Configure.
func (p *Port) RxQueues() uint16 { return p.nrx }
func (p *Port) TxQueues() uint16 { return p.ntx }

// Start starts the port.
func (p *Port) Start() error {
	if rc := C.rte_eth_dev_start(C.uint16_t(p.ID)); rc < 0 {
		return newError(p.op("start"), int(rc))
	}
	p.started.Store(true)
	return nil
}

// Started reports whether the port is started.
func (p *Port) Started() bool { return p.started.Load() }

// Stop stops the port (on EAL's interrupt thread for a net_memif port:
// see intr.go), after cancelling a pending Redial. Bursts on a stopped
// port are refused and counted.
func (p *Port) Stop() error {
	p.CancelRedial()
	if !p.started.Swap(false) {
		return nil // never started, or a redial left it stopped
	}
	return p.stopOrClose(C.HOMA_PORT_STOP, "stop")
}

// Close stops (if needed) and closes the port, releasing its resources
// (on EAL's interrupt thread for a net_memif port: see intr.go). The
// *Port must not be used afterwards.
func (p *Port) Close() error {
	p.CancelRedial()
	if p.started.Load() {
		if err := p.Stop(); err != nil {
			return err
		}
	}
	if err := p.stopOrClose(C.HOMA_PORT_CLOSE, "close"); err != nil {
		return err
	}
	forget(p.ID)
	return nil
}

// MAC returns the port's MAC address.
func (p *Port) MAC() (net.HardwareAddr, error) {
	var a C.struct_rte_ether_addr
	if rc := C.rte_eth_macaddr_get(C.uint16_t(p.ID), &a); rc < 0 {
		return nil, newError(p.op("get MAC address of"), int(rc))
	}
	return C.GoBytes(unsafe.Pointer(&a.addr_bytes[0]), 6), nil
}

// Link is a port's link state.
type Link struct {
	Up         bool
	SpeedMbps  uint32
	FullDuplex bool
	Autoneg    bool
}

func (l Link) String() string {
	if !l.Up {
		return "down"
	}
	d := "half-duplex"
	if l.FullDuplex {
		d = "full-duplex"
	}
	return fmt.Sprintf("up %d Mbps %s", l.SpeedMbps, d)
}

// Link returns the link state without waiting.
func (p *Port) Link() (Link, error) {
	var l C.struct_rte_eth_link
	if rc := C.rte_eth_link_get_nowait(C.uint16_t(p.ID), &l); rc < 0 {
		return Link{}, newError(p.op("get link of"), int(rc))
	}
	// link_duplex, link_autoneg and link_status are bit-fields; read them
	// through the C helper-free layout: the 32-bit speed, then a 16-bit word.
	speed := *(*uint32)(unsafe.Pointer(&l))
	bits := *(*uint16)(unsafe.Add(unsafe.Pointer(&l), 4))
	return Link{
		SpeedMbps:  speed,
		FullDuplex: bits&1 != 0,
		Autoneg:    bits&2 != 0,
		Up:         bits&4 != 0,
	}, nil
}

// SetPromiscuous turns promiscuous mode on or off.
func (p *Port) SetPromiscuous(on bool) error {
	var rc C.int
	if on {
		rc = C.rte_eth_promiscuous_enable(C.uint16_t(p.ID))
	} else {
		rc = C.rte_eth_promiscuous_disable(C.uint16_t(p.ID))
	}
	if rc < 0 {
		return newError(p.op("set promiscuous mode of"), int(rc))
	}
	return nil
}

// Promiscuous reports whether promiscuous mode is on.
func (p *Port) Promiscuous() bool { return C.rte_eth_promiscuous_get(C.uint16_t(p.ID)) == 1 }

// Stats are a port's basic counters (rte_eth_stats), plus the bursts this
// binding refused because the port was not started.
type Stats struct {
	IPackets, OPackets uint64
	IBytes, OBytes     uint64
	IMissed            uint64 // dropped by the device: RX queue full
	IErrors, OErrors   uint64
	RxNoMbuf           uint64 // RX mbuf allocation failures
	TxNotStarted       uint64 // packets offered to TxBurst while stopped
	RxNotStarted       uint64 // RxBurst calls while stopped
}

// Stats returns the port's basic counters.
func (p *Port) Stats() (Stats, error) {
	var s C.struct_rte_eth_stats
	if rc := C.rte_eth_stats_get(C.uint16_t(p.ID), &s); rc < 0 {
		return Stats{}, newError(p.op("get stats of"), int(rc))
	}
	return Stats{
		IPackets: uint64(s.ipackets), OPackets: uint64(s.opackets),
		IBytes: uint64(s.ibytes), OBytes: uint64(s.obytes),
		IMissed: uint64(s.imissed), IErrors: uint64(s.ierrors), OErrors: uint64(s.oerrors),
		RxNoMbuf:     uint64(s.rx_nombuf),
		TxNotStarted: p.txNotStarted.Load(),
		RxNotStarted: p.rxNotStarted.Load(),
	}, nil
}

// ResetStats zeroes the device counters (not the not-started counts).
func (p *Port) ResetStats() error {
	if rc := C.rte_eth_stats_reset(C.uint16_t(p.ID)); rc < 0 {
		return newError(p.op("reset stats of"), int(rc))
	}
	return nil
}

// XStat is one extended statistic.
type XStat struct {
	Name  string
	Value uint64
}

// XStats returns the driver's extended statistics.
func (p *Port) XStats() ([]XStat, error) {
	pid := C.uint16_t(p.ID)
	n := C.rte_eth_xstats_get_names(pid, nil, 0)
	if n < 0 {
		return nil, newError(p.op("count xstats of"), int(n))
	}
	if n == 0 {
		return nil, nil
	}
	names := make([]C.struct_rte_eth_xstat_name, n)
	vals := make([]C.struct_rte_eth_xstat, n)
	if rc := C.rte_eth_xstats_get_names(pid, &names[0], C.uint(n)); rc < 0 {
		return nil, newError(p.op("get xstat names of"), int(rc))
	}
	rc := C.rte_eth_xstats_get(pid, &vals[0], C.uint(n))
	if rc < 0 {
		return nil, newError(p.op("get xstats of"), int(rc))
	}
	out := make([]XStat, 0, int(rc))
	for _, v := range vals[:rc] {
		if v.id >= C.uint64_t(n) {
			continue
		}
		out = append(out, XStat{Name: C.GoString(&names[v.id].name[0]), Value: uint64(v.value)})
	}
	return out, nil
}

// NewVdev creates a virtual device at run time (rte_vdev_init), as
// `--vdev name,args` would at start-up, and returns its port. Only ethdev
// vdevs (net_*) make a port.
func NewVdev(name, args string) (*Port, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	cname, cargs := C.CString(name), C.CString(args)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cargs))
	var logp *C.char
	var loglen C.size_t
	rc := C.homa_vdev_init(cname, cargs, &logp, &loglen)
	log := ""
	if logp != nil {
		log = C.GoStringN(logp, C.int(loglen))
		C.free(unsafe.Pointer(logp))
	}
	if rc < 0 {
		e := newError(fmt.Sprintf("create vdev %q with %q", name, args), int(rc))
		e.Log = errorLines(quietHarmless(log))
		if -rc == C.EINVAL && e.Log == "" {
			e.Log = "no driver matches the name, or the arguments are invalid"
		}
		return nil, e
	}
	if log = quietHarmless(log); log != "" {
		os.Stderr.WriteString(log)
	}
	return PortByName(name)
}

// RemoveVdev closes the port of a vdev made by NewVdev (if still open) and
// destroys the device.
func RemoveVdev(name string) error {
	if p, err := PortByName(name); err == nil {
		if err := p.Close(); err != nil {
			return err
		}
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if rc := C.rte_vdev_uninit(cname); rc < 0 {
		return newError(fmt.Sprintf("remove vdev %q", name), int(rc))
	}
	return nil
}

// SetMTU sets the port's MTU (the largest IP packet, without the Ethernet
// header).
func (p *Port) SetMTU(mtu uint16) error {
	if rc := C.rte_eth_dev_set_mtu(C.uint16_t(p.ID), C.uint16_t(mtu)); rc < 0 {
		return newError(fmt.Sprintf("%s to %d", p.op("set MTU of"), mtu), int(rc))
	}
	return nil
}

// SetMAC replaces the port's MAC address.
func (p *Port) SetMAC(mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("%s: %v is not a 6-byte MAC address", p.op("set MAC of"), mac)
	}
	var a C.struct_rte_ether_addr
	for i := range 6 {
		a.addr_bytes[i] = C.uint8_t(mac[i])
	}
	if rc := C.rte_eth_dev_default_mac_addr_set(C.uint16_t(p.ID), &a); rc < 0 {
		return newError(fmt.Sprintf("%s to %v", p.op("set MAC of"), mac), int(rc))
	}
	return nil
}
