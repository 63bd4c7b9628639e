package dpdk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestMempool_exhaustionClearError(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 64, 0)
	all := make([]*dpdk.Mbuf, 64)
	if err := pool.AllocBulk(all); err != nil {
		t.Fatalf("allocating the whole pool: %v", err)
	}
	if pool.Avail() != 0 || pool.InUse() != 64 {
		t.Errorf("avail %d in use %d, want 0 and 64", pool.Avail(), pool.InUse())
	}
	more := make([]*dpdk.Mbuf, 1)
	err := pool.AllocBulk(more)
	if !errors.Is(err, dpdk.ErrNoMbufs) || !strings.Contains(err.Error(), pool.Name()) {
		t.Fatalf("got %v, want ErrNoMbufs naming the pool", err)
	}
	if pool.Alloc() != nil {
		t.Error("Alloc from an empty pool returned an mbuf")
	}
	dpdk.FreeBulk(all)
	if pool.Avail() != 64 {
		t.Errorf("avail %d after freeing all, want 64", pool.Avail())
	}
}

func TestMbuf_lengthOperations(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 16, 0)
	m := pool.Alloc()
	defer m.Free()
	if m.Headroom() != dpdk.PktmbufHeadroom || m.DataLen() != 0 {
		t.Fatalf("fresh mbuf headroom %d len %d", m.Headroom(), m.DataLen())
	}
	copy(m.Append(10), "0123456789")
	copy(m.Prepend(4), "head")
	if got := string(m.Data()); got != "head0123456789" || m.PktLen() != 14 {
		t.Fatalf("data %q len %d", got, m.PktLen())
	}
	if !m.Adj(4) || !m.Trim(3) || string(m.Data()) != "0123456" {
		t.Fatalf("after Adj/Trim: %q", m.Data())
	}
	if m.Adj(100) || m.Trim(100) || m.Prepend(m.Headroom()+1) != nil || m.Append(m.Tailroom()+1) != nil {
		t.Error("an operation beyond the buffer succeeded")
	}
	if string(m.Data()) != "0123456" {
		t.Errorf("a refused operation changed the data: %q", m.Data())
	}
	if !m.SetLen(100) || m.DataLen() != 100 || m.PktLen() != 100 {
		t.Errorf("SetLen(100): len %d", m.DataLen())
	}
	if string(m.CopyData()[:7]) != "0123456" {
		t.Errorf("CopyData %q", m.CopyData()[:7])
	}
}

func TestMbuf_ipv4ChecksumOffloadFlags(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 16, 0)
	m := pool.Alloc()
	defer m.Free()
	m.SetIPv4CksumOffload(18, 20)
	if m.OlFlags()&(dpdk.TxIPv4|dpdk.TxIPCksum) != dpdk.TxIPv4|dpdk.TxIPCksum {
		t.Errorf("ol_flags %#x lack IPv4|IP_CKSUM", m.OlFlags())
	}
	if l2, l3 := m.TxOffloadLens(); l2 != 18 || l3 != 20 {
		t.Errorf("l2 %d l3 %d, want 18 and 20", l2, l3)
	}
	m.SetIPv4CksumOffload(14, 24)
	if l2, l3 := m.TxOffloadLens(); l2 != 14 || l3 != 24 {
		t.Errorf("after reset: l2 %d l3 %d", l2, l3)
	}
}

func TestMbuf_externalBufferReleased(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 16, 0)
	mem := make([]byte, 4096) // stands for a worker's shared-memory arena
	copy(mem, "payload from shared memory")
	ext, err := dpdk.NewExtBuf()
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	a, b := pool.Alloc(), pool.Alloc()
	addr := uint64(uintptrOf(mem))
	if !a.AttachExtBuf(mem, addr, ext) || !b.AttachExtBuf(mem, addr, ext) {
		t.Fatal("attach failed")
	}
	if !a.IsExternal() || !a.SetLen(26) || string(a.Data()) != "payload from shared memory" {
		t.Fatalf("external data %q", a.Data())
	}
	a.Free()
	if ext.Released() != 0 {
		t.Fatal("released while another mbuf still refers to the buffer")
	}
	b.Free()
	if ext.Released() != 1 {
		t.Fatalf("released %d times, want 1", ext.Released())
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

// A held external buffer is released once: after its owner lets go and
// the last chained packet referring to it is freed.
func TestMbuf_heldExternalBufferChained(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 16, 0)
	mem := make([]byte, 4096)
	copy(mem, "0123456789abcdef")
	ext, err := dpdk.NewExtBuf()
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	ext.Hold()
	for i := range 3 { // three packets, one at a time, each sent (freed) before the next
		head, body := pool.Alloc(), pool.Alloc()
		copy(head.Append(4), "HDR:")
		if !body.AttachExtBuf(mem[i*4:i*4+4], uint64(uintptrOf(mem))+uint64(i*4), ext) || !body.SetLen(4) {
			t.Fatal("attach")
		}
		if !head.Chain(body) || head.NumSegs() != 2 || head.PktLen() != 8 {
			t.Fatalf("chain: %d segments, %d bytes", head.NumSegs(), head.PktLen())
		}
		if got := string(head.AppendData(nil)); got != "HDR:"+string(mem[i*4:i*4+4]) {
			t.Fatalf("packet %d: %q", i, got)
		}
		head.Free() // frees the chain
		if ext.Released() != 0 {
			t.Fatalf("packet %d: released while the owner holds the buffer", i)
		}
	}
	last := pool.Alloc()
	last.AttachExtBuf(mem[12:16], uint64(uintptrOf(mem))+12, ext)
	ext.Unhold()
	if ext.Released() != 0 {
		t.Fatal("released while a packet still refers to the buffer")
	}
	last.Free()
	if ext.Released() != 1 {
		t.Fatalf("released %d times, want 1", ext.Released())
	}
	ext.Hold() // reused for the next message
	ext.Unhold()
	if ext.Released() != 2 {
		t.Fatalf("released %d times after an empty hold, want 2", ext.Released())
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

// AttachChain attaches, sizes and chains a payload segment in one call.
func TestMbuf_attachChain(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 16, 0)
	mem := []byte("....payload")
	ext, err := dpdk.NewExtBuf()
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	ext.Hold()
	head, body := pool.Alloc(), pool.Alloc()
	copy(head.Append(4), "HDR:")
	if !head.AttachChain(body, mem[4:], uint64(uintptrOf(mem))+4, ext) {
		t.Fatal("attach and chain")
	}
	if got := string(head.AppendData(nil)); got != "HDR:payload" || head.NumSegs() != 2 || !body.IsExternal() {
		t.Fatalf("packet %q, %d segments", got, head.NumSegs())
	}
	head.Free()
	ext.Unhold()
	if ext.Released() != 1 || pool.InUse() != 0 {
		t.Errorf("released %d, %d mbufs in use", ext.Released(), pool.InUse())
	}
}
