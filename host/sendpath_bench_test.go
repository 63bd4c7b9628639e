package host

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"golang.org/x/sys/unix"
)

// BenchmarkSendPath is what sending a message from memory (an external
// buffer chained to each header mbuf: hub.DefaultZeroCopyMin's choice)
// costs against copying it into the mbufs, by size: an RPC of the size
// from one host of a ring pair to the other, answered with 1 byte, both
// hosts run by this goroutine, paced to 400 Gbit/s so that the CPU, not
// the pacer, sets the time. Its ns/op is the whole RPC; the two ways
// differ only in the sender's DATA frames. Run it with
//
//	go test ./host -run '^$' -bench SendPath -count 5
//
// and compare the two ways at each size (docs/datapath.md).
func BenchmarkSendPath(b *testing.B) {
	for _, size := range []int{1024, 4096, 16384, 65536, 262144} {
		for _, way := range []string{"copy", "zero-copy"} {
			b.Run(fmt.Sprintf("%s/%dB", way, size), func(b *testing.B) { benchSendPath(b, size, way == "zero-copy") })
		}
	}
}

func benchSendPath(b *testing.B, size int, zeroCopy bool) {
	a, s := pairHosts(b, PairConfig{TxQueues: 8, LinkBps: 400e9})
	if zeroCopy && !a.Offloads().MultiSeg {
		b.Skip("the ring port sends no chains")
	}
	srv, err := s.ep.Bind(99)
	if err != nil {
		b.Fatal(err)
	}
	s.setApp(func(int64) {
		for {
			m, ok := srv.Receive()
			if !ok {
				return
			}
			srv.Reply(m, m.Data[:1])
		}
	})
	cl, err := a.ep.OpenClient()
	if err != nil {
		b.Fatal(err)
	}
	// The message lives outside Go's heap, as a worker's arena does.
	msg, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(msg) })
	dst := engine.Addr{IP: netip.AddrFrom4(s.me.ip), Port: 99}
	rpc := func() {
		var ref engine.PayloadRef
		if zeroCopy {
			r, ok := a.HoldPayload()
			if !ok {
				b.Fatal("no payload reference")
			}
			ref = r
		}
		if _, err := cl.SendRef(dst, msg, ref); err != nil {
			b.Fatal(err)
		}
		for {
			a.Pass()
			s.Pass()
			if m, ok := cl.Receive(); ok {
				if m.Err != nil {
					b.Fatal(m.Err)
				}
				break
			}
		}
		if ref != 0 {
			a.LetGoPayload(ref)
			for !a.PayloadSent(ref) {
				a.Pass()
				s.Pass()
			}
		}
	}
	rpc() // resolves the addresses
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		rpc()
	}
	b.StopTimer()
	m := a.ep.Metrics()
	if zeroCopy && m.DataBytesCopied > uint64(size) || !zeroCopy && m.DataBytesZeroCopy != 0 {
		b.Fatalf("%s: %d bytes copied, %d zero-copy", map[bool]string{true: "zero-copy", false: "copy"}[zeroCopy], m.DataBytesCopied, m.DataBytesZeroCopy)
	}
}
