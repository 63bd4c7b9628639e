package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

const serverPort = 99

// host is one simulated machine: a memnet host, its endpoint, a server
// port that answers every request with one byte, a client port.
type host struct {
	s   *sim
	idx int
	// The receiver's downlink, for wasted bandwidth: the messages it has
	// begun and not finished receiving (bytes left, by sender address and
	// RPC id), since when at least one has been, and the active time and
	// DATA wire bytes summed over the measured window.
	active      map[inKey]int
	activeSince int64
	activeNs    int64
	activeBytes int64
	mh          *memnet.Host
	e           *engine.Endpoint
	srv         *engine.Port
	cli         *engine.Port
	buf         []byte // the endpoint's transmit buffer
	next        int64  // the Run already scheduled (0: none)
}

func (h *host) Buffer() []byte              { return h.buf }
func (h *host) Send(frame []byte, prio int) { h.mh.SendQueue(frame, prio) } // the TX queue of that priority, as host does

// TxDone is engine.TxProgress: the NIC tells the engine which of its
// frames left, so a RESEND for bytes still queued is answered BUSY.
func (h *host) TxDone(prio int) uint64 { return h.mh.TxDone(prio) }

// msgKey names a message: its client's host and client RPC id.
type msgKey struct {
	src int
	id  uint64
}

type started struct {
	tid  int32 // the message's index in the run's messages
	size int
	dst  int
}

// sim is one run.
type sim struct {
	cfg     Config
	net     *memnet.Network
	hosts   []*host
	byIP    map[[4]byte]int
	payload []byte // what every request carries (engines only read it)
	scratch []byte // every received message's buffer: its bytes are not looked at
	neigh   engine.StaticNeighbours

	cutoffs    [8]uint32 // the hosts' (for the result)
	overcommit int       // the hosts' MaxOvercommit (for the result)
	inflight   map[msgKey]started
	msgs       []workload.Msg
	deps       map[int32][]int32 // the messages each message's delivery starts
	startAt    []int64           // by message: when sent (-1: not yet)
	doneAt     []int64           // by message: when delivered (-1: not yet)
	errs       []string          // conservation failures (the first few)
	nerrs      int
	// counts
	offered, delivered, tried int
	offeredBytes              int64
	// DATA frame bytes delivered in the second half of the arrivals'
	// period, and those offered in it (requests and their responses)
	dataCarried, offeredFrames int64
	end                        int64 // the last arrival, ns
	responses, failedRPCs      int
}

// Sample is one delivered message of the measured window.
type Sample struct {
	Size       int
	Ns, IdleNs int64
}

// Slowdown is the sample's completion time over its idle time.
func (s Sample) Slowdown() float64 { return float64(s.Ns) / float64(s.IdleNs) }

// hostIP is host i's address: 10.r.h.1 style, unique for up to 65536.
func hostIP(i int) [4]byte { return [4]byte{10, byte(i >> 8), byte(i), 1} }

// engineConfig is host i's endpoint configuration for the variant.
func engineConfig(cfg Config, wl *workload.Workload, i int, mh *memnet.Host, now func() int64) engine.Config {
	c := engine.DefaultConfig()
	c.IP, c.MAC, c.Clock = mh.IP(), mh.MAC(), now
	c.IDSeed = uint64(i+1) << 40
	c.LinkBps = int64(cfg.LinkBps)
	c.MaxMessageLength = max(wl.Max(), 1)
	c.KernelPeer = func(netip.Addr) bool { return false } // every peer runs this engine
	unsched := cfg.UnschedBytes
	if unsched == 0 {
		unsched = 10_000
	}
	// The kernel's defaults scaled as the paper did from its 40 KB of
	// unscheduled bytes to 10 KB: a quarter of the incoming bound, the
	// grant increment and the FIFO grant.
	c.UnschedBytes = unsched
	g := sched.DefaultGrantConfig()
	g.MaxIncoming, g.Increment, g.FIFOIncrement = unsched*10, max(unsched/4, 1), unsched*5/4
	if cfg.MaxIncoming > 0 {
		g.MaxIncoming = cfg.MaxIncoming
	}
	if cfg.MaxOvercommit > 0 {
		g.MaxOvercommit = cfg.MaxOvercommit
	}
	c.Grant = g
	c.Cutoffs = cutoffsFor(wl, unsched, cfg.Cutoffs, cfg.UnschedLevels, cfg.CutoffSkew, cfg.Load)
	c.PeerCutoffs = c.Cutoffs // every host has the same: no warm-up at priority 6 per pair
	c.ScheduledDataQueue = cfg.ScheduledDataQueue
	c.MessagePriorityResends = cfg.MessagePriorityResends
	c.MaxRecvHeapBytes = 1 << 40 // receive buffers come from the hook (scratch)
	c.MaxStagingBytes = 1 << 30
	c.MaxServerRPCs, c.MaxServerRPCsPerPeer = 1<<20, 1<<16
	c.MaxPeers = 1 << 20
	switch cfg.Variant {
	case HomaOnePrio:
		c.Cutoffs = sched.Cutoffs{sched.NumPriorities - 1: math.MaxUint32}
		c.PeerCutoffs = c.Cutoffs
	case Basic:
		c.Cutoffs = sched.Cutoffs{sched.NumPriorities - 1: math.MaxUint32}
		c.PeerCutoffs = c.Cutoffs
		c.Grant.ArrivalOrder, c.Grant.FIFOFraction = true, 0
	case HomaNoIncast:
		c.Incast = sched.IncastConfig{}
	}
	return c
}

