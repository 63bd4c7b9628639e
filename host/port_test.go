package host

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// The frames of the memif tests: 9,014 bytes (MTU 9000) sent as a
// 54-byte header mbuf with a chained body, as the engine sends DATA, and
// one-mbuf frames of 60 and 1,514 bytes between them, in an order that
// lands every size on every slot of memif's 1024-slot rings.
var memifFrameSizes = []int{9014, 60, 9014, 9014, 60, 1514, 60, 60, 9014, 5000, 60}

// memifPair makes the two ends of a memif link with devargs args(role)
// and sets both up at mtu with one queue pair, a pool sized for it; the
// ports are stopped (server first) and removed when the test ends.
func memifPair(t *testing.T, name string, mtu int, args func(role, sock string) string) (srv, cli *dpdk.Port, pool *dpdk.Mempool) {
	t.Helper()
	dpdktest.Need(t)
	pool = dpdktest.Pool(t, name, 4096, wire.BufferRoom(mtu))
	sock := filepath.Join(t.TempDir(), "memif.sock")
	var ports [2]*dpdk.Port
	t.Cleanup(func() { // as Pair.Close: both stopped, the server first, then removed
		bufs := make([]*dpdk.Mbuf, 64)
		for _, p := range ports {
			if p != nil {
				emptyPort(p, bufs)
				p.Stop()
			}
		}
		for i, p := range ports {
			if p != nil {
				dpdk.RemoveVdev(fmt.Sprintf("net_memif_%s%d", name, i))
			}
		}
	})
	for i, role := range []string{"server", "client"} {
		p, err := dpdk.NewVdev(fmt.Sprintf("net_memif_%s%d", name, i), args(role, sock))
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
		st, err := SetupPort(p, PortSetup{TxQueues: 1, RxQueues: 1, Pool: pool, MTU: mtu})
		if err != nil {
			t.Fatalf("set up the memif %s at MTU %d: %v", role, mtu, err)
		}
		if !st.MTUPastEthdev {
			t.Errorf("memif %s: MTU %d went to ethdev, which refuses it on net_memif", role, mtu)
		}
	}
	if err := WaitLinks(ports[:], 10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	return ports[0], ports[1], pool
}

// memifFrame builds frame seq of size bytes: an Ethernet header, the
// sequence number, then bytes that are a function of seq and the offset;
// frames above 1514 bytes are a 54-byte header mbuf and a chained body.
func memifFrame(t *testing.T, pool *dpdk.Mempool, seq, size int) *dpdk.Mbuf {
	t.Helper()
	head := pool.Alloc()
	if head == nil {
		t.Fatal("pool empty")
	}
	first := size
	if size > 1514 {
		first = 54
	}
	fill := func(b []byte, off int) {
		for i := range b {
			b[i] = byte(seq*31 + (off+i)*7)
		}
	}
	d := head.Append(first)
	fill(d, 0)
	// A unicast header of the local experimental EtherType (a kernel
	// interface passes it as it is), then the sequence number.
	copy(d, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint64(d[14:], uint64(seq))
	if first < size {
		body := pool.Alloc()
		if body == nil {
			t.Fatal("pool empty")
		}
		fill(body.Append(size-first), first)
		if !head.Chain(body) {
			t.Fatal("chain")
		}
	}
	return head
}

// exchangeFrames sends n frames of memifFrameSizes (in turn) from tx to
// rx and returns a description of every received frame that is not the
// next one sent, byte for byte (at most 5), and how many arrived.
func exchangeFrames(t *testing.T, tx, rx *dpdk.Port, pool *dpdk.Mempool, n int) (bad []string, got int) {
	t.Helper()
	in := make([]*dpdk.Mbuf, 32)
	buf := make([]byte, 0, 16384)
	receive := func() {
		k := rx.RxBurst(0, in)
		for _, m := range in[:k] {
			buf = m.AppendData(buf[:0])
			want := memifFrameSizes[got%len(memifFrameSizes)]
			ok := len(buf) == want && len(buf) >= 22 && binary.BigEndian.Uint64(buf[14:]) == uint64(got)
			for i := 22; ok && i < len(buf); i++ {
				ok = buf[i] == byte(got*31+i*7)
			}
			if !ok && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("frame %d: %d bytes in %d segments, want %d bytes", got, len(buf), m.NumSegs(), want))
			}
			got++
		}
		dpdk.FreeBulk(in[:k])
	}
	deadline := time.Now().Add(20 * time.Second)
	for seq := 0; seq < n && time.Now().Before(deadline); {
		m := memifFrame(t, pool, seq, memifFrameSizes[seq%len(memifFrameSizes)])
		for tx.TxBurst(0, []*dpdk.Mbuf{m}) == 0 {
			receive() // the ring is full, or (server side) the client has not polled yet
			if time.Now().After(deadline) {
				m.Free()
				t.Fatalf("sent %d of %d frames before the deadline, %d received", seq, n, got)
			}
		}
		seq++
		if seq%16 == 0 {
			receive()
		}
	}
	for end := time.Now().Add(time.Second); got < n && time.Now().Before(end); {
		receive()
	}
	return bad, got
}

