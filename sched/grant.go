package sched

// GrantConfig holds the receiver's grant policy. Every size is in bytes.
type GrantConfig struct {
	// MaxIncoming bounds the granted-but-unreceived bytes over all
	// messages (kernel max_incoming, 400,000).
	MaxIncoming int

	// MaxOvercommit is how many messages are granted to at once (kernel
	// max_overcommit, 8).
	MaxOvercommit int

	// FIFOFraction is the share of granted bytes, per thousand, that goes
	// to the oldest message instead of the shortest (grant_fifo_fraction,
	// 50 = 5%). 0 disables FIFO grants.
	FIFOFraction int

	// FIFOIncrement is the size of one FIFO grant (fifo_grant_increment,
	// 50,000).
	FIFOIncrement int

	// Window, when not 0, is how many bytes past what a message has
	// received it may be granted (protocol.window); 0 is the dynamic
	// window, MaxIncoming/(active+1). Either way MaxIncoming bounds the
	// total.
	Window int

	// MaxSchedPrio is the highest priority used for scheduled bytes (3
	// with the kernel's default cutoffs; see Cutoffs.MaxSchedPrio).
	MaxSchedPrio int

	// Increment is the least a grant raises a message's offset by
	// (kernel grant_increment, 10,000 bytes; 1 or less: any raise):
	// smaller raises wait until they add up, unless they grant the
	// message's last bytes or change its priority. A GRANT then comes
	// every few DATA packets instead of after each batch of one or two,
	// and a message's granted-but-unreceived bytes range between its
	// window less Increment and its window. It is capped at half the
	// window, so a raise always fits.
	Increment int

	// ArrivalOrder grants to the messages in the order they arrived
	// instead of the shortest remaining first: no SRPT. It is the "basic"
	// receiver-driven baseline of the cluster simulation (perf cluster),
	// not a policy to run.
	ArrivalOrder bool
}

// DefaultGrantConfig returns the kernel's defaults.
func DefaultGrantConfig() GrantConfig {
	return GrantConfig{MaxIncoming: 400_000, MaxOvercommit: 8, FIFOFraction: 50,
		FIFOIncrement: 50_000, MaxSchedPrio: 3, Increment: 10_000}
}

// GrantMsg is the scheduler's view of one incoming message. The engine
// embeds or owns it; the scheduler keeps a pointer while it is added.
type GrantMsg struct {
	// Length is the message length in bytes. Set by the owner before Add;
	// never changed afterwards.
	Length int

	// Received counts message bytes received. Written by the owner,
	// followed by Update.
	Received int

	// Granted is the offset up to which the sender may send: the
	// unscheduled bytes (the DATA incoming field) at first, then raised by
	// Schedule. The owner may raise it (a larger incoming field arrived)
	// followed by Update.
	Granted int

	// Priority is the priority of the last grant. Written by Schedule.
	Priority int

	// Unsched is how many of the first bytes the sender sends without a
	// grant (at most Granted when added; 0 if none are told apart). Set
	// by the owner before Add. The unscheduled bytes not yet received
	// count towards MaxIncoming only up to MaxIncoming/2 over all
	// messages: they are the sender's claim, and requests that claim
	// them and never send them must not stop every grant.
	Unsched int

	// Owner lets the engine find its own state from a Grant. Set once by
	// the owner; never read by the scheduler.
	Owner any

	birth     uint64 // arrival order (for FIFO); scheduler-owned
	index     int    // position in GrantScheduler.msgs + 1; 0 = not added (or suspended)
	counted   int    // bytes of this message in outstanding; scheduler-owned
	countedU  int    // of those, unscheduled bytes (in outUnsched); scheduler-owned
	suspended bool   // Suspend: added, but out of msgs until Resume; scheduler-owned
}

// Remaining returns Length − Received, the SRPT key.
func (m *GrantMsg) Remaining() int { return m.Length - m.Received }

// Added reports whether m is added and not removed (suspended or not).
func (m *GrantMsg) Added() bool { return m.index != 0 || m.suspended }

// Suspended reports whether m is suspended (Suspend) until Resume.
func (m *GrantMsg) Suspended() bool { return m.suspended }

