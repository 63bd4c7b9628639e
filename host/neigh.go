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
// updates entries in place and never frees them (engine.Neighbour says
// why).
//
// Resolution of an unknown address sends a request and retries it after
// a timeout, up to a number of tries; then the entry fails (the engine
// fails what waited) until it is asked for again after another timeout.
// A learned entry that ages out stays reachable while it is probed again
// (Linux's STALE and PROBE): frames keep going to the MAC it had, and
// only when the probes go unanswered does it fail. A reply updates the
// MAC in place. It belongs to one polling loop; times are ns.
type neighbourTable[K comparable] struct {
	entries map[K]*neighbour
	timeout int64 // ns between requests
	retries int   // requests before giving up
	aging   int64 // ns a learned entry is trusted without a probe
	// nextRetry is the earliest time an entry's request times out or a
	// learned entry ages (math.MaxInt64: none), so that Retries, called
	// every pass, scans the table only when one is due.
	nextRetry int64
	// onReady and onFailed tell the engine an entry became reachable or
	// failed (Endpoint.NeighbourReady, NeighbourFailed); nil: nobody.
	onReady, onFailed func(ip K)
	// maxEntries bounds the learned and resolving entries (static ones
	// aside): a stranger's packets from fresh addresses make the engine
	// resolve them, and the engine lets go of them (Forget) when it drops
	// the peer. 0: no bound.
	maxEntries int
	dynamic    int // entries that are not static
	// Counters.
	Requests, Failures, Expired uint64
	Full                        uint64 // resolutions refused: the table held maxEntries
	Forgotten                   uint64 // entries dropped when no endpoint held them any more
}

type neighbour struct {
	engine.Neighbour       // MAC and State, read by the engine
	static           bool  // from the config: never ages, never learned over
	probing          bool  // reachable, aged out, being asked again
	expires          int64 // reachable: trusted until; resolving or probing: next request due; unreachable: may ask again after
	tries            int   // requests sent for the current resolution or probe
}

func newNeighbourTable[K comparable](timeout, aging int64, retries int) *neighbourTable[K] {
	return &neighbourTable[K]{entries: map[K]*neighbour{}, timeout: timeout, aging: aging, retries: retries, nextRetry: math.MaxInt64}
}

// AddStatic adds an entry that never ages.
func (t *neighbourTable[K]) AddStatic(ip K, mac wire.MAC) {
	t.entries[ip] = &neighbour{Neighbour: engine.Neighbour{MAC: mac, State: engine.LinkReachable}, static: true}
}

// Learn records ip at mac (from an ARP packet concerning us); static
// entries are kept. An entry that becomes reachable is announced.
func (t *neighbourTable[K]) Learn(ip K, mac wire.MAC, now int64) {
	e := t.entries[ip]
	if e == nil {
		if t.full() {
			t.Full++
			return
		}
		e = &neighbour{}
		t.entries[ip] = e
		t.dynamic++
	}
	if e.static {
		return
	}
	was := e.State
	e.MAC, e.State, e.probing, e.tries = mac, engine.LinkReachable, false, 0
	e.expires = now + t.aging
	t.nextRetry = min(t.nextRetry, e.expires)
	if was != engine.LinkReachable && t.onReady != nil {
		t.onReady(ip)
	}
}

// Resolve returns ip's entry, creating it when unknown; request says
// whether the caller should send an ARP request now (a new entry, or a
// failed one whose hold-down has passed). It returns nil, counted, when
// a new entry would pass the table's bound.
func (t *neighbourTable[K]) Resolve(ip K, now int64) (n *engine.Neighbour, request bool) {
	e := t.entries[ip]
	switch {
	case e == nil && t.full():
		t.Full++
		return nil, false
	case e == nil:
		e = &neighbour{Neighbour: engine.Neighbour{State: engine.LinkResolving}}
		t.entries[ip] = e
		t.dynamic++
		return &e.Neighbour, t.ask(e, now)
	case e.State == engine.LinkUnreachable && now >= e.expires:
		e.State, e.tries = engine.LinkResolving, 0
		return &e.Neighbour, t.ask(e, now)
	}
	return &e.Neighbour, false
}

func (t *neighbourTable[K]) full() bool { return t.maxEntries > 0 && t.dynamic >= t.maxEntries }

// Forget drops ip's entry, unless it is static: no endpoint holds it any
// more (the engine dropped the peer), so it can go. A later Resolve makes
// a new one.
func (t *neighbourTable[K]) Forget(ip K) {
	if e := t.entries[ip]; e != nil && !e.static {
		delete(t.entries, ip)
		t.dynamic--
		t.Forgotten++
	}
}

func (t *neighbourTable[K]) ask(e *neighbour, now int64) bool {
	e.tries++
	e.expires = now + t.timeout
	t.nextRetry = min(t.nextRetry, e.expires)
	t.Requests++
	return true
}

// Retries returns, through f, the addresses whose request timed out or
// whose learned entry aged, and that should be asked (again) now; those
// that used up their tries fail, and are announced.
func (t *neighbourTable[K]) Retries(now int64, f func(ip K)) {
	if now < t.nextRetry {
		return
	}
	t.nextRetry = math.MaxInt64
	for ip, e := range t.entries {
		asking := e.State == engine.LinkResolving || e.probing
		if e.static || (!asking && e.State != engine.LinkReachable) {
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
