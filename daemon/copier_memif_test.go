package daemon

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// strangerApp is an in-loop application of the client daemon
// (HOMA_TEST_STRANGER=<port>) that plays a stranger, 10.0.0.66, against a
// port of the server's: every strangerEvery, DATA of a request claiming
// ten packets' bytes, its fourth, fifth, first and second packets (the
// third commits a receive buffer; with a copier, its bytes and the next
// are copied off the loop), then at once an RPC_UNKNOWN for it, which
// ends its server RPC while those copies may still be pending.
type strangerApp struct {
	h       *host.Host
	dst     [4]byte
	port    uint16
	id      uint64
	next    int64 // when the next request goes, ns (the loop's clock)
	payload []byte
	frame   []byte
}

// strangerEvery is the time between two of the stranger's requests, ns.
const strangerEvery = 200_000

// strangerPacket is the payload of each of its DATA packets, bytes.
const strangerPacket = 1400

var strangerIP = [4]byte{10, 0, 0, 66}

func newStrangerApp(h *host.Host, dst [4]byte, port uint16) *strangerApp {
	junk := make([]byte, strangerPacket)
	for i := range junk {
		junk[i] = 0xEE
	}
	return &strangerApp{h: h, dst: dst, port: port, id: 0x7000, payload: junk,
		frame: make([]byte, wire.EthernetHeaderLen+wire.IPv4MinHeaderLen+wire.DataHeaderLen+strangerPacket)}
}

func (s *strangerApp) Poll(now int64) int {
	if now < s.next {
		return 0
	}
	s.next = now + strangerEvery
	for _, p := range []int{3, 4, 0, 1} {
		s.send(&wire.DataFields{Common: s.common(), MessageLength: 10 * strangerPacket, Incoming: 10 * strangerPacket,
			CutoffVersion: 1, Offset: uint32(p * strangerPacket)}, s.payload)
	}
	s.send(&wire.ControlFields{Type: wire.TypeRPCUnknown, Common: s.common()}, nil)
	s.id += 2
	return 5
}

func (s *strangerApp) common() wire.CommonFields {
	return wire.CommonFields{SrcPort: 0x8000, DstPort: s.port, SenderID: s.id}
}

// send sends one packet of the stranger's: h is its Homa header.
func (s *strangerApp) send(h interface{ Encode([]byte) int }, payload []byte) {
	const hl = wire.EthernetHeaderLen + wire.IPv4MinHeaderLen
	b := s.frame
	eth := wire.EthernetFields{Dst: wire.BroadcastMAC, Src: wire.MAC{2, 0, 10, 0, 0, 66}, Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	n := h.Encode(b[hl:])
	n += copy(b[hl+n:], payload)
	ip := wire.HomaIPv4Fields(strangerIP, s.dst, 0, n)
	ip.Encode(b[wire.EthernetHeaderLen:])
	s.h.SendFrame(b[:hl+n], 0)
}

func (*strangerApp) Flush() {}
func (*strangerApp) Stop()  {}

// A stranger's requests to a server worker's port, each ended by an
// RPC_UNKNOWN right after the packets that handed copies to the server
// daemon's copier thread, while a real client worker's requests go to the
// same port; the worker's pool is one page, so every message takes the
// page the last one left. Every response is byte for byte its request
// (the echo worker answers with what it read): no stale copy of the
// stranger's reaches a worker's message, and the server counts the
// buffers that waited for the copier (recv_bufs_held_for_copier).
//
// The stranger holds the one page while the copier is behind, and a
// request that finds it held is dropped (drops_rx_no_space) and
// restarted; with the copier thread short of CPU (two daemons of two
// shards on two CPUs) a request can find it held until its RPC times
// out. The client then sends it again, as a client would (up to 5
// times), counted in the log: the test is of the bytes delivered, not of
// how a one-page pool shares out under attack.
func TestMemifHosts_copierStrangersCopiesNeverReachAWorker(t *testing.T) {
	t.Setenv("HOMA_TEST_COPIER", "0")
	dir := t.TempDir()
	srvSock, cliSock := filepath.Join(dir, "server.sock"), filepath.Join(dir, "client.sock")
	small := "HOMA_TEST_PROTOCOL=  max_message: 60000" // one pool page holds the largest message
	serverD, clientD := startMemifDaemons(t, 0, 0, srvSock, cliSock,
		[]string{small, "HOMA_TEST_YAML=  pool_bytes: 65536"}, []string{small, "HOMA_TEST_STRANGER=100"})

	srv, err := client.Dial(srvSock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bind(100); err != nil {
		t.Fatal(err)
	}
	stop, echoDone := make(chan struct{}), make(chan error, 1)
	go func() { echoDone <- echoWorker(srv, stop) }()
	cli, err := client.Dial(cliSock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	timedOut := 0
	_, err = workerRPCs(cli, rpcLoad{servers: 1, total: 300, maxSize: 50_000, window: 1, retries: 5, timedOut: &timedOut})
	t.Logf("300 RPCs checked; %d timed out and were sent again", timedOut)
	cli.Close()
	close(stop)
	if err := errors.Join(err, <-echoDone); err != nil {
		t.Error(err)
	}
	srv.Close()
	summary := stopMemifDaemons(t, serverD, clientD)
	t.Log(summary)
	if !strings.Contains(summary, " recv_bufs_held_for_copier=") {
		t.Errorf("no buffer of the stranger's ended requests waited for the copier: the attack did not take (%s)", summary)
	}
}