// Jumbo frames on a net_memif pair: ethdev refuses MTU 9000 on net_memif
// (its max_rx_pktlen is 1518), so SetupPort configures the ports at
// ethdev's default and the engine keeps to 9000; with the bsize of
// MemifDevargs each frame takes one descriptor. 3,000 frames each way,
// 9,014-byte chained ones among small ones, arrive whole, in order,
// byte-exact.
func TestSetupPort_memifJumboFrames(t *testing.T) {
	srv, cli, pool := memifPair(t, "mj", 9000, func(role, sock string) string { return MemifDevargs(role, sock, 9000) })
	for _, dir := range []struct {
		name   string
		tx, rx *dpdk.Port
	}{{"server to client", srv, cli}, {"client to server", cli, srv}} {
		bad, got := exchangeFrames(t, dir.tx, dir.rx, pool, 3000)
		if got != 3000 || len(bad) > 0 {
			t.Errorf("%s: %d of 3000 frames arrived; wrong ones: %v", dir.name, got, bad)
		}
	}
}

// What MemifBufferSize avoids: at memif's default bsize, 2048, a 9,014-byte
// frame spans five descriptors, and DPDK 22.11's memif leaves the NEXT mark
// on a slot that a one-descriptor frame reuses, so the receiver joins that
// frame to the ones after it. The test holds while the PMD does so; when
// it fails, a DPDK without the fault is installed, and MemifBufferSize and
// the daemon's bsize check may relax.
func TestMemif_defaultBufferSizeJoinsFrames(t *testing.T) {
	srv, cli, pool := memifPair(t, "mb", 9000, func(role, sock string) string {
		return fmt.Sprintf("role=%s,id=0,socket=%s,socket-abstract=no", role, sock)
	})
	bad, got := exchangeFrames(t, srv, cli, pool, 3000)
	t.Logf("bsize 2048: %d frames arrived for 3000 sent; first wrong ones: %v", got, bad)
	if len(bad) == 0 && got == 3000 {
		t.Errorf("every frame arrived whole at memif's default bsize: this DPDK's memif no longer joins frames after a chained one")
	}
}

func TestEthdevRefusesMTU(t *testing.T) {
	memif := dpdk.DevInfo{Driver: "net_memif", MaxRxPktLen: 1518, MaxMTU: 0xffff}
	nic := dpdk.DevInfo{Driver: "net_ice", MaxRxPktLen: 9728, MaxMTU: 9702} // overhead 26
	for _, c := range []struct {
		info dpdk.DevInfo
		mtu  int
		want bool
	}{
		{memif, 1500, false}, {memif, 1501, true}, {memif, 9000, true},
		{nic, 9000, false}, {nic, 9702, false}, {nic, 9703, true},
		{dpdk.DevInfo{MaxRxPktLen: 9018, MaxMTU: 0xffff}, 9000, false},
	} {
		if got := ethdevRefusesMTU(c.info, c.mtu); got != c.want {
			t.Errorf("%s (max_rx_pktlen %d, max_mtu %d), MTU %d: refused %v, want %v", c.info.Driver, c.info.MaxRxPktLen, c.info.MaxMTU, c.mtu, got, c.want)
		}
	}
}

func TestMemifBufferSizeAndAFPacketFrameSize(t *testing.T) {
	for _, c := range []struct{ mtu, bsize, framesz int }{
		{0, 2048, 2048}, {1500, 2048, 2048}, {2030, 2048, 3072}, {2031, 3072, 3072}, {9000, 9216, 9216},
	} {
		if got := MemifBufferSize(c.mtu); got != c.bsize {
			t.Errorf("MemifBufferSize(%d) = %d, want %d", c.mtu, got, c.bsize)
		}
		if got := AFPacketFrameSize(c.mtu); got != c.framesz {
			t.Errorf("AFPacketFrameSize(%d) = %d, want %d", c.mtu, got, c.framesz)
		}
	}
	if os.Getpagesize() == 4096 {
		for _, c := range [][2]int{{2048, 4096}, {3072, 12288}, {9216, 36864}, {16384, 16384}} {
			if got := AFPacketBlockSize(c[0]); got != c[1] {
				t.Errorf("AFPacketBlockSize(%d) = %d, want %d", c[0], got, c[1])
			}
		}
	}
}
