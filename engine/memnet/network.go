package memnet

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// Network is the simulated network: hosts, the switch, the clock and the
// event queue. It is single-threaded: every method, and every callback it
// makes, runs on the goroutine that drives it (Step, RunUntil,
// RunUntilIdle). It is not safe for concurrent use.
type Network struct {
	cfg Config // filled and validated
	bps int64  // cfg.LinkBps as a whole number

	now     int64     // simulated time, ns
	seq     uint64    // events scheduled so far (tie-break)
	events  eventHeap // pending events
	running bool      // an event is running (guards against re-entry)

	hosts  []*Host           // in AddHost order
	byIP   map[[4]byte]*Host // routing table of the switch
	free   *packet           // free list of frames
	rng    *rand.Rand        // fault draws, seeded by cfg.Seed
	rules  []dropRule        // DropNext injections, oldest first
	trace  func(line string) // SetTrace hook, or nil
	tbuf   []byte            // trace line scratch
	counts counters          // Stats without the per-port part
	fab    *fabric           // Config.Fabric's racks and cores, or nil
}

// Host is one endpoint: a NIC with strict-priority queues and a link to
// its own port of the switch. Its methods must be called from the
// goroutine driving the network.
type Host struct {
	net  *Network
	ip   [4]byte
	mac  [6]byte
	name string // "h1", "h2", ... in AddHost order, for traces

	nic    port // transmit queues of the host's NIC (uplink)
	egress port // the switch's egress port toward this host (downlink)

	recv      func(frame []byte) // SetReceive, or nil
	onRestart func()             // OnRestart, or nil

	// txDone counts, by the queue given to SendQueue (Send: the
	// frame's IPv4 priority), the frames that left the NIC: serialized,
	// or dropped by a Restart (TxDone).
	txDone [MaxQueues]uint64

	epoch       uint32 // bumped by Restart
	partitioned bool   // Partition: drop everything to and from the host
	rack        int    // with a fabric: the host's rack
}

// New returns an empty network. It panics if cfg does not validate (see
// Config.Validate), since a test cannot run on an invalid network.
func New(cfg Config) *Network {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	n := &Network{
		cfg:  cfg,
		bps:  int64(math.Round(cfg.LinkBps)),
		byIP: make(map[[4]byte]*Host),
		rng:  rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6d656d6e6574)), // "memnet"
	}
	if cfg.Fabric.on() {
		n.fab = newFabric(cfg.Fabric, cfg.LinkBps)
	}
	return n
}

// Config returns the network's configuration with defaults filled in.
func (n *Network) Config() Config { return n.cfg }

// AddHost attaches a host with address ip to a new port of the switch
// (with a fabric: of the first ToR with room, racks filled in order).
// Its MAC is the locally administered 02:00:ip[0]:ip[1]:ip[2]:ip[3]. It
// panics if ip is already taken, or if the fabric's racks are full.
func (n *Network) AddHost(ip [4]byte) *Host {
	if _, dup := n.byIP[ip]; dup {
		panic("memnet: AddHost: address already in use: " + ipString(ip))
	}
	rack := 0
	if f := n.cfg.Fabric; f.on() {
		if rack = len(n.hosts) / f.HostsPerRack; rack >= f.Racks {
			panic("memnet: AddHost: the fabric's racks are full")
		}
	}
	h := &Host{
		net:  n,
		ip:   ip,
		mac:  [6]byte{0x02, 0x00, ip[0], ip[1], ip[2], ip[3]},
		name: "h" + strconv.Itoa(len(n.hosts)+1),
		rack: rack,
	}
	n.hosts = append(n.hosts, h)
	n.byIP[ip] = h
	return h
}

// Host returns the host with address ip, or nil.
func (n *Network) Host(ip [4]byte) *Host { return n.byIP[ip] }

// Hosts returns the hosts in the order they were added. The slice is the
// network's own; do not modify it.
func (n *Network) Hosts() []*Host { return n.hosts }

// IP returns the host's IPv4 address.
func (h *Host) IP() [4]byte { return h.ip }

// MAC returns the host's Ethernet address.
func (h *Host) MAC() [6]byte { return h.mac }

// Name returns the host's name in traces: "h1" for the first host added.
func (h *Host) Name() string { return h.name }