// responseBytes is the length of every response.
const responseBytes = 1

// cutoffsFor divides the priorities as Homa does for a workload: the
// unscheduled levels take the share of the eight levels that unscheduled
// bytes have of all bytes on the wire (at least one, leaving one for
// scheduled bytes; levels, where not 0, instead), and the cutoffs between
// them follow rule (CutoffRules), shortest messages highest; skew is
// sched.ComputeCutoffsBy's.
func cutoffsFor(wl *workload.Workload, unsched int, rule string, levels int, skew, load float64) sched.Cutoffs {
	var h sched.Histogram
	prev := 0.0
	for i, size := range wl.Sizes {
		p := wl.CDF[i] - prev
		prev = wl.CDF[i]
		for range int(math.Round(p * 100_000)) {
			h.Record(size)
		}
	}
	payload, overhead := perPacket, dataHeaders+sched.WireOverhead // as WireBytes counts
	if levels == 0 {
		u := wl.Mean(func(n int) float64 { return WireBytes(min(n, unsched)) })
		all := wl.Mean(WireBytes)
		levels = min(max(int(math.Round(float64(sched.NumPriorities)*u/all)), 1), sched.NumPriorities-1)
	}
	weight := sched.UnschedBytesWeight(unsched)
	switch rule {
	case CutoffsWire:
		weight = sched.UnschedWireWeight(unsched, payload, overhead)
	case CutoffsCount:
		weight = sched.CountWeight
	case CutoffsBalanced, "":
		return sched.ComputeCutoffsBalanced(&h, levels, max(wl.Max(), 1),
			sched.BalancedCutoffs{UnschedBytes: unsched, Payload: payload, Overhead: overhead, Load: load})
	}
	return sched.ComputeCutoffsBy(&h, levels, max(wl.Max(), 1), weight, skew)
}

// newSim makes the cluster for msgs, whose sizes wl gives.
func newSim(cfg Config, wl *workload.Workload, msgs []workload.Msg) (*sim, error) {
	mc := memnet.Config{Seed: int64(cfg.Seed), LinkBps: cfg.LinkBps, PropDelay: cfg.PropDelay,
		BufferBytes: cfg.BufferBytes, FrameOverhead: sched.WireOverhead, HostDelay: cfg.HostDelay + cfg.NICDelay, RecvDelay: cfg.RecvDelay, NICFIFO: cfg.NICFIFO,
		Fabric: memnet.Fabric{Racks: cfg.Racks, HostsPerRack: cfg.HostsPerRack, Cores: cfg.Cores,
			UplinkBps: cfg.UplinkBps, SwitchLatency: cfg.SwitchLatency, ECMP: cfg.ECMP}}
	if cfg.PropDelay == 0 {
		mc.PropDelay = -1 // memnet: negative is none
	}
	if cfg.Variant == HomaOnePrio || cfg.Variant == Basic {
		mc.FIFO = true
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, net: memnet.New(mc), byIP: make(map[[4]byte]int), payload: make([]byte, wl.Max()),
		scratch: make([]byte, wl.Max()), inflight: make(map[msgKey]started),
		msgs: msgs, deps: make(map[int32][]int32), startAt: make([]int64, len(msgs)), doneAt: make([]int64, len(msgs))}
	for i, m := range msgs {
		s.startAt[i], s.doneAt[i] = -1, -1
		if m.After >= 0 {
			s.deps[m.After] = append(s.deps[m.After], int32(i))
		}
	}
	for i := range cfg.Hosts() {
		mh := s.net.AddHost(hostIP(i))
		s.neigh.Add(netip.AddrFrom4(mh.IP()), mh.MAC())
		s.byIP[mh.IP()] = i
		s.hosts = append(s.hosts, &host{s: s, idx: i, mh: mh, buf: make([]byte, 2048), active: make(map[inKey]int)})
	}
	for i, h := range s.hosts {
		ec := engineConfig(cfg, wl, i, h.mh, s.net.Now)
		ec.Resolve = s.neigh.Resolve
		s.cutoffs, s.overcommit = ec.Cutoffs, ec.Grant.MaxOvercommit
		e, err := engine.New(ec, h)
		if err != nil {
			return nil, fmt.Errorf("host %d: %w", i, err)
		}
		h.e = e
		if h.srv, err = e.Bind(serverPort); err != nil {
			return nil, err
		}
		if h.cli, err = e.OpenClient(); err != nil {
			return nil, err
		}
		hooks := engine.PortHooks{RecvBuf: func(n int) ([]byte, bool) { return s.scratch[:n], true }}
		h.srv.SetHooks(hooks)
		h.cli.SetHooks(hooks)
		h.mh.SetReceive(func(f []byte) {
			if len(f) >= dataHeaders {
				if hm := f[wire.EthernetHeaderLen+wire.IPv4MinHeaderLen:]; wire.Common(hm).Type() == wire.TypeData {
					now := s.net.Now()
					if now > s.end/2 && now <= s.end {
						s.dataCarried += int64(len(f)) // DATA frame bytes delivered in the second half of the arrivals
					}
					h.noteData(f, hm, now)
				}
			}
			h.e.Receive(f)
			h.serve()
		})
	}
	return s, nil
}

