package host

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

func TestMain(m *testing.M) { dpdktest.Main(m) }

// setApp makes f the host's only in-loop application.
func (h *Host) setApp(f func(int64)) { h.apps = []App{AppFunc(f)} }

var ringSeq int

// ringHosts makes the two hosts of a ring pair (10.0.0.1 and 10.0.0.2),
// resolving each other by ARP, and checks at the end that no mbuf leaked.
func ringHosts(t *testing.T, txQueues int, faults float64) (a, b *Host) {
	t.Helper()
	return ringHostsCapture(t, txQueues, faults, nil, false)
}

// ringHostsCapture is ringHosts with both hosts' traffic captured.
func ringHostsCapture(t *testing.T, txQueues int, faults float64, capture *dpdk.Capture, pcp bool) (a, b *Host) {
	t.Helper()
	return pairHosts(t, PairConfig{TxQueues: txQueues, Faults: faults, Capture: capture, PCP: pcp})
}

// memifHosts makes the two hosts of a memif pair in this process.
func memifHosts(t *testing.T, txQueues int) (a, b *Host) {
	t.Helper()
	return pairHosts(t, PairConfig{TxQueues: txQueues, MemifSocket: filepath.Join(t.TempDir(), "memif.sock")})
}

// pairHosts makes a host pair from c (its name, pool, clock and ARP
// timeout filled in here) and checks at the end that no mbuf leaked.
func pairHosts(t testing.TB, c PairConfig) (a, b *Host) {
	t.Helper()
	dpdktest.Need(t)
	ringSeq++
	pool := dpdktest.Pool(t, fmt.Sprintf("hl%d", ringSeq), 8192, wire.BufferRoom(max(c.MTU, 1500)))
	start := time.Now()
	c.Name, c.Pool, c.ARP = fmt.Sprintf("hl%d", ringSeq), pool, 10*time.Millisecond
	c.Clock = func() int64 { return int64(time.Since(start)) + 1e9 }
	rp, err := NewPair(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rp.Drain()
		rp.Close()
	})
	return rp.Hosts[0], rp.Hosts[1]
}

// echoServer answers every request on port 99 with its own bytes.
func echoServer(t *testing.T, l *Host) {
	srv, err := l.ep.Bind(99)
	if err != nil {
		t.Fatal(err)
	}
	l.setApp(func(int64) {
		for {
			m, ok := srv.Receive()
			if !ok {
				return
			}
			if err := srv.Reply(m, m.Data); err != nil {
				t.Errorf("reply: %v", err)
			}
		}
	})
}

