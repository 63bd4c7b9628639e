package engine

import (
	"net/netip"
	"sync/atomic"

	"github.com/homa-dpdk/homa-dpdk/sched"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Shards: a host's port served by several lcores, each running an
// Endpoint of the same address (a shard) that owns a share of the RPCs.
//
// Which shard owns an RPC is written in its id: a shard of Count
// allocates the client ids whose (id>>1) % Count is its Index, and a
// server RPC belongs to the shard of its client's id (ShardOfID: the
// low bit, client or server, does not count). Every Homa packet names
// the RPC it is about in its common header, so any packet's owner is a
// function of its header (FrameShard), computed without a table: the
// receive side steers it there (a NIC by its flow rules where it can
// match the header's bytes, a host by a hand-off between its shards'
// loops where it cannot). Two hosts sharded alike never meet another
// shard's RPC: client shard i's RPCs are server shard i's.
//
// What is not one RPC's is settled here:
//   - an ack names another RPC than the packet that carries it (DATA's
//     piggybacked ack, an ACK's entries): a shard that is not its owner
//     hands it over (Shard.ForwardAck; the owner applies it with
//     Endpoint.ReceiveAck);
//   - CUTOFFS are the peer's, not an RPC's: every shard takes them
//     (FrameShard says all), each for its own copy of the peer;
//   - a frame that reaches a shard that does not own its RPC is dropped
//     (DropWrongShard) before it can start a server RPC there: steering
//     must not fail, and the count says if it does.
//
// What the shards share is given to each: the grant schedulers' view
// over all the port's incoming messages (Shard.Grants: SRPT and
// MaxIncoming over the port, sched.GrantShare) and the one link its pacers
// pace (Shard.Link, sched.LinkClock). The neighbour table is the host's.
//
// Homed server ports. A server port bound on one shard only (a worker's,
// whose session lives on that shard: the daemon's hub) takes its RPCs
// whatever their clients' ids: with Shard.Homes set, Bind claims the
// port for its shard in that table, shared by all (a port bound on one
// shard cannot be bound on another), and a packet from a client (an even
// sender id) to a claimed port belongs to the port's home (FrameShard,
// ServerShard); every other packet still goes by its id. The client's
// host needs to know nothing of it: the server's packets to the client
// carry the server's id, which names the client's own shard. Without
// Homes, a port is bound on every shard that serves it (an in-loop
// application on each), each taking the RPCs whose ids are its own.

// Shard says which shard of a sharded port an Endpoint is (Count 0 or 1:
// not sharded).
type Shard struct {
	Index, Count int
	// ForwardAck hands an ack from peer for client RPC clientID on
	// serverPort to shard owner, which applies it with ReceiveAck. It runs
	// on this shard's goroutine, inside an engine call, and must not call
	// back into this endpoint. Needed when Count > 1.
	ForwardAck func(owner int, peer netip.Addr, clientID uint64, serverPort uint16)
	// Grants is the port's grant view, one for all its shards (nil: this
	// shard grants as if alone: SRPT and MaxIncoming over its messages).
	Grants *sched.GrantShare
	// Link is the port's link clock, one for all its shards (nil: this
	// shard's pacer counts only its own packets).
	Link *sched.LinkClock
	// Homes is the port's table of homed server ports, one for all its
	// shards (nil: none; every server port is bound on each shard that
	// serves it, and its RPCs go by id).
	Homes *PortHomes
	// ICMP limits the port unreachables the port sends, one limiter for
	// all its shards (nil: this shard limits its own by
	// Config.ICMPRate, so a port of n shards sends up to n times as many).
	ICMP *ICMPLimiter
}

// PortHomes says which shard each homed server port is bound on (see
// "Homed server ports" above). Its entries are read by every shard's
// receive path and written by Bind and Shut, without a lock.
type PortHomes struct {
	home [clientPortMin]atomic.Uint32 // shard+1; 0: not claimed
}

// Of is the shard port is bound on, if it is claimed.
func (t *PortHomes) Of(port uint16) (int, bool) {
	if t == nil || port >= clientPortMin {
		return 0, false
	}
	h := t.home[port].Load()
	return int(h) - 1, h != 0
}

// claim binds port to shard, unless another shard holds it.
func (t *PortHomes) claim(port uint16, shard int) bool {
	return t.home[port].CompareAndSwap(0, uint32(shard)+1) || t.home[port].Load() == uint32(shard)+1
}

// release lets port go, if shard holds it.
func (t *PortHomes) release(port uint16, shard int) {
	t.home[port].CompareAndSwap(uint32(shard)+1, 0)
}

// ServerShard is the shard of count that owns the server RPC for a
// client's id on serverPort: the port's home, if homes claims it, else
// the shard of the id.
func ServerShard(clientID uint64, serverPort uint16, count int, homes *PortHomes) int {
	if count <= 1 {
		return 0
	}
	if s, ok := homes.Of(serverPort); ok {
		return s
	}
	return ShardOfID(clientID, count)
}

// packetShard is the owner of a packet with sender id id to port dport:
// a client's packet (even id) is for a server RPC here (ServerShard), a
// server's for a client RPC (its id).
func packetShard(id uint64, dport uint16, count int, homes *PortHomes) int {
	if homes != nil && wire.IsClientID(id) {
		return ServerShard(id, dport, count, homes)
	}
	return ShardOfID(id, count)
}

// ShardOfID is the shard of count that owns the RPC with id (a client's
// id or its server's: the same shard).
func ShardOfID(id uint64, count int) int {
	if count <= 1 {
		return 0
	}
	return int((id >> 1) % uint64(count))
}

// FrameShard is the shard of count that a received frame belongs to: its
// RPC's owner (by its id, or a homed port's home: homes, nil for none),
// or every shard (all) for CUTOFFS. ok is false for a frame that is not a
// Homa packet to steer by its header (ARP, ICMP, other traffic, a
// truncated header): the host handles those itself or gives them to any
// shard.
func FrameShard(l *wire.Link, count int, homes *PortHomes) (shard int, all, ok bool) {
	// Over IPv4 (the common case) the Homa header is read where it
	// starts, with no second validation: the owner's engine validates the
	// frame. IPv6 and anything short go the whole way.
	if p := l.Payload; l.Type == wire.EtherTypeIPv4 && len(p) >= wire.IPv4MinHeaderLen && p[0]>>4 == 4 {
		if hl := int(p[0]&0xf) * 4; hl >= wire.IPv4MinHeaderLen && len(p) >= hl+wire.CommonHeaderLen {
			c := wire.Common(p[hl:])
			if proto := wire.IPv4(p).Protocol(); proto == wire.IPProtoHoma || proto == wire.IPProtoTCP && c.IsHijacked() {
				if c.Type() == wire.TypeCutoffs {
					return 0, true, true
				}
				return packetShard(c.SenderID(), c.DstPort(), count, homes), false, true
			}
		}
	}
	var f wire.Frame
	if r := wire.ParseHomaIP(l, &f, false); r != wire.DropNone {
		return 0, false, false
	}
	if f.Type == wire.TypeCutoffs {
		return 0, true, true
	}
	return packetShard(f.Homa.SenderID(), f.Homa.DstPort(), count, homes), false, true
}

// firstShardID is the first client id at or after id that shard owns.
func firstShardID(id uint64, s Shard) uint64 {
	if s.Count <= 1 {
		return id
	}
	n := uint64(s.Count)
	k := id >> 1
	k = k - k%n + uint64(s.Index)
	if k == 0 {
		k = n // 0 means "no RPC" in an ack
	}
	return k << 1
}

// owns says whether this endpoint owns the RPC of a packet with sender
// id id to port dport.
func (e *Endpoint) owns(id uint64, dport uint16) bool {
	s := &e.cfg.Shard
	return s.Count <= 1 || packetShard(id, dport, s.Count, s.Homes) == s.Index
}

// ReceiveAck applies an ack another shard handed over (Shard.ForwardAck):
// the client at from has the response of the server RPC for clientID on
// serverPort.
func (e *Endpoint) ReceiveAck(from netip.Addr, clientID uint64, serverPort uint16) {
	if !e.batch {
		e.now = e.cfg.Clock()
	}
	if p := e.peerAt(from.As16()); p != nil {
		e.ackRPC(p, clientID, serverPort)
	}
}

// ICMPShard is the shard of count an ICMP or ICMPv6 port unreachable is
// for, from the packet it quotes (quoted: its IP header and what
// follows): the owner of the client RPC the quote names by its sender
// id, or every shard (all) when the quote holds only the ports (the 8
// bytes a router must quote), each failing its own RPCs of that port.
func ICMPShard(quotedHoma []byte, count int) (shard int, all bool) {
	if count <= 1 {
		return 0, false
	}
	if len(quotedHoma) >= wire.CommonHeaderLen {
		return ShardOfID(wire.Common(quotedHoma).SenderID(), count), false
	}
	return 0, true
}
