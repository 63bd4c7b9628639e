package engine

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// rpcTable holds the live RPCs by rpcKey in one open-addressed table
// (linear probing, at most half full, deletion by backward shift) whose
// slots hold the key inline: an id and the address as two words, zero
// for client RPCs (their ids are even, server ids odd, so the two never
// meet). A lookup per packet hashes the words with a multiply (two for an
// IPv6 address) and compares them in place. Go's maps cost a small RPC a quarter of its
// time in this table (a 16-byte key hashed through memhash; put, get and
// delete each a call into the runtime). The hash is seeded at random per
// table and mixes by full 128-bit products (as wyhash does), so a client
// choosing its RPC ids cannot aim them at one run of slots.
type rpcTable struct {
	slots      []rpcSlot // a power of two of them
	mask       uint64    // len(slots) - 1
	n          int       // occupied slots
	last       uint64    // the slot find last found a key in (masked when read)
	s0, s1, s2 uint64    // the hash's seed
}

// rpcSlot is one slot of an rpcTable; r nil: empty.
type rpcSlot struct {
	id   uint64
	a, b uint64 // the address's bytes 0..7 and 8..15, little-endian; zero for a client RPC
	r    *rpc
}

// rpcTableMin is the slots a table starts with.
const rpcTableMin = 64

func newRPCTable() rpcTable {
	t := rpcTable{s0: rand.Uint64(), s1: rand.Uint64(), s2: rand.Uint64()}
	t.resize(rpcTableMin)
	return t
}

func (t *rpcTable) resize(n int) {
	old := t.slots
	t.slots, t.mask, t.n = make([]rpcSlot, n), uint64(n-1), 0
	for i := range old {
		if s := &old[i]; s.r != nil {
			t.insert(s.id, s.a, s.b, s.r)
		}
	}
}

// mix folds the 128-bit product of a and b.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// home is the slot a key's probe starts at. The a word is zero for
// client RPCs and IPv4 peers: one multiply for them, two for IPv6.
func (t *rpcTable) home(id, a, b uint64) uint64 {
	h := mix(id^t.s0, b^t.s1)
	if a != 0 {
		h = mix(h, a^t.s2)
	}
	return h & t.mask
}

// words returns k's address as a slot holds it.
func (k *rpcKey) words() (a, b uint64) {
	if wire.IsClientID(k.id) {
		return 0, 0
	}
	return binary.LittleEndian.Uint64(k.ip[:8]), binary.LittleEndian.Uint64(k.ip[8:])
}

// v4Words is the b word of an IPv4-mapped address (its a is zero).
func v4Words(ip [4]byte) uint64 {
	return 0xffff<<16 | uint64(binary.LittleEndian.Uint32(ip[:]))<<32
}

// find returns the RPC under the key, or nil. It looks first in the
// slot it last found one in: the DATA of a long message, or its GRANTs,
// come one after another for the same RPC, and then no hashing is done.
// (A slot's content is the table's own, so the hint needs no care when
// RPCs move or go.)
func (t *rpcTable) find(id, a, b uint64) *rpc {
	if s := &t.slots[t.last&t.mask]; s.id == id && s.b == b && s.a == a && s.r != nil {
		return s.r
	}
	for i := t.home(id, a, b); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.r == nil {
			return nil
		}
		if s.id == id && s.b == b && s.a == a {
			t.last = i
			return s.r
		}
	}
}

// insert puts r in the first free slot from its home (the key is not in
// the table).
func (t *rpcTable) insert(id, a, b uint64, r *rpc) {
	i := t.home(id, a, b)
	for t.slots[i].r != nil {
		i = (i + 1) & t.mask
	}
	t.slots[i] = rpcSlot{id: id, a: a, b: b, r: r}
	t.n++
}

// getServer4 is get for the server RPC id of IPv4 peer ip.
func (t *rpcTable) getServer4(id uint64, ip [4]byte) *rpc { return t.find(id, 0, v4Words(ip)) }

func (t *rpcTable) get(k rpcKey) *rpc {
	a, b := k.words()
	return t.find(k.id, a, b)
}

// put adds r under k, or replaces the RPC there.
func (t *rpcTable) put(k rpcKey, r *rpc) {
	a, b := k.words()
	for i := t.home(k.id, a, b); t.slots[i].r != nil; i = (i + 1) & t.mask {
		if s := &t.slots[i]; s.id == k.id && s.b == b && s.a == a {
			s.r = r
			return
		}
	}
	if 2*(t.n+1) > len(t.slots) {
		t.resize(2 * len(t.slots))
	}
	t.insert(k.id, a, b, r)
}

// del removes k's RPC, moving back the slots after it that probed past
// its slot, so a lookup stops at no hole before its key.
func (t *rpcTable) del(k rpcKey) {
	a, b := k.words()
	i := t.home(k.id, a, b)
	for {
		s := &t.slots[i]
		if s.r == nil {
			return
		}
		if s.id == k.id && s.b == b && s.a == a {
			break
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.slots[j].r != nil; j = (j + 1) & t.mask {
		s := &t.slots[j]
		if h := t.home(s.id, s.a, s.b); (j-h)&t.mask >= (j-i)&t.mask {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = rpcSlot{}
	t.n--
}

func (t *rpcTable) len() int { return t.n }
