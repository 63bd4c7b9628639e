package engine

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// hostileHeapBound is the most the process heap may grow while the
// hostile mix runs: the server's staging pool (16 MiB), its peers (16,384
// of under 1 KB), its server RPCs (8,192, each with a slot table), the
// client's messages in flight and memnet's frames, with room to spare.
const hostileHeapBound = 64 << 20

// hostileMix is a well-behaved client and a hostile host, both talking
// to one server endpoint on memnet.
type hostileMix struct {
	t     *testing.T
	net   *memnet.Network
	neigh StaticNeighbours
	c, s  *mnHost
	cs    []*mnHost    // the client's shards (c is the first); one unless sharded
	ss    []*mnHost    // the server's shards (s is the first); one unless sharded
	h     *memnet.Host // the hostile host: frames it builds itself
	rng   *rand.Rand

	// The client's RPCs: issued and done so far, the ones in flight by
	// id with their serial.
	issued, done, total int
	inFlight            map[uint64]uint64
	failed              []error

	spoofed uint32 // spoofed sources used so far
	freshID uint64 // next fresh id of the hostile host's own requests
	gapOff  int    // next offset of the gap pattern
}

// hostileGapID is the client id of the hostile host's gap pattern.
const hostileGapID = 1 << 62

// hostileSizes are the request sizes the client draws from: single
// packets, a few packets, past the unscheduled bytes, and long.
var hostileSizes = []int{64, 1000, 3000, 20_000, 60_000, 150_000}

// newHostileMix is the mix with a server of testShards shards
// (HOMA_TEST_SHARDS, 1 unless set), the endpoint whose bounds the mix
// holds to. The client stays one endpoint: sharded, its RPCs take longer
// through the server's transmit queue, which the RESEND storm floods (the
// mix's endpoints are unpaced), the storm lasts longer, and memnet's
// queued frames (44 MB at the server's NIC, against 7 MB) take the
// process heap past hostileHeapBound: the bound would measure memnet,
// not the engine.
func newHostileMix(t *testing.T, total int) *hostileMix {
	return newHostileMixOf(t, total, 1, testShards(t))
}

// newShardedHostileMix is newHostileMix with a server of shards shards
// (Config.Shard) on one memnet host: every frame steered to its owner,
// acks handed over, a grant view and link clock between them; the client
// is one endpoint.
func newShardedHostileMix(t *testing.T, total, shards int) *hostileMix {
	return newHostileMixOf(t, total, 1, shards)
}

// newHostileMixOf is the mix with a client of clientShards shards and a
// server of serverShards (newMNShards; newMNHost for one).
func newHostileMixOf(t *testing.T, total, clientShards, serverShards int) *hostileMix {
	x := &hostileMix{t: t, net: memnet.New(memnet.Config{Seed: 5}), rng: rand.New(rand.NewPCG(5, 6)),
		total: total, inFlight: make(map[uint64]uint64), freshID: 2}
	mk := func(last byte, shards int) []*mnHost {
		ip := [4]byte{10, 0, 5, last}
		if shards <= 1 {
			return []*mnHost{newMNHost(t, x.net, ip, &x.neigh, uint64(last)<<40)}
		}
		return newMNShards(t, x.net, ip, &x.neigh, uint64(last)<<40, shards)
	}
	x.cs = mk(1, clientShards)
	x.ss = mk(2, serverShards)
	x.c, x.s = x.cs[0], x.ss[0]
	x.h = x.net.AddHost([4]byte{10, 0, 5, 3})
	x.neigh.Add(netip.AddrFrom4(x.h.IP()), x.h.MAC())
	return x
}

// hostilePatterns holds a pattern per size, made once.
var hostilePatterns = map[int][]byte{}

// hostileRequest is the client's request number serial: its size from
// the serial, its bytes a pattern of the size with the serial in its
// first and last 8 bytes; the response is the request's bytes reversed.
func hostileRequest(serial uint64) []byte {
	n := hostileSizes[serial%uint64(len(hostileSizes))]
	p := hostilePatterns[n]
	if p == nil {
		p = pattern(uint64(n), n)
		hostilePatterns[n] = p
	}
	b := append([]byte(nil), p...)
	binary.LittleEndian.PutUint64(b, serial)
	binary.LittleEndian.PutUint64(b[n-8:], serial)
	return b
}

// reversedOf reports whether a is b reversed.
func reversedOf(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		if x != b[len(b)-1-i] {
			return false
		}
	}
	return true
}