func runRPCs(t *testing.T, a, b *Host, sizes []int) {
	t.Helper()
	echoServer(t, b)
	cl, err := a.ep.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	dst := engine.Addr{IP: netip.AddrFrom4(b.me.ip), Port: 99}
	rng := rand.New(rand.NewPCG(7, 7))
	sent := map[uint64][]byte{}
	next, done := 0, 0
	a.setApp(func(int64) {
		// Sends before ARP has resolved the server wait in the engine.
		for next < len(sizes) && len(sent) < 8 {
			msg := make([]byte, sizes[next])
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			id, err := cl.Send(dst, msg)
			if err != nil {
				t.Fatalf("send %d: %v", next, err)
			}
			sent[id] = msg
			next++
		}
		for {
			m, ok := cl.Receive()
			if !ok {
				return
			}
			if m.Err != nil {
				t.Fatalf("RPC %d: %v", m.ID, m.Err)
			}
			if !bytes.Equal(m.Data, sent[m.ID]) {
				t.Fatalf("RPC %d: response of %d bytes differs from the request of %d", m.ID, len(m.Data), len(sent[m.ID]))
			}
			delete(sent, m.ID)
			done++
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for done < len(sizes) && time.Now().Before(deadline) && !t.Failed() {
		a.Pass()
		b.Pass()
	}
	if done != len(sizes) {
		t.Fatalf("%d of %d RPCs completed", done, len(sizes))
	}
}

// Jumbo frames: with MTU 9000 on the ring ports (which have no set-MTU
// operation: SetupPort gives it to configure) and mbufs sized for it, every full DATA
// packet carries 8,924 message bytes, and RPCs of 1 B to 1 MB arrive
// byte-exact.
func TestHostLoop_jumboFrames(t *testing.T) {
	jumboRPCs(t, PairConfig{TxQueues: 8, MTU: 9000})
}

// The same on a memif pair: ethdev refuses MTU 9000 on net_memif, which
// carries the frames all the same (SetupPort configures it at ethdev's
// default, the engine keeps to 9000), each in one descriptor of the
// bsize MemifDevargs gives.
func TestHostLoop_jumboFramesOverMemif(t *testing.T) {
	jumboRPCs(t, PairConfig{TxQueues: 2, MTU: 9000, MemifSocket: filepath.Join(t.TempDir(), "memif.sock")})
}

// jumboRPCs runs RPCs of 1 B to 1 MB on a pair at MTU 9000: byte-exact,
// every full DATA packet with 8,924 bytes.
func jumboRPCs(t *testing.T, c PairConfig) {
	t.Helper()
	a, b := pairHosts(t, c)
	sizes := []int{1, 8924, 8925, 40_000, 100_000, 1_000_000}
	runRPCs(t, a, b, sizes)
	total := 0
	for _, s := range sizes {
		total += (s + 8923) / 8924 // DATA packets of each request (and of its echo)
	}
	if sent := a.ep.Metrics().PacketsSent[0]; sent != uint64(total) { // DATA
		t.Errorf("client sent %d DATA packets, want %d of up to 8,924 bytes", sent, total)
	}
}

func TestHostLoop_rpcsOverRingPairWithARP(t *testing.T) {
	a, b := ringHosts(t, 8, 0)
	sizes := []int{1, 100, 1424, 1425, 10_000, 40_000, 40_001, 100_000, 500_000, 1_000_000}
	runRPCs(t, a, b, sizes)
	if a.stack.ARPReplies != 1 || b.stack.ARPRequests != 1 {
		t.Errorf("ARP: a saw %d replies, b %d requests; want 1 each", a.stack.ARPReplies, b.stack.ARPRequests)
	}
	m := a.ep.Metrics()
	var data uint64
	m.Each(func(name string, v uint64) {
		if name == "packets_sent_DATA" {
			data = v
		}
	})
	if data == 0 {
		t.Error("no DATA counted as sent")
	}
	// Priorities went out on the queues the map assigns: control packets
	// (priority 7) on queue 0, scheduled DATA on the lowest ones.
	if st := a.sched.Stats(0); st.Sent == 0 {
		t.Errorf("queue 0 (priority 7) sent nothing: %+v", st)
	}
	low := uint64(0)
	for q := 4; q < 8; q++ {
		low += a.sched.Stats(q).Sent
	}
	if low == 0 {
		t.Error("no packet went out on the queues of the scheduled priorities")
	}
}

func TestHostLoop_pingAnswered(t *testing.T) {
	a, b := ringHosts(t, 1, 0)
	// a's loop sends an echo request it builds by hand to b.
	sendEcho(t, a, b, make([]*dpdk.Mbuf, 1))
	a.Pass()
	b.Pass() // answers
	got := make([]*dpdk.Mbuf, 4)
	var k int
	for range 100 {
		if k = a.port.RxBurst(0, got); k > 0 {
			break
		}
	}
	if k != 1 {
		t.Fatalf("received %d frames, want the echo reply; b: stack %+v drops %v; a sched q0 %+v", k, b.stack, b.drops, a.sched.Stats(0))
	}
	f := got[0].Data()
	ip := wire.IPv4(f[14:])
	if m := wire.ICMP(ip.Payload()); ip.Src() != b.me.ip || m.Type() != wire.ICMPEchoReply || !m.IsValid() {
		t.Errorf("reply from %v type %d", ip.Src(), m.Type())
	}
	dpdk.FreeBulk(got[:k])
	if b.stack.EchoRequests != 1 {
		t.Errorf("b counted %d echo requests", b.stack.EchoRequests)
	}
}

// echoPayload is the ICMP echo request sendEcho sends (its checksum is
// filled in the frame).
var echoPayload = [...]byte{wire.ICMPEchoRequest, 0, 0, 0, 0, 1, 0, 1, 'x'}

// sendEcho queues on from's highest-priority TX queue an ICMP echo
// request to `to`, built by hand in an mbuf allocated into buf (one slot;
// nothing allocated in Go).
func sendEcho(t *testing.T, from, to *Host, buf []*dpdk.Mbuf) {
	if err := from.tx.pool.AllocBulk(buf); err != nil {
		t.Fatal(err)
	}
	d := buf[0].Append(14 + 20 + len(echoPayload))
	eth := wire.EthernetFields{Dst: to.me.mac, Src: from.me.mac, Type: wire.EtherTypeIPv4}
	n := eth.Encode(d)
	ipf := wire.IPv4Fields{TotalLength: uint16(20 + len(echoPayload)), TTL: 64, Protocol: wire.IPProtoICMP, Src: from.me.ip, Dst: to.me.ip}
	n += ipf.Encode(d[n:])
	copy(d[n:], echoPayload[:])
	wire.ICMP(d[n:]).UpdateChecksum()
	from.tx.enqueue(buf[0])
}

func TestHostLoop_passAllocatesNothing(t *testing.T) {
	a, b := ringHosts(t, 8, 0)
	runRPCs(t, a, b, []int{100}) // ARP resolved, server bound, loops warm
	a.apps, b.apps = nil, nil
	if allocs := testing.AllocsPerRun(1000, func() { a.Pass(); b.Pass() }); allocs != 0 {
		t.Errorf("an idle pass of both hosts allocates %.1f times, want 0", allocs)
	}
}

// A send to an on-link address that never answers ARP waits in the
// engine while the table asks, then fails with ErrPeerUnknown when the
// table gives up; a send to the peer that does answer goes through.
func TestHost_sendWaitsForARPAndFailsWhenUnanswered(t *testing.T) {
	a, b := ringHosts(t, 2, 0)
	echoServer(t, b)
	cl, err := a.ep.OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	silent, err := cl.Send(engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 77}), Port: 99}, []byte("anyone?"))
	if err != nil {
		t.Fatalf("send to a resolving address: %v (it should wait)", err)
	}
	live, err := cl.Send(engine.Addr{IP: netip.AddrFrom4(b.me.ip), Port: 99}, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	results := map[uint64]engine.Message{}
	deadline := time.Now().Add(10 * time.Second)
	for len(results) < 2 && time.Now().Before(deadline) {
		a.Pass()
		b.Pass()
		for m, ok := cl.Receive(); ok; m, ok = cl.Receive() {
			results[m.ID] = m
		}
	}
	if m := results[live]; m.Err != nil || string(m.Data) != "hello" {
		t.Errorf("RPC to the peer: %+v", m)
	}
	if m, ok := results[silent]; !ok || !errors.Is(m.Err, engine.ErrPeerUnknown) {
		t.Errorf("RPC to the silent address: %+v (ended %v), want ErrPeerUnknown", m, ok)
	}
	if a.neigh.Failures != 1 || a.neigh.Requests < 5 {
		t.Errorf("ARP: %d failures, %d requests; want 1 failure after 5 requests", a.neigh.Failures, a.neigh.Requests)
	}
}
