package host

import (
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The daemon's IPv4 host duties besides Homa: answer ARP for its address
// and ICMP echo (so that ping and arping from a Linux host work), and learn
// neighbours from the ARP traffic it sees. Each answer is built in place,
// in the frame that asked: the loop sends back the same mbuf. What the
// table keeps of strangers' ARP is bounded and ages out (neighbourTable).

// hostAddr is one port's own addresses.
type hostAddr struct {
	ip  [4]byte
	ip6 [16]byte // zero: no IPv6 address
	mac wire.MAC
}

// stackVerdict says what to do with a non-Homa frame.
type stackVerdict uint8

const (
	stackDrop        stackVerdict = iota // not for us, or malformed: free it (counted by cause)
	stackReply                           // rewritten in place into an answer: send it
	stackLearn                           // an ARP reply for us: learned, free it
	stackICMPv6Error                     // an ICMPv6 error: for the engine (Endpoint.ReceiveICMPv6), then free it
)

// StackCounters count what the host stack did, by cause.
type StackCounters struct {
	ARPRequests, ARPReplies, ARPLearned uint64
	EchoRequests                        uint64 // ICMP and ICMPv6
	NeighborSolicits, NeighborAdverts   uint64 // IPv6 neighbour discovery for us
	NotForUs, Malformed, Unsupported    uint64
}

// handleARP processes an ARP packet (the frame's payload after an Ethernet
// header of ethLen bytes) aimed at our address: a reply updates its
// sender's entry if there is one (neighbourTable.Learn), a request updates
// or makes one (Heard) and is turned into the reply.
func handleARP(frame []byte, ethLen int, me hostAddr, n *neighbourTable[[4]byte], now int64, c *StackCounters) stackVerdict {
	a := wire.ARP(frame[ethLen:])
	if !a.IsValid() {
		c.Malformed++
		return stackDrop
	}
	if me.ip == [4]byte{} { // an IPv6-only port has no IPv4 address to answer for
		c.NotForUs++
		return stackDrop
	}
	if a.TargetIP() != me.ip {
		c.NotForUs++
		return stackDrop
	}
	src := a.SenderIP()
	switch a.Op() {
	case wire.ARPReply: // an answer: for an entry we have, or discarded (the table counts it)
		c.ARPReplies++
		if src != [4]byte{} && n.Learn(src, a.SenderMAC(), now) {
			c.ARPLearned++
		}
		return stackLearn
	case wire.ARPRequest: // its sender is about to send to us: updated, or an unheld entry
		c.ARPRequests++
		if src != [4]byte{} && n.Heard(src, a.SenderMAC(), now) {
			c.ARPLearned++
		}
		reply := wire.ARPFields{Op: wire.ARPReply, SenderMAC: me.mac, SenderIP: me.ip, TargetMAC: a.SenderMAC(), TargetIP: a.SenderIP()}
		reply.Encode(a)
		e := wire.Ethernet(frame)
		e.SetDst(reply.TargetMAC)
		e.SetSrc(me.mac)
		return stackReply
	}
	c.Unsupported++
	return stackDrop
}

// handleICMP turns an echo request to our address (ip is the frame's IPv4
// header) into the echo reply, in place.
func handleICMP(frame []byte, ip wire.IPv4, me hostAddr, c *StackCounters) stackVerdict {
	if ip.Dst() != me.ip {
		c.NotForUs++
		return stackDrop
	}
	m := wire.ICMP(ip.Payload())
	if !m.IsValid() {
		c.Malformed++
		return stackDrop
	}
	if m.Type() != wire.ICMPEchoRequest || m.Code() != 0 {
		c.Unsupported++
		return stackDrop
	}
	c.EchoRequests++
	m.SetType(wire.ICMPEchoReply)
	m.UpdateChecksum()
	src := ip.Src()
	ip.SetSrc(me.ip)
	ip.SetDst(src)
	ip.SetTTL(wire.DefaultTTL)
	ip.UpdateChecksum()
	e := wire.Ethernet(frame)
	e.SetDst(e.Src())
	e.SetSrc(me.mac)
	return stackReply
}

// arpRequest writes a broadcast ARP request for target into b (at least
// 46 bytes) and returns its length; with tagged, in an 802.1Q tag with TCI
// tci.
func arpRequest(b []byte, me hostAddr, target [4]byte, tagged bool, tci uint16) int {
	eth := wire.EthernetFields{Dst: wire.BroadcastMAC, Src: me.mac, Type: wire.EtherTypeARP, Tagged: tagged, TCI: tci}
	n := eth.Encode(b)
	req := wire.ARPFields{Op: wire.ARPRequest, SenderMAC: me.mac, SenderIP: me.ip, TargetIP: target}
	return n + req.Encode(b[n:])
}