// issue keeps 16 of the client's RPCs in flight, from its shards in
// turn.
func (x *hostileMix) issue() {
	for len(x.inFlight) < 16 && x.issued < x.total {
		serial := uint64(x.issued)
		id, err := x.cs[x.issued%len(x.cs)].cli.Send(Addr{IP: netip.AddrFrom4(x.s.e.cfg.IP), Port: 99}, hostileRequest(serial))
		if err != nil {
			x.t.Fatal(err)
		}
		x.inFlight[id] = serial
		x.issued++
	}
}

// serve answers the server's requests, checking each byte for byte, and
// takes the client's results.
func (x *hostileMix) serve() {
	for _, s := range x.ss {
		for {
			m, ok := s.srv.Receive()
			if !ok {
				break
			}
			serial := binary.LittleEndian.Uint64(m.Data)
			if want := hostileRequest(serial); !bytes.Equal(m.Data, want) {
				x.t.Fatalf("request %d: %d bytes differ from the %d sent", serial, len(m.Data), len(want))
			}
			s.srv.Reply(m, reversed(m.Data))
		}
	}
	for _, c := range x.cs {
		x.results(c)
	}
}

// results takes the results of client shard c's RPCs.
func (x *hostileMix) results(c *mnHost) {
	for {
		m, ok := c.cli.Receive()
		if !ok {
			break
		}
		serial, known := x.inFlight[m.ID]
		if !known {
			x.t.Fatalf("result for unknown RPC %d", m.ID)
		}
		delete(x.inFlight, m.ID)
		if m.Err != nil {
			x.failed = append(x.failed, m.Err)
			continue
		}
		if !reversedOf(m.Data, hostileRequest(serial)) {
			x.t.Fatalf("response %d: bytes differ", serial)
		}
		x.done++
	}
}

// frame builds a Homa frame from src to the server with the given Homa
// header and payload bytes.
func (x *hostileMix) frame(src [4]byte, homa []byte) []byte {
	b := make([]byte, frameHomaOffset+len(homa))
	eth := wire.EthernetFields{Dst: x.s.mh.MAC(), Src: x.h.MAC(), Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	ip := wire.HomaIPv4Fields(src, x.s.e.cfg.IP, 6, len(homa))
	ip.Encode(b[frameIPOffset:])
	copy(b[frameHomaOffset:], homa)
	return b
}

// data returns a DATA header and payload for client id from src.
func (x *hostileMix) data(id uint64, length, offset int, payload []byte) []byte {
	h := make([]byte, wire.DataHeaderLen+len(payload))
	f := wire.DataFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: id},
		MessageLength: uint32(length), Incoming: uint32(length), CutoffVersion: 1, Offset: uint32(offset)}
	f.Encode(h)
	copy(h[wire.DataHeaderLen:], payload)
	return h
}

// resend returns a RESEND header for id from port sport.
func resendHeader(sport, dport uint16, id uint64, offset, length uint32) []byte {
	h := make([]byte, wire.ResendHeaderLen)
	f := wire.ResendFields{Common: wire.CommonFields{SrcPort: sport, DstPort: dport, SenderID: id},
		Offset: offset, Length: length, Priority: 7}
	f.Encode(h)
	return h
}

// spoof returns a new source address nobody has.
func (x *hostileMix) spoof() [4]byte {
	x.spoofed++
	i := x.spoofed
	return [4]byte{172, 16 + byte(i>>16), byte(i >> 8), byte(i)}
}

// attack sends one millisecond's worth of hostile frames to the server:
// fresh ids claiming a megabyte from the hostile host's own address and
// from spoofed ones, one-byte DATA at every other offset of one message,
// RESENDs and CUTOFFS for unknown RPCs from spoofed sources, and a RESEND
// storm for every response the server is sending the real client,
// spoofing the client's address. The fresh ids and the gap pattern come
// in 20 ms bursts, 20 ms apart, so that the gap pattern's message also
// falls silent and draws the server's RESENDs.
func (x *hostileMix) attack() {
	own := x.h.IP()
	if x.net.Now()/20_000_000%2 == 0 {
		x.burst(own)
	}
	for range 60 {
		x.h.Send(x.frame(x.spoof(), resendHeader(0x8000, 99, 2, 0, 1000)))
		c := wire.CutoffsFields{Common: wire.CommonFields{SrcPort: 0x8000, DstPort: 99, SenderID: 2}, Version: 9}
		h := make([]byte, wire.CutoffsHeaderLen)
		c.Encode(h)
		x.h.Send(x.frame(x.spoof(), h))
	}
	for _, s := range x.ss {
		for r := s.e.first; r != nil; r = r.next {
			if !r.client && r.state == stateOutgoing && r.peer.v4 == x.c.e.cfg.IP {
				for range 10 {
					x.h.Send(x.frame(r.peer.v4, resendHeader(r.dport, 99, r.id^1, 0, wire.ResendAll)))
				}
			}
		}
	}
}

