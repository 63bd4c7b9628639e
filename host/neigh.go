package host

import (
	"math"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// neighbourTable maps next hops (IPv4 addresses, K [4]byte; IPv6 ones,
// K [16]byte) to MAC addresses — static entries from the config, and
// entries learned from ARP or neighbour discovery — and is the only place a
// peer's MAC lives: each entry is an engine.Neighbour that the engine
// holds a pointer to and reads for every frame it sends, so the table
// updates an entry the engine holds in place and frees it only once the
// engine lets go of it (Forget; engine.Neighbour says why).
//
// Resolution of an unknown address sends a request and retries it after
// a timeout, up to a number of tries; then the entry fails (the engine
// fails what waited) until it is asked for again after another timeout.
// A held entry that ages out stays reachable while it is probed again
// (Linux's STALE and PROBE): frames keep going to the MAC it had, and
// only when the probes go unanswered does it fail. A reply updates the
// MAC in place.
//
// What a stranger can make it hold: an answer (an ARP reply, a neighbour
// advertisement) only updates an entry that exists — one for an address
// the engine asked for, or a request's — and is discarded, counted in
// Unsolicited, otherwise (RFC 4861 §7.2.5; Linux's arp_accept 0). An ARP
// request or neighbour solicitation aimed at us updates its sender's
// entry, or makes an unheld one (as Linux makes a STALE entry), so that
// a peer about to send to us is reachable at once; unheld entries are
// never probed, are collected an aging period after they were last heard
// (Collected), and the oldest makes room (Evicted) when a new entry would
// pass maxEntries. So the table never stays full of strangers' entries:
// only what the engine holds — at most its peers — can refuse a new
// entry (Full). It belongs to one polling loop; times are ns.
type neighbourTable[K comparable] struct {
	entries map[K]*neighbour[K]
	timeout int64 // ns between requests
	retries int   // requests before giving up
	aging   int64 // ns a learned entry is trusted without a probe; an unheld one's lifetime
	// nextRetry is the earliest time a held entry's request times out or
	// a held learned entry ages (math.MaxInt64: none), so that Retries,
	// called every pass, scans the table only when one is due.
	nextRetry int64
	// onReady and onFailed tell the engine an entry became reachable or
	// failed (Endpoint.NeighbourReady, NeighbourFailed); nil: nobody.
	onReady, onFailed func(ip K)
	// maxEntries bounds the learned and resolving entries (static ones
	// aside): a stranger's packets from fresh addresses make the engine
	// resolve them, and the engine lets go of them (Forget) when it drops
	// the peer; requests from fresh addresses make unheld entries, which
	// are evicted first. 0: no bound.
	maxEntries int
	dynamic    int // entries that are not static
	// unheld lists the entries the engine holds no pointer to (made by a
	// request or solicitation aimed at us, never resolved), in the order
	// they were last heard, which is the order of their expires: the
	// first is the first collected, and the first evicted.
	unheld neighbourList[K]
	spare  *neighbour[K] // an entry collected or evicted, reused by the next new one
	NeighbourCounters
}

// NeighbourCounters count what a neighbour table did.
type NeighbourCounters struct {
	Requests  uint64 // ARP requests and neighbour solicitations sent
	Failures  uint64 // resolutions (or probes) that went unanswered
	Expired   uint64 // held entries that aged and were probed
	Full      uint64 // new entries refused: the table held maxEntries, none of them unheld
	Forgotten uint64 // entries dropped when no endpoint held them any more
	// Unsolicited counts answers (ARP replies, neighbour advertisements)
	// for an address with no entry: discarded.
	Unsolicited uint64
	// NoOverride counts advertisements without the Override flag whose
	// MAC differed from a valid entry's: the MAC was kept (RFC 4861
	// §7.2.5), a reachable entry only made stale.
	NoOverride uint64
	Evicted    uint64 // unheld entries dropped to make room for a new one
	Collected  uint64 // unheld entries dropped an aging period after last heard
}

// add returns the sum of c and d (two tables' counters).
func (c NeighbourCounters) add(d NeighbourCounters) NeighbourCounters {
	return NeighbourCounters{
		Requests: c.Requests + d.Requests, Failures: c.Failures + d.Failures, Expired: c.Expired + d.Expired,
		Full: c.Full + d.Full, Forgotten: c.Forgotten + d.Forgotten, Unsolicited: c.Unsolicited + d.Unsolicited,
		NoOverride: c.NoOverride + d.NoOverride, Evicted: c.Evicted + d.Evicted, Collected: c.Collected + d.Collected,
	}
}

type neighbour[K comparable] struct {
	engine.Neighbour       // MAC and State, read by the engine
	ip               K     // the entry's key
	static           bool  // from the config: never ages, never learned over
	held             bool  // Resolve returned it: the engine may hold it until Forget
	probing          bool  // reachable, aged out, being asked again
	expires          int64 // held: reachable: trusted until; resolving or probing: next request due; unreachable: may ask again after. Unheld: collected at
	tries            int   // requests sent for the current resolution or probe

	prev, next *neighbour[K] // on the unheld list
}

// neighbourList is a list of entries, linked through them.
type neighbourList[K comparable] struct{ first, last *neighbour[K] }

func (l *neighbourList[K]) push(e *neighbour[K]) {
	e.prev, e.next = l.last, nil
	if l.last != nil {
		l.last.next = e
	} else {
		l.first = e
	}
	l.last = e
}

func (l *neighbourList[K]) remove(e *neighbour[K]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.first = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.last = e.prev
	}
	e.prev, e.next = nil, nil
}

