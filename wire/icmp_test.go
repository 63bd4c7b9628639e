package wire

import "testing"

// An echo request with id 0x1234, seq 1 and 4 bytes of data; its checksum
// computed by hand: ~(0x0800+0x1234+0x0001+0x6162+0x6364) = ~0xdefb = 0x2104.
var icmpEchoVector = []byte{8, 0, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, 'a', 'b', 'c', 'd'}

func TestICMP_echoRequestToReply(t *testing.T) {
	m := ICMP(append([]byte{}, icmpEchoVector...))
	if !m.IsValid() || m.Type() != ICMPEchoRequest || m.Code() != 0 || m.ID() != 0x1234 || m.Seq() != 1 {
		t.Fatalf("decoded type %d id %#x seq %d valid %v", m.Type(), m.ID(), m.Seq(), m.IsValid())
	}
	m.SetType(ICMPEchoReply)
	m.UpdateChecksum()
	if !m.IsValid() || m[2] != 0x29 || m[3] != 0x04 { // ~0xd6fb
		t.Errorf("reply checksum % x", m[2:4])
	}
	m[9] ^= 1
	if m.IsValid() {
		t.Error("a corrupted message passed the checksum")
	}
	if ICMP(icmpEchoVector[:7]).IsValid() {
		t.Error("a short message passed")
	}
}

func TestICMP_portUnreachableQuotesTheDatagram(t *testing.T) {
	frame := homaFrame(t, sampleHoma(TypeData))
	m := ICMP(make([]byte, ICMPHeaderLen+ICMPErrorQuoteLen))
	m[0], m[1] = ICMPDestUnreachable, ICMPPortUnreachable
	copy(m[ICMPHeaderLen:], frame[EthernetHeaderLen:])
	m.UpdateChecksum()
	q := m.Quoted()
	if !m.IsValid() || m.Type() != 3 || m.Code() != 3 || len(q) != ICMPErrorQuoteLen ||
		q.Protocol() != IPProtoHoma || q.Dst() != testIP2 || Common(q[q.HeaderLen():]).DstPort() != 99 {
		t.Fatalf("message % x", []byte(m))
	}
}