// burst sends one millisecond's worth of fresh ids and gap pattern.
func (x *hostileMix) burst(own [4]byte) {
	for range 80 {
		x.freshID += 2
		x.h.Send(x.frame(own, x.data(x.freshID, 1_000_000, x.rng.IntN(28)*1424, make([]byte, 16))))
	}
	for range 240 {
		x.h.Send(x.frame(x.spoof(), x.data(2, 1_000_000, 0, make([]byte, 16))))
	}
	for range 80 {
		x.h.Send(x.frame(own, x.data(hostileGapID, 1_000_000, x.gapOff, []byte{1})))
		x.gapOff = (x.gapOff + 2) % 80_000
	}
}

// run drives the mix in 1 ms steps until the client's RPCs are done,
// sampling the heap, and returns its largest growth.
func (x *hostileMix) run(limitNs int64) int64 {
	base := heapInUse()
	var peak int64
	x.issue()
	x.attack() // the gap pattern's message is the first request of the hostile host
	for step := 0; x.done+len(x.failed) < x.total; step++ {
		if x.net.Now() > limitNs {
			x.t.Fatalf("%d of %d RPCs done after %d ms", x.done, x.total, x.net.Now()/1e6)
		}
		x.net.RunUntil(x.net.Now() + 1_000_000)
		x.serve()
		for _, c := range x.cs {
			c.e.Run()
		}
		for _, s := range x.ss {
			s.e.Run()
		}
		x.serve()
		x.issue()
		x.attack()
		if step%50 == 0 {
			for i, s := range x.ss {
				if checkErr := endpointConsistent(s.e); checkErr != nil {
					x.t.Fatalf("server shard %d at %d ms: %v", i, x.net.Now()/1e6, checkErr)
				}
			}
			peak = max(peak, int64(heapInUse())-int64(base))
		}
	}
	return max(peak, int64(heapInUse())-int64(base))
}

// TestHostile_mixWhileClientCompletes: one hostile host floods a server
// with fresh ids claiming a megabyte (from its own address and spoofed
// ones), a gap pattern, RESENDs and CUTOFFS from spoofed sources, and
// RESEND storms for the responses the server sends a real client, which
// meanwhile completes 10,000 RPCs (1,000 with -short) with the server,
// byte for byte. The process heap stays under hostileHeapBound, each of
// the server's bounds holds, and each refusal shows in its counter. It
// takes about 15 s of CPU on the project's 2-vCPU machines (1.5 s with
// -short).
func TestHostile_mixWhileClientCompletes(t *testing.T) {
	total := 10_000
	if testing.Short() {
		total = 1_000
	}
	x := newHostileMix(t, total)
	peak := x.run(120_000_000_000)
	// With HOMA_TEST_SHARDS=n the server is n shards: each holds the
	// bounds, the heap may hold n times as much, and the counters are
	// summed over the shards.
	var m Metrics
	var restarts, clientWrong uint64
	for _, c := range x.cs {
		restarts += c.e.Metrics().RPCRestarts
		clientWrong += c.e.Metrics().Drops[DropWrongShard]
	}
	for _, s := range x.ss {
		sm := s.e.Metrics()
		for c, v := range sm.Drops {
			m.Drops[c] += v
		}
		m.RequestsEvicted += sm.RequestsEvicted
		m.PeersEvicted += sm.PeersEvicted
		m.ResendsLimited += sm.ResendsLimited
		m.ResendsDeferred += sm.ResendsDeferred
	}
	for i, s := range x.ss {
		e := s.e
		t.Logf("server shard %d of %d: %d peers, %d server RPCs, %d B staged, %d B heap",
			i, len(x.ss), e.NumPeers(), e.NumServerRPCs(), e.StagedBytes(), e.RecvHeapBytes())
	}
	t.Logf("%d RPCs in %d ms simulated; heap peak +%.1f MB; "+
		"too_many_gaps %d, peer_rpc_limit %d, server_rpc_limit %d, requests_evicted %d, staging_full %d, past_staging %d, "+
		"peers_evicted %d, peer_table_full %d, resends_limited %d, resends_deferred %d, wrong_shard %d; client restarts %d",
		x.done, x.net.Now()/1e6, float64(peak)/1e6,
		m.Drops[DropTooManyGaps], m.Drops[DropPeerRPCLimit], m.Drops[DropServerRPCLimit], m.RequestsEvicted,
		m.Drops[DropStagingFull], m.Drops[DropPastStaging], m.PeersEvicted, m.Drops[DropPeerTableFull],
		m.ResendsLimited, m.ResendsDeferred, m.Drops[DropWrongShard]+clientWrong, restarts)
	if len(x.failed) != 0 {
		t.Fatalf("%d of the client's RPCs failed, the first with %v", len(x.failed), x.failed[0])
	}
	if bound := int64(len(x.ss)) * hostileHeapBound; peak > bound {
		t.Fatalf("heap grew by %d bytes, bound %d", peak, bound)
	}
	for i, s := range x.ss {
		e, cfg := s.e, s.e.cfg
		if e.NumPeers() > cfg.MaxPeers || e.NumServerRPCs() > cfg.MaxServerRPCs ||
			e.StagedBytes() > cfg.MaxStagingBytes || e.RecvHeapBytes() > cfg.MaxRecvHeapBytes {
			t.Fatalf("server shard %d: a bound did not hold", i)
		}
	}
	if n := m.Drops[DropWrongShard] + clientWrong; n != 0 {
		t.Errorf("%d frames reached a shard that does not own them", n)
	}
	for name, v := range map[string]uint64{
		"drops_too_many_gaps": m.Drops[DropTooManyGaps], "drops_peer_rpc_limit": m.Drops[DropPeerRPCLimit],
		"requests_evicted": m.RequestsEvicted, "peers_evicted": m.PeersEvicted,
		"resends_limited": m.ResendsLimited, "resends_deferred": m.ResendsDeferred,
	} {
		if v == 0 {
			t.Errorf("%s is 0: its bound was never reached", name)
		}
	}
}