func newNeighbourTable[K comparable](timeout, aging int64, retries int) *neighbourTable[K] {
	return &neighbourTable[K]{entries: map[K]*neighbour[K]{}, timeout: timeout, aging: aging, retries: retries, nextRetry: math.MaxInt64}
}

// AddStatic adds an entry that never ages.
func (t *neighbourTable[K]) AddStatic(ip K, mac wire.MAC) {
	t.entries[ip] = &neighbour[K]{Neighbour: engine.Neighbour{MAC: mac, State: engine.LinkReachable}, ip: ip, static: true}
}

// Learn records an answer (an ARP reply) saying ip is at mac: an entry
// that exists becomes reachable at mac and is announced if it was not;
// for an address with no entry it returns false, counted in Unsolicited.
// Static entries are kept.
func (t *neighbourTable[K]) Learn(ip K, mac wire.MAC, now int64) bool {
	e := t.entries[ip]
	if e == nil {
		t.Unsolicited++
		return false
	}
	t.set(e, mac, true, now)
	return true
}

// Heard records that ip, at mac, sent a request or solicitation aimed at
// us: its entry is updated as by Learn, or made unheld (reachable, not
// announced: nobody waits for it) so that the engine finds it should
// ip's Homa packets follow. False when the table is full of held entries
// (counted in Full).
func (t *neighbourTable[K]) Heard(ip K, mac wire.MAC, now int64) bool {
	if e := t.entries[ip]; e != nil {
		t.set(e, mac, true, now)
		return true
	}
	e := t.add(ip)
	if e == nil {
		return false
	}
	e.MAC, e.State, e.expires = mac, engine.LinkReachable, now+t.aging
	t.unheld.push(e)
	return true
}

// Advert records a neighbour advertisement saying ip is at mac, with its
// Solicited and Override flags, as RFC 4861 §7.2.5 does: discarded
// (false, counted in Unsolicited) without an entry; an entry not valid
// (resolving, failed) takes mac, reachable when solicited, stale (probed
// at once) otherwise; a valid entry whose MAC differs keeps it without
// Override (counted in NoOverride; a reachable entry goes stale), and
// takes it with; a solicited advertisement makes a valid entry reachable.
func (t *neighbourTable[K]) Advert(ip K, mac wire.MAC, solicited, override bool, now int64) bool {
	e := t.entries[ip]
	switch {
	case e == nil:
		t.Unsolicited++
		return false
	case e.static:
	case e.State != engine.LinkReachable:
		t.set(e, mac, solicited, now)
	case mac != e.MAC && !override:
		t.NoOverride++
		if e.held && !e.probing {
			t.stale(e, now)
		}
	case solicited || mac != e.MAC:
		t.set(e, mac, solicited, now)
	}
	return true
}

// set makes e reachable at mac: trusted for an aging period when fresh,
// stale otherwise (a held entry is probed at once); announced if it was
// not reachable. Static entries are kept.
func (t *neighbourTable[K]) set(e *neighbour[K], mac wire.MAC, fresh bool, now int64) {
	if e.static {
		return
	}
	was := e.State
	e.MAC, e.State, e.probing, e.tries = mac, engine.LinkReachable, false, 0
	switch {
	case fresh && e.held:
		e.expires = now + t.aging
		t.nextRetry = min(t.nextRetry, e.expires)
	case fresh: // heard again: collected an aging period from now
		e.expires = now + t.aging
		t.unheld.remove(e)
		t.unheld.push(e)
	case e.held:
		t.stale(e, now)
	}
	if was != engine.LinkReachable && t.onReady != nil {
		t.onReady(e.ip)
	}
}

