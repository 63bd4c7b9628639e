package engine

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
	"github.com/homa-dpdk/homa-dpdk/engine/workload"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Messages above kernel Homa's 1,000,000 bytes between homa-dpdk hosts
// (Config.MaxMessageLength up to wire.MaxMessageLimit), and the kernel
// limit kept towards the peers Config.KernelPeer names.

const (
	mib8  = 8 << 20
	mib64 = 64 << 20
)

// longMessages lets an endpoint send and take messages of up to max
// bytes, with heap room for four of them at once.
func longMessages(max int) func(*Config) {
	return func(c *Config) {
		c.MaxMessageLength = max
		c.MaxRecvHeapBytes = 4 * max
	}
}

// singleSize is a workload of messages of n bytes only.
func singleSize(n int) *workload.Workload {
	return &workload.Workload{Name: fmt.Sprintf("%d B", n), Sizes: []int{n}, CDF: []float64{1}}
}

// TestLongMessage_8MBWithLossByteExact: an 8 MiB request and its 8 MiB
// response on the test net, with every 97th DATA packet lost on its
// first transmission: the receivers' RESENDs bring the gaps (in ranges
// past 1,000,000, as u32 offsets), and both messages arrive byte-exact.
func TestLongMessage_8MBWithLossByteExact(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, longMessages(mib64))
	s := n.addHost("s", 2, longMessages(mib64))
	data, dropped := 0, 0
	var resendsPast1MB int
	n.drop = func(line string) bool {
		if off, ok := resendOffset(line); ok && off > wire.MaxMessageLength {
			resendsPast1MB++
		}
		if !strings.Contains(line, "DATA") || strings.Contains(line, "retx") {
			return false
		}
		data++
		if data%97 == 0 {
			dropped++
			return true
		}
		return false
	}
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	req, resp := msg(mib8, 3), msg(mib8, 9)
	id, err := cli.Send(Addr{IP: netip.AddrFrom4(s.ip), Port: 99}, req)
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	for i := 0; i < 5000; i++ {
		n.flush()
		n.takeLog()
		if m, ok := srv.Receive(); ok {
			if !bytes.Equal(m.Data, req) {
				t.Fatal("request differs")
			}
			if err := srv.Reply(m, resp); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if m, ok := cli.Receive(); ok {
			got = m
			break
		}
		n.advance(1_000_000)
	}
	if got.ID != id || got.Err != nil || !bytes.Equal(got.Data, resp) {
		t.Fatalf("response: id %d (want %d) err %v, %d bytes, equal %v", got.ID, id, got.Err, len(got.Data), bytes.Equal(got.Data, resp))
	}
	if dropped < 100 || c.e.Metrics().ResentPackets == 0 || s.e.Metrics().ResentPackets == 0 || resendsPast1MB == 0 {
		t.Fatalf("%d packets dropped, resent %d (client) %d (server), %d RESENDs past 1,000,000: loss not exercised",
			dropped, c.e.Metrics().ResentPackets, s.e.Metrics().ResentPackets, resendsPast1MB)
	}
	n.advance(10_000_000) // the ACK
	if c.e.NumRPCs() != 0 || s.e.NumRPCs() != 0 {
		t.Fatalf("rpcs left: client %d server %d", c.e.NumRPCs(), s.e.NumRPCs())
	}
}

// resendOffset reads the offset of a "RESEND off+len@prio" log line.
func resendOffset(line string) (int, bool) {
	_, rest, ok := strings.Cut(line, "RESEND ")
	var off, length int
	if !ok {
		return 0, false
	}
	_, err := fmt.Sscanf(rest, "%d+%d@", &off, &length)
	return off, err == nil
}