// TestHostile_mixOnTwoShards is the hostile mix against a server of two
// shards: the hostile frames are steered by the ids they carry, so both
// shards take floods; the client's RPCs all complete byte for byte, each
// shard keeps every bound (a port of n shards holds up to n times each),
// and the refusals show in the shards' counters together.
func TestHostile_mixOnTwoShards(t *testing.T) {
	total := 4000
	if testing.Short() {
		total = 500
	}
	x := newShardedHostileMix(t, total, 2)
	peak := x.run(120_000_000_000)
	if len(x.failed) != 0 {
		t.Fatalf("%d of the client's RPCs failed, the first with %v", len(x.failed), x.failed[0])
	}
	if peak > 2*hostileHeapBound {
		t.Fatalf("heap grew by %d bytes, bound %d for two shards", peak, 2*hostileHeapBound)
	}
	sum := map[string]uint64{}
	for i, s := range x.ss {
		e, cfg, m := s.e, s.e.cfg, s.e.Metrics()
		if e.NumPeers() > cfg.MaxPeers || e.NumServerRPCs() > cfg.MaxServerRPCs ||
			e.StagedBytes() > cfg.MaxStagingBytes || e.RecvHeapBytes() > cfg.MaxRecvHeapBytes {
			t.Fatalf("shard %d: a bound did not hold", i)
		}
		sum["drops_too_many_gaps"] += m.Drops[DropTooManyGaps]
		sum["drops_peer_rpc_limit"] += m.Drops[DropPeerRPCLimit]
		sum["requests_evicted"] += m.RequestsEvicted
		sum["peers_evicted"] += m.PeersEvicted
		sum["resends_deferred"] += m.ResendsDeferred
		sum["wrong_shard"] += m.Drops[DropWrongShard]
		sum["requests"] += m.PacketsRcvd[0]
	}
	for _, name := range []string{"drops_too_many_gaps", "drops_peer_rpc_limit", "requests_evicted", "peers_evicted", "resends_deferred"} {
		if sum[name] == 0 {
			t.Errorf("%s is 0 over both shards: its bound was never reached", name)
		}
	}
	if sum["wrong_shard"] != 0 {
		t.Errorf("%d frames reached a shard that does not own them", sum["wrong_shard"])
	}
	for i, s := range x.ss {
		if s.e.Metrics().PacketsRcvd[0] == 0 {
			t.Errorf("shard %d received no DATA: the mix did not reach it", i)
		}
	}
	t.Logf("%d RPCs in %d ms simulated, heap peak +%.1f MB, %v", x.done, x.net.Now()/1e6, float64(peak)/1e6, sum)
}
