package host

import (
	"math"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// neighbourTable maps IPv4 next hops to MAC addresses: static entries from
// the config, and entries learned from ARP, which age out. Resolution of
// an unknown address sends a request, retries it after a timeout up to a
// number of tries, and then marks the address failed until it is asked
// for again after another timeout. It belongs to one polling loop; times
// are ns.
type neighbourTable struct {
	entries map[[4]byte]*neighbour
	timeout int64 // ns between requests
	retries int   // requests before giving up
	aging   int64 // ns a learned entry stays valid
	// nextRetry is the earliest time an incomplete entry's request times
	// out (math.MaxInt64: none), so that Retries, called every pass, scans
	// the table only when one is due.
	nextRetry int64
	// Counters.
	Requests, Failures, Expired uint64
}

type neighbourState uint8

// The zero state is incomplete, so that a new entry is never static.
const (
	neighIncomplete neighbourState = iota
	neighReachable
	neighFailed
	neighStatic
)

type neighbour struct {
	mac     wire.MAC
	state   neighbourState
	expires int64 // reachable: valid until; incomplete: next request due; failed: may retry after
	tries   int   // requests sent for the current resolution
}

func newNeighbourTable(timeout, aging int64, retries int) *neighbourTable {
	return &neighbourTable{entries: map[[4]byte]*neighbour{}, timeout: timeout, aging: aging, retries: retries, nextRetry: math.MaxInt64}
}

// AddStatic adds an entry that never ages.
func (t *neighbourTable) AddStatic(ip [4]byte, mac wire.MAC) {
	t.entries[ip] = &neighbour{mac: mac, state: neighStatic}
}

// Learn records ip at mac (from an ARP packet). Static entries are kept.
func (t *neighbourTable) Learn(ip [4]byte, mac wire.MAC, now int64) {
	e := t.entries[ip]
	if e == nil {
		e = &neighbour{}
		t.entries[ip] = e
	}
	if e.state == neighStatic {
		return
	}
	e.mac, e.state, e.expires, e.tries = mac, neighReachable, now+t.aging, 0
}

// Resolve returns the MAC of ip. When it is not known, ok is false and
// request says whether the caller should send an ARP request now.
func (t *neighbourTable) Resolve(ip [4]byte, now int64) (mac wire.MAC, ok, request bool) {
	e := t.entries[ip]
	switch {
	case e == nil:
		e = &neighbour{state: neighIncomplete}
		t.entries[ip] = e
		return wire.MAC{}, false, t.ask(e, now)
	case e.state == neighStatic:
		return e.mac, true, false
	case e.state == neighReachable && now < e.expires:
		return e.mac, true, false
	case e.state == neighReachable: // expired: resolve again
		t.Expired++
		e.state, e.tries = neighIncomplete, 0
		return wire.MAC{}, false, t.ask(e, now)
	case e.state == neighFailed && now >= e.expires:
		e.state, e.tries = neighIncomplete, 0
		return wire.MAC{}, false, t.ask(e, now)
	}
	return wire.MAC{}, false, false
}

func (t *neighbourTable) ask(e *neighbour, now int64) bool {
	e.tries++
	e.expires = now + t.timeout
	t.nextRetry = min(t.nextRetry, e.expires)
	t.Requests++
	return true
}

// Retries returns, through f, the addresses whose request timed out and
// should be asked again now; those that used up their tries become failed.
func (t *neighbourTable) Retries(now int64, f func(ip [4]byte)) {
	if now < t.nextRetry {
		return
	}
	t.nextRetry = math.MaxInt64
	for ip, e := range t.entries {
		if e.state != neighIncomplete {
			continue
		}
		if now < e.expires {
			t.nextRetry = min(t.nextRetry, e.expires)
			continue
		}
		if e.tries >= t.retries {
			e.state, e.expires = neighFailed, now+t.timeout
			t.Failures++
			continue
		}
		t.ask(e, now)
		f(ip)
	}
}

// Failed reports whether resolution of ip has given up (packets to it are
// dropped and counted until it is retried).
func (t *neighbourTable) Failed(ip [4]byte) bool {
	e := t.entries[ip]
	return e != nil && e.state == neighFailed
}