// Grant is one decision of Schedule: raise Msg's granted offset to Offset
// and send a GRANT at Priority.
type Grant struct {
	Msg      *GrantMsg
	Offset   int  // new granted offset, ≤ Msg.Length
	Priority int  // 0..MaxSchedPrio
	FIFO     bool // granted by the FIFO share rather than by SRPT
}

// GrantScheduler is the receiver's SRPT grant scheduler. It is owned by
// one goroutine (the engine's) and allocates nothing once its slices have
// grown to the number of messages in use.
type GrantScheduler struct {
	cfg         GrantConfig
	msgs        []*GrantMsg // by Remaining, then birth; nil where one was removed (holes)
	holes       int         // nil entries in msgs
	births      uint64      // counter for GrantMsg.birth
	outstanding int         // Σ max(0, Granted − Received), bytes
	outUnsched  int         // the part of outstanding below the messages' Unsched
	fifoCredit  int         // SRPT bytes × FIFOFraction not yet repaid, in 1/1000 bytes
	out         []Grant     // Schedule's result, reused
	share       *GrantShare // the other shards of the port (share.go); nil: none
	shard       int         // this scheduler's slot in share
	// The other shards' outstanding bytes, as of the last Schedule:
	// granted past their unscheduled bytes, and unscheduled.
	othersSched, othersUnsched int
}

// NewGrantScheduler returns a scheduler with room for capacity messages
// before any slice grows.
func NewGrantScheduler(cfg GrantConfig, capacity int) *GrantScheduler {
	if cfg.MaxOvercommit < 1 {
		cfg.MaxOvercommit = 1
	}
	return &GrantScheduler{cfg: cfg, msgs: make([]*GrantMsg, 0, capacity),
		out: make([]Grant, 0, cfg.MaxOvercommit+1)}
}

// Config returns the scheduler's configuration.
func (s *GrantScheduler) Config() GrantConfig { return s.cfg }

// Len returns the number of messages added.
func (s *GrantScheduler) Len() int { return len(s.msgs) - s.holes }

// Outstanding returns the granted-but-unreceived bytes over all messages.
func (s *GrantScheduler) Outstanding() int { return s.outstanding }

// incoming is the outstanding bytes that count towards MaxIncoming: all
// the granted ones, and the unscheduled ones up to MaxIncoming/2.
// With a GrantShare, the other shards' too.
// With a GrantShare, the other shards' too: the unscheduled ones up to
// MaxIncoming/2 over the port, not over each shard.
func (s *GrantScheduler) incoming() int {
	return s.outstanding - s.outUnsched + s.othersSched + min(s.outUnsched+s.othersUnsched, s.cfg.MaxIncoming/2)
}

// Add starts scheduling m. m.Length, m.Received and m.Granted must be set.
// Adding a message twice is a no-op.
func (s *GrantScheduler) Add(m *GrantMsg) {
	if m.Added() {
		return
	}
	s.births++
	m.birth = s.births
	s.insert(m)
}

// insert puts m into msgs at its place.
func (s *GrantScheduler) insert(m *GrantMsg) {
	s.msgs = append(s.msgs, m)
	m.index = len(s.msgs)
	s.recount(m)
	s.siftUp(m)
	if s.share != nil {
		s.publish() // the other shards see it before this shard's next Schedule
	}
}

// Suspend takes added message m out of the grants until Resume: it holds
// no place among the MaxOvercommit messages granted to, its
// granted-but-unreceived bytes (unscheduled ones too) no longer count
// towards MaxIncoming, and it is granted nothing, by SRPT or FIFO. The
// owner decides when: for a message whose sender does not send what it
// was granted, so that those bytes stop keeping grants from messages
// whose senders send. A suspended message leaves the sorted list, so
// however many are suspended, Schedule does not look at them; it keeps
// its age for the FIFO share. While the senders of suspended messages
// send what they hold, the bytes incoming may exceed MaxIncoming by as
// much.
func (s *GrantScheduler) Suspend(m *GrantMsg) {
	if m.index == 0 {
		return
	}
	s.take(m)
	m.suspended = true
}