// kick schedules Run at the endpoint's next deadline unless an earlier
// one is pending.
func (h *host) kick() {
	d := h.e.NextDeadline()
	if h.next != 0 && h.next <= d {
		return
	}
	h.next = d
	h.s.net.At(d, func() {
		if h.next == d {
			h.next = 0
		}
		h.e.Run()
		h.serve()
	})
}

// serve takes delivered requests (recording them, answering each with a
// byte) and responses, then schedules the next Run.
func (h *host) serve() {
	s := h.s
	now := s.net.Now()
	for {
		m, ok := h.srv.Receive()
		if !ok {
			break
		}
		src, known := s.byIP[m.Peer.IP.As4()]
		k := msgKey{src, m.ID ^ 1}
		st, ok := s.inflight[k]
		switch {
		case !known || !ok:
			s.fail("host %d: a request %v nobody sent, or delivered twice", h.idx, k)
		case len(m.Data) != st.size || st.dst != h.idx:
			s.fail("host %d: request %v of %d bytes for host %d; sent %d bytes to host %d", h.idx, k, len(m.Data), h.idx, st.size, st.dst)
		default:
			delete(s.inflight, k)
			s.delivered++
			s.doneAt[st.tid] = now
			for _, d := range s.deps[st.tid] {
				s.net.At(max(now, s.msgs[d].At), func() { s.send(d) })
			}
		}
		if err := h.srv.Reply(m, s.payload[:responseBytes]); err != nil {
			s.fail("host %d: Reply: %v", h.idx, err)
		}
	}
	for {
		m, ok := h.cli.Receive()
		if !ok {
			break
		}
		if m.Err != nil {
			s.failedRPCs++
			s.fail("host %d: RPC %d: %v", h.idx, m.ID, m.Err)
		} else {
			s.responses++
		}
	}
	h.kick()
}

func (s *sim) fail(format string, args ...any) {
	s.nerrs++
	if len(s.errs) < 10 {
		s.errs = append(s.errs, fmt.Sprintf(format, args...))
	}
}

// arrivals draws the run's messages: the AI mix's (aiMessages), or
// Config.Messages of a workload W1-W5: Poisson at the rate that loads
// every host's link to cfg.Load in wire bytes, uniformly random sources
// and destinations (another host).
func arrivals(cfg Config) ([]workload.Msg, error) {
	if cfg.Workload == workload.AI {
		return cfg.AI.Messages(cfg.cluster(), cfg.Messages)
	}
	wl, err := workload.LoadWorkload(cfg.Workload)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636c7573)) // "clus"
	n := cfg.Hosts()
	// Each host's downlink carries the requests to it and the one-byte
	// responses to its own: both count.
	perHost := cfg.Load * cfg.LinkBps / 8 / (wl.Mean(WireBytes) + WireBytes(1)) // messages/s into each host
	count := cfg.Messages
	if count == 0 {
		count = max(min(int(math.Ceil(perHost*float64(n)/1e9*float64(cfg.Duration))), cfg.MaxMessages), 1)
	}
	var out []workload.Msg
	for _, m := range wl.Messages(rng, n, count, perHost) {
		out = append(out, workload.Msg{Message: m, Kind: workload.KindRPC, Op: -1, After: -1})
	}
	return out, nil
}