// SetReceive sets the function that receives the frames delivered to the
// host. The slice is valid only during the call: the network reuses its
// buffer afterwards, so copy what must outlive it. f may call Send and
// schedule events. With no function set, frames are delivered and
// discarded.
func (h *Host) SetReceive(f func(frame []byte)) { h.recv = f }

// OnRestart sets a function that Network.Restart calls after dropping the
// host's frames, for the host's software to lose its state.
func (h *Host) OnRestart(f func()) { h.onRestart = f }

// QueuedBytes returns the bytes held by the host's NIC: frames waiting to
// be transmitted plus the one being serialized. A pacer can keep this to
// a few µs of link time.
func (h *Host) QueuedBytes() int { return h.nic.bytes }

// Send copies frame and queues it on the host's NIC, in the queue of its
// IPv4 priority (TOS>>5; a frame that is not IPv4 goes to priority 0 and
// is dropped at the switch). If the NIC is idle it starts transmitting at
// once. Send does not allocate in steady state.
func (h *Host) Send(frame []byte) { h.send(frame, -1) }

// SendQueue is Send with the NIC queue chosen by the caller: the queue
// of priority queue (0..7, mapped as Config.Queues maps priorities),
// whatever the frame's IPv4 priority, as a host does that picks a TX
// queue per frame. The switches still go by the IPv4 priority.
func (h *Host) SendQueue(frame []byte, queue int) { h.send(frame, min(max(queue, 0), MaxQueues-1)) }

// TxDone returns how many frames sent at queue (SendQueue's queue, or
// Send's IPv4 priority) have left the host's NIC: their last bit
// serialized, or dropped by a Restart. Frames of one queue leave in the
// order sent. It is engine.TxProgress for a transmit side that sends
// through SendQueue.
func (h *Host) TxDone(queue int) uint64 {
	if queue < 0 || queue >= MaxQueues {
		return 0
	}
	return h.txDone[queue]
}

// left counts p, sent by h, as having left h's NIC (TxDone).
func (h *Host) left(p *packet) {
	q := int(p.prio)
	if p.nicq >= 0 {
		q = int(p.nicq)
	}
	h.txDone[q]++
}

func (h *Host) send(frame []byte, queue int) {
	n := h.net
	p := n.alloc(frame)
	classify(p)
	p.nicq = int8(queue)
	p.from, p.fromEpoch = h, h.epoch
	n.counts.sent++
	n.counts.sentBytes += uint64(len(p.buf))
	if n.cfg.HostDelay > 0 {
		n.schedule(event{t: n.now + n.cfg.HostDelay, kind: evNICEnter, h: h, p: p})
		return
	}
	n.nicEnter(h, p)
}

// nicEnter queues p on h's NIC and starts it if idle.
func (n *Network) nicEnter(h *Host, p *packet) {
	if p.fromEpoch != h.epoch {
		h.left(p)
		n.drop(p, DropRestart)
		return
	}
	prio := p.prio
	if p.nicq >= 0 {
		prio = uint8(p.nicq)
	}
	q := n.queueOf(prio)
	if n.cfg.NICFIFO {
		q = 0
	}
	h.nic.push(p, q)
	if h.nic.cur == nil {
		n.uplinkStart(h)
	}
}

// uplinkStart puts the next frame of h's NIC on the wire, if any.
func (n *Network) uplinkStart(h *Host) {
	p := h.nic.pop()
	h.nic.cur = p
	if p != nil {
		n.schedule(event{t: n.now + n.txTime(len(p.buf)), kind: evUplinkDone, h: h})
	}
}

// uplinkDone: h's NIC has sent the last bit of its current frame, which
// reaches the switch one propagation delay later. A frame whose host
// restarted while it was on the wire is cut off.
func (n *Network) uplinkDone(h *Host) {
	p := h.nic.cur
	h.nic.unhold(p)
	h.left(p)
	if p.fromEpoch != h.epoch {
		n.drop(p, DropRestart)
	} else {
		n.schedule(event{t: n.now + n.cfg.PropDelay + n.cfg.Fabric.SwitchLatency, kind: evSwitchIn, p: p})
	}
	n.uplinkStart(h)
}

// ipString formats an IPv4 address for messages.
func ipString(ip [4]byte) string {
	b := make([]byte, 0, 15)
	for i, x := range ip {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(x), 10)
	}
	return string(b)
}
