package engine

import (
	"encoding/binary"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// ICMP "destination unreachable / port unreachable", which kernel Homa
// sends for a packet to an unbound port and turns into ENOTCONN for the
// client's RPCs to that port (homa_err_handler_v4).
const (
	ipProtoICMP         = 1
	icmpHeaderLen       = 8
	icmpDestUnreachable = 3
	icmpPortUnreachable = 3
	// icmpQuoteLen: the offending IPv4 header plus the first 8 bytes of
	// its payload (Homa sport, dport, sequence).
	icmpQuoteLen = wire.IPv4MinHeaderLen + 8
)

// sendPortUnreachable answers f, a packet to an unbound port, with an
// ICMP port unreachable quoting its IPv4 header and first 8 Homa bytes.
func (e *Endpoint) sendPortUnreachable(f *wire.Frame, p *peer) {
	buf := e.startFrame()
	if buf == nil {
		return
	}
	icmp := buf[e.homaOff : e.homaOff+icmpHeaderLen+icmpQuoteLen]
	clear(icmp[:icmpHeaderLen])
	icmp[0], icmp[1] = icmpDestUnreachable, icmpPortUnreachable
	copy(icmp[icmpHeaderLen:], f.IPv4[:wire.IPv4MinHeaderLen])
	copy(icmp[icmpHeaderLen+wire.IPv4MinHeaderLen:], f.Homa[:8])
	binary.BigEndian.PutUint16(icmp[2:], ^wire.Checksum(icmp, 0))
	eth := e.ethernet(p, controlPriority)
	eth.Encode(buf)
	ip := wire.HomaIPv4Fields(e.cfg.IP, p.ip, controlPriority, len(icmp))
	ip.Protocol = ipProtoICMP
	e.ipID++
	ip.ID = e.ipID
	ip.NoChecksum = e.cfg.IPChecksumOffload
	ip.Encode(buf[e.ipOff:])
	e.m.ICMPPortUnreach++
	e.tx.Send(buf[:e.homaOff+len(icmp)], controlPriority)
}

// receiveICMP handles a non-Homa frame if it is an ICMP port unreachable
// about a Homa packet we sent: every client RPC to that address and port
// fails with ErrPortUnreachable. It reports whether the frame was ICMP.
func (e *Endpoint) receiveICMP(frame []byte) bool {
	off := wire.EthernetHeaderLen
	if wire.Ethernet(frame).Type() == wire.EtherTypeVLAN {
		off += wire.VLANTagLen
	}
	ip := wire.IPv4(frame[off:])
	if !ip.IsValid() || ip.Protocol() != ipProtoICMP {
		return false
	}
	icmp := ip.Payload()
	if len(icmp) < icmpHeaderLen+icmpQuoteLen || icmp[0] != icmpDestUnreachable || icmp[1] != icmpPortUnreachable {
		e.m.drop(DropBadICMP)
		return true
	}
	quoted := wire.IPv4(icmp[icmpHeaderLen:])
	if quoted.Protocol() != wire.IPProtoHoma || quoted.HeaderLen() < wire.IPv4MinHeaderLen ||
		len(quoted) < quoted.HeaderLen()+4 {
		e.m.drop(DropBadICMP)
		return true
	}
	dst := quoted.Dst()
	dport := binary.BigEndian.Uint16(quoted[quoted.HeaderLen()+2:])
	e.m.ICMPReceived++
	for r := e.first; r != nil; {
		next := r.next
		if r.client && r.peer.ip == dst && r.dport == dport {
			e.fail(r, ErrPortUnreachable)
		}
		r = next
	}
	return true
}