// TestLongMessage_memnetWithLoss: RPCs whose requests and responses are
// 8 MiB, then 64 MiB, over the in-memory network with 1% loss, some
// reordering and duplication: every RPC completes byte-exact (serve
// compares every byte), no request executes twice, no state remains,
// and the loss was repaired by retransmission.
func TestLongMessage_memnetWithLoss(t *testing.T) {
	for _, c := range []struct {
		name            string
		size            int
		hosts, perHost  int
		inFlight        int
		loss            float64
		simulatedLimit  int64
		wantRetransmits bool
	}{
		{"8MiB", mib8, 3, 2, 2, 0.01, 60_000_000_000, true},
		{"64MiB", mib64, 2, 1, 1, 0.01, 120_000_000_000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := memnet.Config{Seed: 3, Loss: c.loss, Reorder: 0.01, Duplicate: 0.005}
			s := newScenario(t, c.hosts, cfg, singleSize(c.size), longMessages(mib64))
			s.perHost, s.inFlight = c.perHost, c.inFlight
			s.run(c.simulatedLimit)
			s.check()
			var resent uint64
			for _, h := range s.hosts {
				resent += h.e.Metrics().ResentPackets
			}
			if c.wantRetransmits && resent == 0 {
				t.Fatal("nothing was retransmitted: loss not exercised")
			}
		})
	}
}

// TestKernelPeer_sendAndReplyHeldToKernelLimit: towards a peer KernelPeer
// names, Send and Reply above 1,000,000 bytes fail with
// ErrPeerMessageLength (an ErrMessageLength too) and send nothing, a
// refused reply leaves the request to be answered again, and 1,000,000
// bytes still go; another peer takes a 2 MB message.
func TestKernelPeer_sendAndReplyHeldToKernelLimit(t *testing.T) {
	n := newTestNet(t)
	kernelIP := [4]byte{10, 0, 0, 2}
	a := n.addHost("a", 1, func(c *Config) {
		longMessages(mib64)(c)
		c.KernelPeer = func(a netip.Addr) bool {
			ip := a.Unmap().As4()
			return ip == kernelIP
		}
	})
	k := n.addHost("k", 2, nil) // plays the kernel-Homa host: default limit
	d := n.addHost("d", 3, longMessages(mib64))
	cli, _ := a.e.OpenClient()
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(k.ip), Port: 99}, msg(wire.MaxMessageLength+1, 1)); !errors.Is(err, ErrPeerMessageLength) || !errors.Is(err, ErrMessageLength) {
		t.Fatalf("Send of 1,000,001 bytes to the kernel peer: %v, want ErrPeerMessageLength", err)
	}
	if got := n.takeLog(); got != "" {
		t.Fatalf("a refused send sent:\n%s", got)
	}
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(k.ip), Port: 99}, msg(mib64+1, 1)); !errors.Is(err, ErrMessageLength) || errors.Is(err, ErrPeerMessageLength) {
		t.Fatalf("Send above MaxMessageLength: %v, want ErrMessageLength only", err)
	}

	// Another peer takes 2 MB; the kernel peer 1,000,000 bytes.
	dsrv, _ := d.e.Bind(99)
	big := msg(2_000_000, 4)
	if _, err := cli.Send(Addr{IP: netip.AddrFrom4(d.ip), Port: 99}, big); err != nil {
		t.Fatal(err)
	}
	ksrv, _ := k.e.Bind(99)
	kreq := msg(wire.MaxMessageLength, 5)
	kid, err := cli.Send(Addr{IP: netip.AddrFrom4(k.ip), Port: 99}, kreq)
	if err != nil {
		t.Fatal(err)
	}
	n.flush()
	if m := receive(t, dsrv); !bytes.Equal(m.Data, big) {
		t.Fatal("2 MB request to the homa-dpdk peer differs")
	}
	if m := receive(t, ksrv); !bytes.Equal(m.Data, kreq) {
		t.Fatal("1,000,000-byte request to the kernel peer differs")
	}

	// a serves the kernel peer: a reply above 1,000,000 bytes is refused
	// and the request stays in service for a shorter one.
	asrv, _ := a.e.Bind(100)
	kcli, _ := k.e.OpenClient()
	rid, err := kcli.Send(Addr{IP: netip.AddrFrom4(a.ip), Port: 100}, msg(100, 6))
	if err != nil {
		t.Fatal(err)
	}
	n.flush()
	req := receive(t, asrv)
	if err := asrv.Reply(req, msg(wire.MaxMessageLength+1, 7)); !errors.Is(err, ErrPeerMessageLength) {
		t.Fatalf("Reply of 1,000,001 bytes to the kernel peer: %v, want ErrPeerMessageLength", err)
	}
	resp := msg(wire.MaxMessageLength, 8)
	if err := asrv.Reply(req, resp); err != nil {
		t.Fatalf("Reply of 1,000,000 bytes after the refusal: %v", err)
	}
	n.flush()
	for {
		m := receive(t, kcli)
		if m.ID == rid {
			if !bytes.Equal(m.Data, resp) {
				t.Fatal("response differs")
			}
			break
		}
	}
	_ = kid
}