// Resume puts suspended message m back among the messages granted to,
// at its place by bytes remaining.
func (s *GrantScheduler) Resume(m *GrantMsg) {
	if !m.suspended {
		return
	}
	m.suspended = false
	s.insert(m)
}

// Update re-sorts m and its outstanding bytes after the owner changed
// Received or Granted.
func (s *GrantScheduler) Update(m *GrantMsg) {
	if m.index == 0 {
		return
	}
	s.recount(m)
	s.siftUp(m)
	if s.share != nil {
		s.publishIncoming()
	}
}

// Remove stops scheduling m (it completed or was aborted). It leaves a
// hole where m was, and closes the holes once they are half the slice:
// removing a message costs O(1) amortised, however many are added (a
// flood of requests that never finish may add thousands, and end them
// one by one).
func (s *GrantScheduler) Remove(m *GrantMsg) {
	m.suspended = false // out of msgs already
	if m.index == 0 {
		return
	}
	s.take(m)
}

// take removes m from msgs and from the outstanding bytes.
func (s *GrantScheduler) take(m *GrantMsg) {
	s.outstanding -= m.counted
	s.outUnsched -= m.countedU
	m.counted, m.countedU = 0, 0
	s.msgs[m.index-1] = nil
	m.index = 0
	s.holes++
	for n := len(s.msgs); n > 0 && s.msgs[n-1] == nil; n-- {
		s.msgs = s.msgs[:n-1]
		s.holes--
	}
	if s.holes > 16 && 2*s.holes > len(s.msgs) {
		s.compact()
	}
	if s.share != nil {
		s.publish() // a message gone is no longer ahead of the other shards'
	}
}

// compact closes the holes in msgs, keeping the order.
func (s *GrantScheduler) compact() {
	j := 0
	for _, m := range s.msgs {
		if m != nil {
			s.msgs[j] = m
			m.index = j + 1
			j++
		}
	}
	clear(s.msgs[j:])
	s.msgs = s.msgs[:j]
	s.holes = 0
}

func (s *GrantScheduler) recount(m *GrantMsg) {
	c := m.Granted - m.Received
	if c < 0 {
		c = 0
	}
	s.outstanding += c - m.counted
	m.counted = c
	u := min(max(min(m.Unsched, m.Granted)-m.Received, 0), c)
	s.outUnsched += u - m.countedU
	m.countedU = u
}

// siftUp moves m towards the front while it sorts before its neighbour
// (Remaining only shrinks, so it never needs to move back); a hole it
// passes moves back.
func (s *GrantScheduler) siftUp(m *GrantMsg) {
	i := m.index - 1
	for i > 0 && (s.msgs[i-1] == nil || s.less(m, s.msgs[i-1])) {
		s.msgs[i] = s.msgs[i-1]
		if s.msgs[i] != nil {
			s.msgs[i].index = i + 1
		}
		i--
	}
	s.msgs[i] = m
	m.index = i + 1
}

func (s *GrantScheduler) less(a, b *GrantMsg) bool {
	if s.cfg.ArrivalOrder {
		return a.birth < b.birth
	}
	ra, rb := a.Remaining(), b.Remaining()
	return ra < rb || ra == rb && a.birth < b.birth
}

// Schedule decides the grants to send now and applies them (raising
// Granted and Priority). The result is valid until the next call.
func (s *GrantScheduler) Schedule() []Grant {
	s.out = s.out[:0]
	active, n := s.active()
	local := n // this shard's messages in the active set
	if s.share != nil {
		active, local, n = s.sharedActive()
	}
	if s.fifoDue() && !s.grantFIFO(local) {
		return s.out // FIFO grant pending: let room open up for it first
	}
	window := s.cfg.MaxIncoming / (n + 1)
	if s.cfg.Window > 0 {
		window = s.cfg.Window
	}
	rank, starved := 0, false
	for _, m := range s.msgs[:active] {
		if m == nil || m.Granted >= m.Length {
			continue
		}
		g := rank // the message's rank over the port
		if s.share != nil {
			g += s.ahead(m.Remaining())
		}
		prio := s.rankPriority(g, n)
		rank++
		target := min(m.Length, m.Received+window)
		inc := min(target-m.Granted, s.cfg.MaxIncoming-s.incoming())
		if inc <= 0 {
			if s.incoming() >= s.cfg.MaxIncoming {
				starved = true
				break
			}
			continue
		}
		if inc < min(s.cfg.Increment, window/2) && m.Granted+inc < m.Length && prio == m.Priority {
			continue // too small a raise to be worth a GRANT yet
		}
		m.Granted += inc
		m.Priority = prio
		s.recount(m)
		s.fifoCredit += inc * s.cfg.FIFOFraction
		s.out = append(s.out, Grant{Msg: m, Offset: m.Granted, Priority: prio})
	}
	if s.share != nil {
		s.share.slots[s.shard].starved.Store(starved)
		s.publish()
	}
	return s.out
}

