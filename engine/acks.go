package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// handleNeedAck: a server asks whether we have its response. If the RPC
// is gone (or complete) we answer with an ACK; while it still waits for
// response bytes we stay silent. A NEED_ACK does not count as hearing
// from the peer: it says nothing of the missing response, and our timer
// must go on to ask for it with RESEND.
func (e *Endpoint) handleNeedAck(f *wire.Frame) {
	if r := e.lookup(f); r != nil {
		return
	}
	c := f.Homa
	if p := e.peerFromFrame(f); p != nil {
		e.sendAck(p, c.DstPort(), c.SrcPort(), wire.LocalID(c.SenderID()))
	}
}

// handleAck frees the server RPCs an ACK names: its own sender_id, then
// each entry.
func (e *Endpoint) handleAck(f *wire.Frame) {
	a := wire.Ack(f.Homa)
	p := e.peerFromFrame(f)
	if p == nil {
		return
	}
	e.ackRPC(p, a.Common().SenderID(), a.Common().DstPort())
	for i := range int(a.NumAcks()) {
		ent := a.Entry(i)
		e.ackRPC(p, ent.ClientID(), ent.ServerPort())
	}
}

// ackRPC frees our server RPC for client id clientID from p on port
// serverPort, if it exists: the client has the response.
func (e *Endpoint) ackRPC(p *peer, clientID uint64, serverPort uint16) {
	if !wire.IsClientID(clientID) {
		return
	}
	if !e.owns(clientID, serverPort) {
		s := &e.cfg.Shard
		e.m.AcksForwarded++
		s.ForwardAck(ServerShard(clientID, serverPort, s.Count, s.Homes), p.ip, clientID, serverPort)
		return
	}
	r := e.rpcs.get(rpcKey{ip: p.addr, id: wire.ServerID(clientID)})
	if r == nil || r.port.num != serverPort {
		return
	}
	e.m.AcksReceived++
	e.end(r)
	p.rememberAcked(clientID)
}
