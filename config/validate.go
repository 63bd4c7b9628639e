package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// problems collects validation errors, each naming its key.
type problems []error

func (p *problems) add(key, format string, args ...any) {
	if env := fromEnv(key); env != "" {
		key += " (set by " + env + ")"
	}
	*p = append(*p, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

func (p *problems) intRange(key string, v, lo, hi int) {
	if v < lo || v > hi {
		p.add(key, "%d is out of range; allowed %d..%d", v, lo, hi)
	}
}

func (p *problems) fraction(key string, v float64) {
	if v < 0 || v > 1 {
		p.add(key, "%v is out of range; allowed 0..1", v)
	}
}

func (p *problems) oneOf(key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	p.add(key, "%q is not allowed; choose one of %s", v, strings.Join(allowed, ", "))
}

func (p *problems) duration(key string, v, lo, hi time.Duration) {
	if v < lo || v > hi {
		p.add(key, "%v is out of range; allowed %v..%v", v, lo, hi)
	}
}

// groupName is a numeric gid or a group name as useradd(8) takes it
// (whether it exists is for the daemon to find out: the config is read
// without side effects, maybe on another machine).
var groupName = regexp.MustCompile(`^([0-9]{1,10}|[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?)$`)

// Validate checks every key and returns all problems at once.
func (s *Spec) Validate() error {
	var p problems
	if len(s.Ports) == 0 {
		p.add("ports", "no port is configured; give at least one (device and address)")
	}
	own := 0 // ports with lcores of their own
	for _, ps := range s.Ports {
		if len(ps.Lcores) > 0 {
			own++
		}
	}
	if len(s.Lcores) == 0 && (own < len(s.Ports) || len(s.Ports) == 0) {
		p.add("lcores", "no polling lcore; give the EAL worker lcores that poll the ports, e.g. [1]")
	}
	if len(s.Ports) > 0 && len(s.Lcores) > len(s.Ports) {
		p.add("lcores", "%d lcores for %d ports; lcores[i] polls ports[i] (ports may share an lcore)", len(s.Lcores), len(s.Ports))
	}
	addrs := map[netip.Addr]string{}
	for i := range s.Ports {
		s.Ports[i].validate(&p, fmt.Sprintf("ports[%d]", i), addrs)
	}
	s.validateLcores(&p)
	s.Protocol.validate(&p)
	for i, n := range s.Neighbours {
		key := fmt.Sprintf("neighbours[%d]", i)
		if !n.IP.IsValid() {
			p.add(key+".ip", "missing; give the neighbour's IPv4 or IPv6 address")
		}
		if len(n.MAC) != 6 {
			p.add(key+".mac", "missing; give a MAC address like 02:00:00:00:00:01")
		}
	}
	for i, ps := range s.Peers {
		key := fmt.Sprintf("peers[%d]", i)
		if !ps.Prefix.IsValid() {
			p.add(key+".prefix", "missing; give the peers' prefix, e.g. 10.0.1.0/24 or 2001:db8::/64 (0.0.0.0/0 for every IPv4 peer)")
		}
		if ps.Variant != "" {
			p.oneOf(key+".variant", ps.Variant, "auto", "full", "upstream", "homa-dpdk")
		}
		if ps.Hijack && s.Protocol.Variant == "upstream" {
			p.add(key+".hijack", "protocol.variant is upstream, which has no hijack markers (flags and urgent are 0); drop one of them")
		}
	}
	if s.Metrics.Address != "" {
		if _, _, err := net.SplitHostPort(s.Metrics.Address); err != nil {
			p.add("metrics.address", "%q is not host:port (e.g. 127.0.0.1:9464), or \"\" to turn metrics off", s.Metrics.Address)
		}
	}
	if s.Capture.Last < 0 {
		p.add("capture.last", "%d is negative; 0 keeps every packet", s.Capture.Last)
	}
	p.intRange("capture.snaplen", s.Capture.Snaplen, 64, 65535)
	p.intRange("capture.files", s.Capture.Files, 1, 1000)
	if s.Capture.MaxBytes < 0 {
		p.add("capture.max_bytes", "%d is negative; 0 sets no bound", s.Capture.MaxBytes)
	} else if s.Capture.MaxBytes > 0 && s.Capture.MaxBytes < 1<<20 {
		p.add("capture.max_bytes", "%d bytes is under a MiB; a file must hold at least one MiB chunk of records", s.Capture.MaxBytes)
	}
	p.oneOf("log.format", s.Log.Format, "json", "console")
	p.oneOf("log.level", s.Log.Level, "debug", "info", "warn", "error")
	p.oneOf("log.dpdk_level", s.Log.DPDKLevel, "debug", "info", "notice", "warning", "error")
	if s.Runtime.GOGC < -1 || s.Runtime.GOGC == 0 {
		p.add("runtime.gogc", "%d is not allowed; a positive percentage, or -1 to turn the collector off", s.Runtime.GOGC)
	}
	if s.Runtime.GOMemLimit < 0 {
		p.add("runtime.gomemlimit", "%d is negative", s.Runtime.GOMemLimit)
	}
	if s.Runtime.GOMAXPROCS < 0 {
		p.add("runtime.gomaxprocs", "%d is negative; 0 chooses polling lcores + 2", s.Runtime.GOMAXPROCS)
	}
	p.oneOf("runtime.idle", s.Runtime.Idle, "busy", "adaptive")
	if s.Runtime.IdleSpinPasses < 1 {
		p.add("runtime.idle_spin_passes", "%d: want at least 1 empty pass before an adaptive loop sleeps", s.Runtime.IdleSpinPasses)
	}
	if s.Runtime.IdleMaxSleepUs < 1 || s.Runtime.IdleMaxSleepUs > 10000 {
		p.add("runtime.idle_max_sleep_us", "%d: want 1..10000 µs (it is the latency a packet to an idle loop may wait)", s.Runtime.IdleMaxSleepUs)
	}
	p.fraction("faults.drop", s.Faults.Drop)
	p.fraction("faults.duplicate", s.Faults.Duplicate)
	p.fraction("faults.reorder", s.Faults.Reorder)
	if s.Workers.Enabled && (s.Workers.Socket == "" || !strings.HasPrefix(s.Workers.Socket, "/")) {
		p.add("workers.socket", "%q is not an absolute path", s.Workers.Socket)
	}
	if g := s.Workers.SocketGroup; g != "" && !groupName.MatchString(g) {
		p.add("workers.socket_group", "%q is neither a group name nor a numeric gid", g)
	}
	p.intRange("workers.max_outstanding", s.Workers.MaxOutstanding, 1, 1<<20)
	p.intRange("workers.max_bytes", s.Workers.MaxBytes, 1<<16, 1<<40)
	p.intRange("workers.pool_bytes", s.Workers.PoolBytes, 1<<16, 1<<40)
	if s.Workers.PoolBytes%(1<<16) != 0 {
		p.add("workers.pool_bytes", "%d is not a multiple of the 64 KB page", s.Workers.PoolBytes)
	}
	s.validateMessageRoom(&p)
	if r := s.Workers.RingEntries; r < 16 || r > 1<<20 || r&(r-1) != 0 {
		p.add("workers.ring_entries", "%d is not a power of two in 16..1048576", r)
	}
	p.intRange("workers.max_backlog", s.Workers.MaxBacklog, 1, 1<<22)
	p.intRange("workers.zero_copy_min", s.Workers.ZeroCopyMin, 0, 1<<31-1)
	p.intRange("workers.max_sessions_per_uid", s.Workers.MaxSessionsPerUID, 1, 1<<16)
	p.duration("workers.linger", s.Workers.Linger, 0, time.Minute)
	if b, o := s.Workers.MaxBacklog, s.Workers.MaxOutstanding; b >= 1 && b < 2*o {
		p.add("workers.max_backlog", "%d is under twice workers.max_outstanding (%d): a worker that pauses while its RPCs end (a response and a release each) would lose its session; raise it to at least %d", b, o, 2*o)
	}
	p.duration("arp.timeout", s.ARP.Timeout, time.Millisecond, time.Minute)
	p.intRange("arp.retries", s.ARP.Retries, 1, 100)
	p.duration("arp.aging", s.ARP.Aging, time.Second, 24*time.Hour)
	p.intRange("mempool.mbufs", s.Mempool.Mbufs, 1024, 1<<24)
	p.intRange("mempool.cache", s.Mempool.Cache, 0, 512)
	if s.Mempool.DataRoom != 0 {
		// 65535 bytes of mbuf buffer, DPDK's 128 of headroom included.
		p.intRange("mempool.data_room", s.Mempool.DataRoom, 2048, 65535-128)
		for i, ps := range s.Ports {
			if need := ps.MTU + FrameOverhead; s.Mempool.DataRoom < need {
				p.add("mempool.data_room", "%d bytes cannot hold a frame of ports[%d] (mtu %d + %d = %d)", s.Mempool.DataRoom, i, ps.MTU, FrameOverhead, need)
			}
		}
	}
	return errors.Join(p...)
}

// portLcores are the polling lcores of port i as the file gave them,
// each with its key: ports[i].lcores, or its entry in the top-level
// lcores (which Normalize folds in after Validate).
func (s *Spec) portLcores(i int) (lcores []uint, keys []string) {
	ps := s.Ports[i]
	switch {
	case len(ps.Lcores) > 0:
		for j, l := range ps.Lcores {
			key := fmt.Sprintf("ports[%d].lcores[%d]", i, j)
			if ps.lcoresKey != "" { // folded in from the top-level list
				key = ps.lcoresKey
			}
			lcores, keys = append(lcores, l), append(keys, key)
		}
	case i < len(s.Lcores):
		lcores, keys = []uint{s.Lcores[i]}, []string{fmt.Sprintf("lcores[%d]", i)}
	}
	return lcores, keys
}

// pollingAt is a polling lcore, for a message about its CPU.
type pollingAt struct {
	lcore uint
	key   string
}

// validateLcores checks the polling lcores and the copier CPUs against
// the eal list, which names EAL's lcores (-l, -c, --lcores) and the CPUs
// it runs them on: each polling lcore must be one of EAL's worker
// lcores, and no copier may share a CPU with a polling loop or with EAL's
// main lcore (lcore ids are EAL's, copier CPUs the machine's: the lcores
// are resolved to CPUs first). Without an eal list the caller brings EAL
// up (the demo), and nothing here is known.
func (s *Spec) validateLcores(p *problems) {
	if len(s.EAL) == 0 {
		return
	}
	e, err := parseEALLcores(s.EAL)
	if err != nil {
		p.add("eal", "%v", err)
		return
	}
	mainKnown := e.opt != "" || e.mainOpt
	loops := map[uint]pollingAt{} // CPU → the first polling lcore on it
	for i := range s.Ports {
		lcores, keys := s.portLcores(i)
		for j, l := range lcores {
			key := keys[j]
			switch {
			case e.opt != "" && e.cpus[l] == nil:
				other := ""
				switch w := e.workers(); len(w) {
				case 0:
				case 1:
					other = fmt.Sprintf(", or poll on lcore %d", w[0])
				default:
					other = fmt.Sprintf(", or poll on one of lcores %s", formatCPUs(w))
				}
				p.add(key, "lcore %d is not one of EAL's lcores (%s %s gives lcores %s, %d the main one); add it there (e.g. %s)%s",
					l, e.opt, e.arg, formatCPUs(e.lcores()), e.main, e.withLcore(l), other)
				continue
			case mainKnown && l == e.main:
				which := fmt.Sprintf("--main-lcore %d", e.main)
				if !e.mainOpt {
					which = fmt.Sprintf("the first of %s %s", e.opt, e.arg)
				}
				fix := "poll on another lcore, or make another lcore the main one (--main-lcore)"
				if w := e.workers(); len(w) == 1 {
					fix = fmt.Sprintf("poll on lcore %d, or make another lcore the main one (--main-lcore)", w[0])
				} else if len(w) > 1 {
					fix = fmt.Sprintf("poll on one of lcores %s, or make another lcore the main one (--main-lcore)", formatCPUs(w))
				} else if e.opt != "" {
					next := uint(0)
					for e.cpus[next] != nil {
						next++
					}
					fix = fmt.Sprintf("add a worker lcore to %s (e.g. %s) and poll on it", e.opt, e.withLcore(next))
				}
				p.add(key, "lcore %d is EAL's main lcore (%s), which runs no polling loop; %s", l, which, fix)
				continue
			}
			for _, c := range e.cpusOf(l) {
				if _, ok := loops[c]; !ok {
					loops[c] = pollingAt{l, key}
				}
			}
		}
	}
	// A CPU to suggest for a copier: off EAL's lcores where they are
	// named, else past the polling and main lcores' CPUs.
	taken := map[uint]bool{}
	for c := range loops {
		taken[c] = true
	}
	if mainKnown {
		for _, c := range e.cpusOf(e.main) {
			taken[c] = true
		}
	}
	free := e.freeCPU(taken)
	if e.opt == "" {
		free = 0
		for c := range taken {
			free = max(free, c+1)
		}
	}
	fix := fmt.Sprintf("give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. %d, or no copier_cpus (the loop copies)", free)
	for i, ps := range s.Ports {
		for k, c := range ps.CopierCPUs {
			key := fmt.Sprintf("ports[%d].copier_cpus[%d]", i, k)
			if at, ok := loops[c]; ok {
				p.add(key, "CPU %d is where polling lcore %d (%s) runs (%s): the copier would take turns with the loop it is to relieve; %s",
					c, at.lcore, at.key, e.how(at.lcore), fix)
			} else if mainKnown && slices.Contains(e.cpusOf(e.main), c) {
				p.add(key, "CPU %d is where EAL's main lcore %d runs (%s, %s): the copier would take turns with the daemon's main thread; %s",
					c, e.main, e.how(e.main), e.mainHow(), fix)
			}
		}
	}
}

// onlineCPUs reads the machine's online CPUs, a list like 0-3,8.
var onlineCPUs = func() (string, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	return string(b), err
}

// CheckMachine checks the Spec against the machine it runs on, where
// Validate checks what the config alone shows: each copier CPU is one of
// the machine's online CPUs (pinning to another fails with no more than
// "invalid argument"). config check and run call it after Load, before
// EAL; a machine whose CPUs cannot be read is not checked.
func (s *Spec) CheckMachine() error {
	text, err := onlineCPUs()
	if err != nil {
		return nil
	}
	online, err := parseCPUList(text)
	if err != nil || len(online) == 0 {
		return nil
	}
	var p problems
	for i, ps := range s.Ports {
		for k, c := range ps.CopierCPUs {
			if !slices.Contains(online, c) {
				p.add(fmt.Sprintf("ports[%d].copier_cpus[%d]", i, k), "CPU %d does not exist here (CPUs %s): give one of this machine's CPUs that neither a polling lcore nor EAL's main lcore runs on, or no copier_cpus (the loop copies)",
					c, formatCPUs(online))
			}
		}
	}
	return errors.Join(p...)
}

// validateMessageRoom checks that the largest message fits where it must
// go: the heap budget of ports without workers, and each worker's arena
// (to send one) and pool (to receive one, in consecutive 64 KiB pages).
func (s *Spec) validateMessageRoom(p *problems) {
	mm := s.Protocol.MaxMessage
	if mm < 1 {
		return // refused as out of range
	}
	if h := s.Protocol.MaxRecvHeapBytes; h >= 1<<16 && h < mm {
		p.add("protocol.max_recv_heap_bytes", "%d bytes cannot hold one message of protocol.max_message (%d bytes); raise it to at least %d", h, mm, mm)
	}
	if !s.Workers.Enabled {
		return
	}
	if a := s.Workers.MaxBytes; a >= 1<<16 && a < mm {
		p.add("workers.max_bytes", "%d bytes of transmit arena cannot hold one message of protocol.max_message (%d bytes); raise it to at least %d", a, mm, mm)
	}
	page := 1 << 16
	need := (mm + page - 1) / page * page
	if b := s.Workers.PoolBytes; b >= 1<<16 && b < need {
		p.add("workers.pool_bytes", "%d bytes of receive pool cannot hold one message of protocol.max_message (%d bytes: %d pages of 64 KiB); raise it to at least %d", b, mm, need/page, need)
	}
}

var pciAddr = regexp.MustCompile(`^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

func (ps *PortSpec) validate(p *problems, key string, addrs map[netip.Addr]string) {
	dev, _, _ := strings.Cut(ps.Device, ",")
	switch {
	case ps.Device == "":
		p.add(key+".device", "missing; give a PCI address (0000:3b:00.0) or a vdev (net_memif0,role=server,...)")
	case !pciAddr.MatchString(dev) && !strings.HasPrefix(dev, "net_"):
		p.add(key+".device", "%q is neither a PCI address (0000:3b:00.0) nor a net_* vdev", ps.Device)
	}
	pfx := ps.Address
	switch {
	case !pfx.IsValid() || pfx.Bits() < 1:
		p.add(key+".address", "missing or without a prefix length; give an IPv4 address/prefix (e.g. 10.0.0.1/24), or an IPv6 one for an IPv6-only port")
	case pfx.Addr().Is6() && (pfx.Addr().IsMulticast() || pfx.Addr().IsUnspecified() || pfx.Addr().IsLinkLocalUnicast()):
		p.add(key+".address", "%s is not a global or unique-local IPv6 unicast address/prefix", pfx)
	case pfx.Addr().Is6() && ps.Address6.IsValid():
		p.add(key+".address6", "set beside an IPv6 address; address6 is the IPv6 address of a port whose address is IPv4")
	case pfx.Addr().Is6() && ps.Gateway.IsValid():
		p.add(key+".gateway", "set on an IPv6-only port; its IPv6 next hop is gateway6")
	default:
		if other, dup := addrs[pfx.Addr()]; dup {
			p.add(key+".address", "%s is also the address of %s", pfx.Addr(), other)
		}
		addrs[pfx.Addr()] = key
		switch gw := ps.Gateway; {
		case !gw.IsValid():
		case !gw.Is4():
			p.add(key+".gateway", "%s is not an IPv4 address (an IPv6 next hop is gateway6)", gw)
		case !pfx.Masked().Contains(gw):
			p.add(key+".gateway", "%s is not on the port's subnet %s", gw, pfx.Masked())
		}
	}
	if p6 := ps.Address6; p6.IsValid() {
		switch {
		case !p6.Addr().Is6() || p6.Addr().Is4In6() || p6.Bits() < 1 || p6.Addr().IsMulticast() || p6.Addr().IsUnspecified():
			p.add(key+".address6", "%s is not an IPv6 unicast address/prefix (e.g. 2001:db8::1/64)", p6)
		case addrs[p6.Addr()] != "":
			p.add(key+".address6", "%s is also the address of %s", p6.Addr(), addrs[p6.Addr()])
		default:
			addrs[p6.Addr()] = key
		}
	}
	p6 := ps.Address6 // the port's IPv6 prefix: address6, or address on an IPv6-only port
	if pfx.IsValid() && pfx.Addr().Is6() {
		p6 = pfx
	}
	switch gw := ps.Gateway6; {
	case !gw.IsValid():
	case !p6.IsValid():
		p.add(key+".gateway6", "set without an IPv6 address (ports[].address6, or an IPv6 address)")
	case !gw.Is6() || !gw.IsLinkLocalUnicast() && !p6.Masked().Contains(gw):
		p.add(key+".gateway6", "%s is neither link-local nor on the port's IPv6 prefix %s", gw, p6.Masked())
	}
	if ps.MAC != nil && (len(ps.MAC) != 6 || ps.MAC[0]&1 == 1) {
		p.add(key+".mac", "%s is not a unicast MAC address like 02:00:00:00:00:01", ps.MAC)
	}
	p.intRange(key+".mtu", ps.MTU, 576, 9000)
	p.intRange(key+".rx_queues", ps.RxQueues, 0, 1024)
	if ps.WorkersSocket != "" && !strings.HasPrefix(ps.WorkersSocket, "/") {
		p.add(key+".workers_socket", "%q is not an absolute path", ps.WorkersSocket)
	}
	p.intRange(key+".tx_queues", ps.TxQueues, 0, 1024)
	if n := len(ps.CopierCPUs); n > 0 && n != max(len(ps.Lcores), 1) {
		p.add(key+".copier_cpus", "%d CPUs for %d shards; give one copier CPU per shard (ports[].lcores), or none", n, max(len(ps.Lcores), 1))
	}
	p.oneOf(key+".marking", ps.Marking, "dscp", "pcp")
	p.intRange(key+".vlan", ps.VLAN, 0, 4094)
	if ps.Marking == "pcp" && ps.VLAN == 0 {
		p.add(key+".vlan", "pcp marking needs a VLAN id (1..4094) for the 802.1Q tag")
	}
	if ps.PriorityMap != "" {
		n := ps.TxQueues
		if n == 0 {
			n = nicq.NumPriorities
		}
		if _, err := nicq.ParseMap(ps.PriorityMap, n); err != nil {
			p.add(key+".priority_map", "%v", err)
		}
	}
	if ps.LinkSpeed < 0 {
		p.add(key+".link_speed", "%v is negative; give a rate like 10G, or auto", float64(ps.LinkSpeed))
	}
	p.intRange(key+".rx_desc", ps.RxDesc, 32, 32768)
	p.intRange(key+".tx_desc", ps.TxDesc, 32, 32768)
}

func (h *ProtocolSpec) validate(p *problems) {
	p.oneOf("protocol.variant", h.Variant, "full", "upstream")
	p.oneOf("protocol.verify_checksum", h.VerifyChecksum, "hijacked", "all", "none")
	p.intRange("protocol.max_message", h.MaxMessage, 1, wire.MaxMessageLimit)
	if h.MaxMessage > wire.MaxMessageLength && len(h.LongMessagePeers) == 0 {
		p.add("protocol.max_message", "%d is above kernel Homa's %d bytes, the most a peer outside protocol.long_message_peers may send or be sent, and that list is empty; "+
			"name the homa-dpdk peers in protocol.long_message_peers (e.g. [10.0.0.0/24], or [0.0.0.0/0] when every peer runs homa-dpdk), or lower it",
			h.MaxMessage, wire.MaxMessageLength)
	}
	p.intRange("protocol.unsched_bytes", h.UnschedBytes, 1, h.MaxMessage)
	p.intRange("protocol.max_incoming", h.MaxIncoming, 1, 1<<30)
	p.intRange("protocol.grant_increment", h.GrantIncrement, 1, 1<<30)
	p.intRange("protocol.max_overcommit", h.MaxOvercommit, 1, 64)
	p.intRange("protocol.window", h.Window, 0, 1<<30)
	p.fraction("protocol.grant_fifo_fraction", h.GrantFIFOFraction)
	p.intRange("protocol.fifo_grant_increment", h.FIFOGrantIncrement, 1, 1<<30)
	if len(h.UnschedCutoffs) == 0 || len(h.UnschedCutoffs) > 8 {
		p.add("protocol.unsched_cutoffs", "%d entries; give 1 to 8 byte counts, for priorities 7 downwards", len(h.UnschedCutoffs))
	}
	for i, c := range h.UnschedCutoffs {
		if c <= 0 || (i > 0 && c <= h.UnschedCutoffs[i-1]) {
			p.add(fmt.Sprintf("protocol.unsched_cutoffs[%d]", i), "%d: cutoffs must be positive and increase", c)
		}
	}
	p.duration("protocol.tick", h.Tick, 10*time.Microsecond, time.Second)
	p.intRange("protocol.resend_ticks", h.ResendTicks, 1, 1000)
	p.intRange("protocol.resend_interval", h.ResendInterval, 1, 1000)
	p.intRange("protocol.timeout_ticks", h.TimeoutTicks, 2, 100000)
	if h.TimeoutTicks <= h.ResendTicks {
		p.add("protocol.timeout_ticks", "%d must exceed protocol.resend_ticks (%d), or no RESEND is ever sent", h.TimeoutTicks, h.ResendTicks)
	}
	if b := h.BusyTimeoutTicks; b != 0 && b != -1 && (b < h.TimeoutTicks || b > 1<<30) {
		p.add("protocol.busy_timeout_ticks", "%d: want 0 (100 x timeout_ticks), -1 (none) or from protocol.timeout_ticks (%d) to %d", b, h.TimeoutTicks, 1<<30)
	}
	if l := h.GrantLapseTicks; l != 0 && l != -1 && (l < h.ResendTicks || l > 1<<30) {
		p.add("protocol.grant_lapse_ticks", "%d: want 0 (4 x resend_ticks), -1 (never) or from protocol.resend_ticks (%d) to %d", l, h.ResendTicks, 1<<30)
	}
	p.intRange("protocol.request_ack_ticks", h.RequestAckTick, 1, 1000)
	p.duration("protocol.max_nic_queue", h.MaxNICQueue, 100*time.Nanosecond, 10*time.Millisecond)
	p.intRange("protocol.pacer_threshold", h.PacerThreshold, 0, h.MaxMessage)
	p.intRange("protocol.max_gaps", h.MaxGaps, 1, 1<<16)
	p.intRange("protocol.max_resends_per_rpc", h.MaxResendsPerRPC, 1, 1<<16)
	p.intRange("protocol.max_resend_bytes", h.MaxResendBytes, 1500, 1<<30)
	p.intRange("protocol.max_server_rpcs", h.MaxServerRPCs, 1, 1<<22)
	p.intRange("protocol.max_server_rpcs_per_peer", h.MaxServerRPCsPerPeer, 1, 1<<22)
	if h.MaxServerRPCsPerPeer > h.MaxServerRPCs {
		p.add("protocol.max_server_rpcs_per_peer", "%d exceeds protocol.max_server_rpcs (%d)", h.MaxServerRPCsPerPeer, h.MaxServerRPCs)
	}
	p.intRange("protocol.max_staging_bytes", h.MaxStagingBytes, 1<<16, 1<<34)
	p.intRange("protocol.max_recv_heap_bytes", h.MaxRecvHeapBytes, 1<<16, 1<<40)
	p.intRange("protocol.max_peers", h.MaxPeers, 16, 1<<24)
	if h.MaxPeers <= h.MaxServerRPCs/h.MaxServerRPCsPerPeer {
		p.add("protocol.max_peers", "%d must exceed max_server_rpcs / max_server_rpcs_per_peer (%d), or busy peers could fill the table", h.MaxPeers, h.MaxServerRPCs/max(h.MaxServerRPCsPerPeer, 1))
	}
	p.intRange("protocol.peer_idle_ticks", h.PeerIdleTicks, 1, 1<<30)
	if h.ICMPRateLimit != 0 {
		p.duration("protocol.icmp_ratelimit", h.ICMPRateLimit, time.Millisecond, time.Hour)
	}
	p.intRange("protocol.icmp_ratelimit_burst", h.ICMPRateLimitBurst, 1, 1<<20)
	p.intRange("protocol.icmp_ratelimit_buckets", h.ICMPRateLimitBuckets, 16, 1<<24)
	p.intRange("protocol.icmp_msgs_per_sec", h.ICMPMsgsPerSec, 0, 1<<24)
	p.intRange("protocol.icmp_msgs_burst", h.ICMPMsgsBurst, 1, 1<<24)
}

// ParseRate reads a link rate such as 10G, 25G, 100M or 400G (bits per
// second).
func ParseRate(s string) (float64, error) {
	mult := map[string]float64{"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
	u := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "bps"), "b"))
	if len(u) >= 2 {
		if m, ok := mult[u[len(u)-1:]]; ok {
			if v, err := strconv.ParseFloat(u[:len(u)-1], 64); err == nil && v > 0 {
				return v * m, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not a rate like 10G, 25G, 100G or 100M", s)
}

// ParseBytes reads a size such as 512MiB, 2GiB, 64KiB or 1048576.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}, {"", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			if v, err := strconv.ParseInt(num, 10, 64); err == nil && v > 0 {
				return v * u.mult, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not a size like 512MiB, 2GiB or a byte count", s)
}