// sharedActive is active over the port's shards: the prefix of msgs
// holding this shard's messages among the port's MaxOvercommit shortest
// grantable ones, how many of them are this shard's, and how many
// grantable messages the active set holds over the port. It publishes
// this shard's candidates first and reads the others' incoming bytes.
func (s *GrantScheduler) sharedActive() (prefix, local, n int) {
	s.publish()
	var cands int
	s.othersSched, s.othersUnsched, cands = s.others()
	for i, m := range s.msgs {
		if m == nil || m.Granted >= m.Length {
			continue
		}
		if local+s.ahead(m.Remaining()) >= s.cfg.MaxOvercommit {
			return prefix, local, s.cfg.MaxOvercommit // it and every longer one rank past a full set
		}
		local++
		prefix = i + 1
	}
	return prefix, local, min(cands+local, s.cfg.MaxOvercommit)
}

// active returns the prefix of msgs holding the first MaxOvercommit
// grantable messages, and how many grantable messages it holds.
func (s *GrantScheduler) active() (prefix, n int) {
	for i, m := range s.msgs {
		if m != nil && m.Granted < m.Length {
			n++
			if n == s.cfg.MaxOvercommit {
				return i + 1, n
			}
		}
	}
	return len(s.msgs), n
}

// rankPriority maps rank r among n active messages to a priority: the
// highest scheduled level for rank 0, using the lowest levels when fewer
// than MaxSchedPrio+1 messages are active.
func (s *GrantScheduler) rankPriority(r, n int) int {
	p := s.cfg.MaxSchedPrio - r
	if extra := s.cfg.MaxSchedPrio + 1 - n; extra > 0 {
		p -= extra
	}
	return max(p, 0)
}

func (s *GrantScheduler) fifoDue() bool {
	return s.cfg.FIFOFraction > 0 &&
		s.fifoCredit >= s.cfg.FIFOIncrement*(1000-s.cfg.FIFOFraction)
}

// grantFIFO grants FIFOIncrement to the oldest grantable message outside
// the active set. It reports false if the grant is due but does not fit
// under MaxIncoming yet.
func (s *GrantScheduler) grantFIFO(nActive int) bool {
	var oldest *GrantMsg
	rank := 0
	for _, m := range s.msgs {
		if m == nil || m.Granted >= m.Length {
			continue
		}
		rank++
		if rank > nActive && (oldest == nil || m.birth < oldest.birth) {
			oldest = m
		}
	}
	if oldest == nil {
		s.fifoCredit = 0 // everyone is being granted: nobody starves
		return true
	}
	inc := min(s.cfg.FIFOIncrement, oldest.Length-oldest.Granted)
	if s.incoming()+inc > s.cfg.MaxIncoming {
		return false
	}
	oldest.Granted += inc
	// The oldest message is the one in danger of starving: grant it at
	// the top scheduled level so its bytes are not stuck behind SRPT
	// traffic in the switch.
	oldest.Priority = s.cfg.MaxSchedPrio
	s.recount(oldest)
	s.fifoCredit -= s.cfg.FIFOIncrement * (1000 - s.cfg.FIFOFraction)
	s.out = append(s.out, Grant{Msg: oldest, Offset: oldest.Granted, Priority: oldest.Priority, FIFO: true})
	return true
}

// SetMaxSchedPrio changes the highest scheduled priority (after the
// unscheduled cutoffs changed).
func (s *GrantScheduler) SetMaxSchedPrio(p int) { s.cfg.MaxSchedPrio = p }