// send starts message i now.
func (s *sim) send(i int32) {
	a := s.msgs[i]
	s.tried++
	h := s.hosts[a.Src]
	id, err := h.cli.Send(engine.Addr{IP: netip.AddrFrom4(s.hosts[a.Dst].mh.IP()), Port: serverPort}, s.payload[:a.Size])
	if err != nil {
		s.fail("host %d: Send: %v", a.Src, err)
		return
	}
	s.inflight[msgKey{a.Src, id}] = started{tid: i, size: a.Size, dst: a.Dst}
	s.startAt[i] = s.net.Now()
	s.offered++
	s.offeredBytes += int64(a.Size)
	if now := s.net.Now(); now > s.end/2 {
		s.offeredFrames += frameBytes(a.Size) + frameBytes(1)
	}
	h.kick()
}

// Progress is what a run reports while it goes.
type Progress func(simNs int64, delivered, offered int)

// Run simulates cfg and returns its result.
func Run(cfg Config, progress Progress) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if onNS3(cfg.Variant) {
		return runNS3(cfg)
	}
	arr, err := arrivals(cfg)
	if err != nil {
		return nil, err
	}
	var wl *workload.Workload // the sizes the hosts' priority cutoffs come from
	if cfg.Workload == workload.AI {
		wl = workload.SizesOf(cfg.Workload, arr)
	} else if wl, err = workload.LoadWorkload(cfg.Workload); err != nil {
		return nil, err
	}
	s, err := newSim(cfg, wl, arr)
	if err != nil {
		return nil, err
	}
	end := arr[len(arr)-1].At
	s.end = end
	if s.end == 0 {
		s.end = 1
	}
	next := 0
	var feed func()
	feed = func() { // arrivals scheduled a batch at a time, not all up front; a ring's later steps start on delivery
		for ; next < len(arr) && arr[next].At <= s.net.Now()+1_000_000; next++ {
			if i := int32(next); arr[i].After < 0 {
				s.net.At(arr[i].At, func() { s.send(i) })
			}
		}
		if next < len(arr) {
			s.net.At(s.net.Now()+500_000, feed)
		}
	}
	feed()
	start := time.Now()
	limit := end + 10*end + 1_000_000_000 // the offered period, then ten times it (or 1 s) to drain
	lastReport := time.Now()
	for s.net.Now() < limit {
		s.net.RunUntil(s.net.Now() + 1_000_000)
		if s.net.Now() > end && next == len(arr) && s.tried == len(arr) && len(s.inflight) == 0 && s.responses+s.failedRPCs >= s.offered {
			break
		}
		if progress != nil && time.Since(lastReport) > time.Second {
			progress(s.net.Now(), s.delivered, len(arr))
			lastReport = time.Now()
		}
	}
	wall := time.Since(start)
	return s.result(cfg, wl, end, wall), nil
}

// inKey names an incoming message at its receiver.
type inKey struct {
	ip [4]byte
	id uint64
}

// noteData counts DATA frame f (Homa header hm) toward the receiver's
// wasted bandwidth, as the Homa paper's simulator does: the link is
// expected busy whenever the host has a message begun and not finished,
// and what it received then is what it used. Only the measured window
// counts. A message is finished when its bytes have come once:
// retransmissions are not counted toward it (with BufferBytes set, a
// message whose original packet was dropped stays "begun" in this count,
// and the figure overstates the waste).
func (h *host) noteData(f, hm []byte, now int64) {
	d := wire.Data(hm)
	ip := wire.IPv4(f[wire.EthernetHeaderLen:]).Src()
	k := inKey{ip, wire.Common(hm).SenderID()}
	left, ok := h.active[k]
	if !ok {
		if len(h.active) == 0 {
			h.activeSince = now - txNs(len(f)+sched.WireOverhead, h.s.cfg.LinkBps) // busy from the frame's first bit
		}
		left = int(d.MessageLength())
	}
	if d.Retransmit() == 0 { // a retransmission's bytes came before, or come still (the network loses none by default)
		left -= len(hm) - wire.DataHeaderLen
	}
	lo, hi := window(h.s.end)
	if now > lo && now <= hi {
		h.activeBytes += int64(len(f) + sched.WireOverhead)
	}
	if left > 0 {
		h.active[k] = left
		return
	}
	delete(h.active, k)
	if len(h.active) == 0 {
		a, b := max(h.activeSince, lo), min(now, hi)
		if b > a {
			h.activeNs += b - a
		}
	}
}
