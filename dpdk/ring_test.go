package dpdk_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestRing_burstsAndLookup(t *testing.T) {
	dpdktest.Need(t)
	r, err := dpdk.NewRing("t_ring", 8, dpdk.SocketIDAny, dpdk.RingSP|dpdk.RingSC)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	pool := newPool(t, 16, 0)
	in := make([]*dpdk.Mbuf, 10)
	if err := pool.AllocBulk(in); err != nil {
		t.Fatal(err)
	}
	defer dpdk.FreeBulk(in)
	if n := r.EnqueueMbufs(in); n != 7 {
		t.Fatalf("enqueued %d into a ring of 8 slots, want 7", n)
	}
	if r.Count() != 7 || r.FreeCount() != 0 {
		t.Errorf("count %d free %d", r.Count(), r.FreeCount())
	}
	same, err := dpdk.LookupRing("t_ring")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*dpdk.Mbuf, 10)
	if n := same.DequeueMbufs(out); n != 7 {
		t.Fatalf("dequeued %d, want 7", n)
	}
	for i := range 7 {
		if out[i] != in[i] {
			t.Fatalf("entry %d out of order", i)
		}
	}
	objs := []unsafe.Pointer{unsafe.Pointer(in[0])}
	if r.EnqueueBurst(objs) != 1 || r.DequeueBurst(objs) != 1 || objs[0] != unsafe.Pointer(in[0]) {
		t.Error("pointer burst round trip failed")
	}
}

func TestRing_badSizeNamed(t *testing.T) {
	dpdktest.Need(t)
	_, err := dpdk.NewRing("t_ring_bad", 1000, dpdk.SocketIDAny, 0)
	if err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Fatalf("got %v", err)
	}
	if _, err := dpdk.LookupRing("t_ring_absent"); err == nil {
		t.Fatal("lookup of an absent ring succeeded")
	}
}