// TestKernelPeer_longDataDropped: DATA claiming more than 1,000,000
// bytes from a peer KernelPeer names is dropped (DropBadLength) and
// starts no RPC, though the endpoint takes longer messages from others.
func TestKernelPeer_longDataDropped(t *testing.T) {
	n := newTestNet(t)
	a := n.addHost("a", 1, func(c *Config) {
		longMessages(mib64)(c)
		c.KernelPeer = func(a netip.Addr) bool {
			ip := a.Unmap().As4()
			return ip[3] == 2
		}
	})
	k := n.addHost("k", 2, longMessages(mib64)) // says it may run kernel Homa, but sends long
	d := n.addHost("d", 3, longMessages(mib64))
	srv, _ := a.e.Bind(99)
	kcli, _ := k.e.OpenClient()
	dcli, _ := d.e.OpenClient()
	if _, err := kcli.Send(Addr{IP: netip.AddrFrom4(a.ip), Port: 99}, msg(wire.MaxMessageLength+1, 1)); err != nil {
		t.Fatal(err)
	}
	long := msg(wire.MaxMessageLength+1, 2)
	if _, err := dcli.Send(Addr{IP: netip.AddrFrom4(a.ip), Port: 99}, long); err != nil {
		t.Fatal(err)
	}
	n.flush()
	m := receive(t, srv)
	if m.Peer.IP != netip.AddrFrom4(d.ip) || !bytes.Equal(m.Data, long) {
		t.Fatalf("request from %v, %d bytes; want the other peer's", m.Peer.IP, len(m.Data))
	}
	if _, ok := srv.Receive(); ok {
		t.Fatal("the kernel peer's long request was delivered")
	}
	if a.e.Metrics().Drops[DropBadLength] == 0 || a.e.NumServerRPCs() != 1 {
		t.Fatalf("drops_bad_length %d, server RPCs %d; want the kernel peer's DATA dropped, one RPC",
			a.e.Metrics().Drops[DropBadLength], a.e.NumServerRPCs())
	}
}

// TestConfig_maxMessageLengthBounded: MaxMessageLength above
// wire.MaxMessageLimit (offsets would pass the u32 fields) is refused.
func TestConfig_maxMessageLengthBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clock = func() int64 { return 0 }
	cfg.MaxMessageLength = wire.MaxMessageLimit
	if _, err := New(cfg, &testHost{}); err != nil {
		t.Fatalf("MaxMessageLength at the limit: %v", err)
	}
	cfg.MaxMessageLength = wire.MaxMessageLimit + 1
	if _, err := New(cfg, &testHost{}); err == nil || !strings.Contains(err.Error(), "MaxMessageLength") {
		t.Fatalf("MaxMessageLength above the limit: %v", err)
	}
}

// Long requests on hosts of two shards with loss: a request waiting for
// its lost packets to be resent is not a claim that never sends. The port
// runs out of grant room (PortStarved) under this load, and evictStarving
// once ended such requests: the server answered RPC_UNKNOWN, the client
// restarted and sent megabytes again, unpaced, which overflowed the
// switch and made more loss (173 evictions, 121 restarts, 271,503 frames
// dropped at full buffers, twice the time of one endpoint a host). Only
// a request that never sent a granted byte is evicted now.
func TestShards_lossyLongRequestsNotEvicted(t *testing.T) {
	cfg := memnet.Config{Seed: 3, Loss: 0.01, Reorder: 0.01, Duplicate: 0.005}
	s := newShardedScenario(t, 3, func(int) int { return 2 }, cfg, singleSize(mib8), longMessages(mib64))
	s.perHost, s.inFlight = 3, 3
	s.run(60_000_000_000)
	s.check()
	var evicted, restarts uint64
	for _, h := range s.hosts {
		m := h.e.Metrics()
		evicted += m.RequestsEvicted
		restarts += m.RPCRestarts
	}
	if evicted != 0 || restarts != 0 {
		t.Errorf("%d requests evicted, %d RPCs restarted: lost packets are resent, not the whole request", evicted, restarts)
	}
}