// stale makes held entry e age now: the next Retries probes it, frames
// still going to its MAC.
func (t *neighbourTable[K]) stale(e *neighbour[K], now int64) {
	e.expires = now
	t.nextRetry = min(t.nextRetry, now)
}

// Resolve returns ip's entry, creating it when unknown, and holds it
// (the engine keeps the pointer until Forget); request says whether the
// caller should send an ARP request now (a new entry, or a failed one
// whose hold-down has passed). It returns nil, counted, when a new entry
// would pass the table's bound and no unheld entry can make room.
func (t *neighbourTable[K]) Resolve(ip K, now int64) (n *engine.Neighbour, request bool) {
	e := t.entries[ip]
	switch {
	case e == nil:
		if e = t.add(ip); e == nil {
			return nil, false
		}
		e.held, e.State = true, engine.LinkResolving
		return &e.Neighbour, t.ask(e, now)
	case !e.static && !e.held: // heard from: trusted until its expiry, then probed
		t.unheld.remove(e)
		e.held = true
		t.nextRetry = min(t.nextRetry, e.expires)
	case e.State == engine.LinkUnreachable && now >= e.expires:
		e.State, e.tries = engine.LinkResolving, 0
		return &e.Neighbour, t.ask(e, now)
	}
	return &e.Neighbour, false
}

// add makes an empty dynamic entry for ip, evicting the oldest unheld
// entry when the table is full; nil, counted in Full, when none is.
func (t *neighbourTable[K]) add(ip K) *neighbour[K] {
	if t.maxEntries > 0 && t.dynamic >= t.maxEntries {
		old := t.unheld.first
		if old == nil {
			t.Full++
			return nil
		}
		t.drop(old)
		t.Evicted++
	}
	e := t.spare
	if e == nil {
		e = &neighbour[K]{}
	} else {
		t.spare, *e = nil, neighbour[K]{}
	}
	e.ip = ip
	t.entries[ip] = e
	t.dynamic++
	return e
}

// drop frees unheld entry e: nobody holds it, so it is kept for reuse.
func (t *neighbourTable[K]) drop(e *neighbour[K]) {
	t.unheld.remove(e)
	delete(t.entries, e.ip)
	t.dynamic--
	t.spare = e
}

// Forget drops ip's entry, unless it is static: no endpoint holds it any
// more (the engine dropped the peer), so it can go. A later Resolve makes
// a new one.
func (t *neighbourTable[K]) Forget(ip K) {
	e := t.entries[ip]
	if e == nil || e.static {
		return
	}
	if !e.held {
		t.unheld.remove(e)
	}
	delete(t.entries, ip)
	t.dynamic--
	t.Forgotten++
}

func (t *neighbourTable[K]) ask(e *neighbour[K], now int64) bool {
	e.tries++
	e.expires = now + t.timeout
	t.nextRetry = min(t.nextRetry, e.expires)
	t.Requests++
	return true
}

// Retries collects the unheld entries an aging period old, then returns,
// through f, the addresses of held entries whose request timed out or
// that aged, and that should be asked (again) now; those that used up
// their tries fail, and are announced. Unheld entries are never asked.
func (t *neighbourTable[K]) Retries(now int64, f func(ip K)) {
	for e := t.unheld.first; e != nil && now >= e.expires; e = t.unheld.first {
		t.drop(e)
		t.Collected++
	}
	if now < t.nextRetry {
		return
	}
	t.nextRetry = math.MaxInt64
	for ip, e := range t.entries {
		asking := e.State == engine.LinkResolving || e.probing
		if !e.held || (!asking && e.State != engine.LinkReachable) {
			continue
		}
		if now < e.expires {
			t.nextRetry = min(t.nextRetry, e.expires)
			continue
		}
		if !asking { // a learned entry aged: probe it, still reachable
			t.Expired++
			e.probing, e.tries = true, 0
		} else if e.tries >= t.retries {
			e.State, e.probing, e.expires = engine.LinkUnreachable, false, now+t.timeout
			t.Failures++
			if t.onFailed != nil {
				t.onFailed(ip)
			}
			continue
		}
		t.ask(e, now)
		f(ip)
	}
}
