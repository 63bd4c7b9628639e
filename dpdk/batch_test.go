package dpdk_test

import (
	"bytes"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

func TestBatch_rxTxAcrossPortsOneCall(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	a, b := ringPair(t, "bt")
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)
	out := make([]*dpdk.Mbuf, 8)
	in := make([]*dpdk.Mbuf, 16)
	var tx, rx dpdk.Batch
	if _, err := tx.Add(a, 0, out); err != nil {
		t.Fatal(err)
	}
	if _, err := rx.Add(b, 0, in); err != nil {
		t.Fatal(err)
	}
	rx.Prefetch = true
	if err := pool.AllocBulk(out); err != nil {
		t.Fatal(err)
	}
	for i, m := range out {
		copy(m.Append(20), bytes.Repeat([]byte{byte(i)}, 20))
	}
	tx.SetCount(0, 5) // send the first five only
	tx.Tx()
	if tx.Got(0) != 5 || len(tx.Pkts(0)) != 5 {
		t.Fatalf("batch TX took %d, want 5", tx.Got(0))
	}
	dpdk.FreeBulk(out[5:])
	if n := rx.Rx(); n != 5 || rx.Got(0) != 5 {
		t.Fatalf("batch RX got %d (%d), want 5", n, rx.Got(0))
	}
	for i, m := range rx.Pkts(0) {
		if !bytes.Equal(m.Data(), bytes.Repeat([]byte{byte(i)}, 20)) {
			t.Errorf("packet %d differs", i)
		}
	}
	dpdk.FreeBulk(rx.Pkts(0))
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

func TestBatch_stoppedPortCountedAndFreed(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 256, 0)
	p := newVdev(t, "net_null_batchstop", "")
	startPort(t, p, pool, 1, 1)
	p.Stop()
	bufs := make([]*dpdk.Mbuf, 4)
	var tx dpdk.Batch
	tx.Add(p, 0, bufs)
	if err := pool.AllocBulk(bufs); err != nil {
		t.Fatal(err)
	}
	tx.SetCount(0, 4)
	if freed := tx.TxOrFree(); freed != 4 {
		t.Fatalf("TxOrFree on a stopped port freed %d, want 4", freed)
	}
	if st, _ := p.Stats(); st.TxNotStarted != 4 {
		t.Errorf("TxNotStarted %d, want 4", st.TxNotStarted)
	}
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use", pool.InUse())
	}
}

func TestBatch_noAllocs(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	p0 := newVdev(t, "net_null_ba0", "")
	p1 := newVdev(t, "net_null_ba1", "")
	startPort(t, p0, pool, 1, 1)
	startPort(t, p1, pool, 1, 1)
	var rx, tx dpdk.Batch
	for i, p := range []*dpdk.Port{p0, p1} {
		bufs := make([]*dpdk.Mbuf, 32)
		rx.Add(p, 0, bufs)
		tx.Add([]*dpdk.Port{p1, p0}[i], 0, bufs)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		rx.Rx()
		for i := range 2 {
			tx.SetCount(i, rx.Got(i))
		}
		tx.TxOrFree()
	})
	if allocs != 0 {
		t.Errorf("batch RX+TX allocates %.1f times per pass, want 0", allocs)
	}
}

// TxFreeRx without an RX batch sends and frees other mbufs in one call;
// with nothing to send it only frees.
func TestBatch_txFreeRxWithoutRxSendsThenFrees(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	a, b := ringPair(t, "btf")
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)
	out, spent, in := make([]*dpdk.Mbuf, 4), make([]*dpdk.Mbuf, 6), make([]*dpdk.Mbuf, 16)
	var tx, rx dpdk.Batch
	tx.Add(a, 0, out)
	rx.Add(b, 0, in)
	if pool.AllocBulk(out) != nil || pool.AllocBulk(spent) != nil {
		t.Fatal("no mbufs")
	}
	tx.SetCount(0, 4)
	tx.TxFreeRx(spent, nil)
	if tx.Got(0) != 4 || pool.InUse() != 4 {
		t.Fatalf("TxFreeRx sent %d, %d mbufs in use; want 4, 4 (the sent ones, in the ring)", tx.Got(0), pool.InUse())
	}
	if n := rx.Rx(); n != 4 {
		t.Fatalf("received %d, want 4", n)
	}
	tx.TxFreeRx(rx.Pkts(0), nil) // nothing to send: frees only
	if tx.Got(0) != 0 || pool.InUse() != 0 {
		t.Fatalf("TxFreeRx with nothing to send: sent %d, %d mbufs in use", tx.Got(0), pool.InUse())
	}
}

// TxFreeRx sends, frees and then receives in one call: on a ring pair
// the frames it sends from a are already in b's RX ring when it polls b,
// so the same call receives them (TX before RX).
func TestBatch_txFreeRxSendsBeforeReceiving(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	a, b := ringPair(t, "btfr")
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)
	out, spent, in := make([]*dpdk.Mbuf, 8), make([]*dpdk.Mbuf, 6), make([]*dpdk.Mbuf, 16)
	var tx, rx dpdk.Batch
	tx.Add(a, 0, out)
	rx.Add(b, 0, in)
	if pool.AllocBulk(out) != nil || pool.AllocBulk(spent) != nil {
		t.Fatal("no mbufs")
	}
	for i, m := range out {
		copy(m.Append(20), bytes.Repeat([]byte{byte(i)}, 20))
	}
	tx.SetCount(0, 5)
	if n := tx.TxFreeRx(spent, &rx); n != 5 || tx.Got(0) != 5 || rx.Got(0) != 5 {
		t.Fatalf("TxFreeRx sent %d and received %d (%d); want 5 sent and the same 5 received", tx.Got(0), rx.Got(0), n)
	}
	for i, m := range rx.Pkts(0) {
		if !bytes.Equal(m.Data(), bytes.Repeat([]byte{byte(i)}, 20)) {
			t.Errorf("packet %d differs", i)
		}
	}
	// In use: the 3 not sent and the 5 received; the 6 spent are free.
	if got := pool.InUse(); got != 8 {
		t.Errorf("%d mbufs in use, want 8 (the spent ones freed)", got)
	}
	dpdk.FreeBulk(out[5:])
	// Nothing to send: it frees the received ones, and b's ring is empty.
	if n := tx.TxFreeRx(rx.Pkts(0), &rx); n != 0 || tx.Got(0) != 0 {
		t.Fatalf("TxFreeRx with nothing to send received %d, sent %d", n, tx.Got(0))
	}
	if got := pool.InUse(); got != 0 {
		t.Errorf("%d mbufs in use, want 0", got)
	}
	// No RX batch: only the send; no TX batch: only the receive.
	if pool.AllocBulk(out[:2]) != nil {
		t.Fatal("no mbufs")
	}
	tx.SetCount(0, 2)
	if n := tx.TxFreeRx(nil, nil); n != 0 || tx.Got(0) != 2 {
		t.Fatalf("TxFreeRx without RX: received %d, sent %d; want 0, 2", n, tx.Got(0))
	}
	var none *dpdk.Batch
	if n := none.TxFreeRx(nil, &rx); n != 2 {
		t.Fatalf("TxFreeRx without TX received %d, want 2", n)
	}
	dpdk.FreeBulk(rx.Pkts(0))
	if got := pool.InUse(); got != 0 {
		t.Errorf("%d mbufs in use at the end", got)
	}
}

func TestBatch_txFreeRxNoAllocs(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 4096, 0)
	a, b := ringPair(t, "btfra")
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)
	out, in := make([]*dpdk.Mbuf, 4), make([]*dpdk.Mbuf, 32)
	var tx, rx dpdk.Batch
	tx.Add(a, 0, out)
	rx.Add(b, 0, in)
	var spent []*dpdk.Mbuf
	allocs := testing.AllocsPerRun(1000, func() {
		if pool.AllocBulk(out) != nil {
			t.Fatal("no mbufs")
		}
		tx.SetCount(0, len(out))
		tx.TxFreeRx(spent, &rx)
		spent = rx.Pkts(0) // freed by the next call
	})
	dpdk.FreeBulk(spent)
	if allocs != 0 {
		t.Errorf("TxFreeRx allocates %.1f times per call, want 0", allocs)
	}
	if got := pool.InUse(); got != 0 {
		t.Errorf("%d mbufs in use at the end", got)
	}
}

// With HoldSent, each packet a TX queue takes keeps a reference of the
// caller's, on every segment: it is Shared until the ring pair's peer
// frees what it received, and goes back to the pool only once both let
// go. Packets the queue refused come back with their count as before.
func TestBatch_holdSentKeepsAReferenceUntilThePeerFrees(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 256, 0)
	r1, err := dpdk.NewRing("hs_ab", 8, dpdk.SocketIDAny, dpdk.RingSP|dpdk.RingSC) // holds 7
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Free()
	r2, err := dpdk.NewRing("hs_ba", 8, dpdk.SocketIDAny, dpdk.RingSP|dpdk.RingSC)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Free()
	a, err := dpdk.PortFromRings("hs_a", []*dpdk.Ring{r2}, []*dpdk.Ring{r1}, dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dpdk.PortFromRings("hs_b", []*dpdk.Ring{r1}, []*dpdk.Ring{r2}, dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	startPort(t, a, pool, 1, 1)
	startPort(t, b, pool, 1, 1)

	out := make([]*dpdk.Mbuf, 9)
	if err := pool.AllocBulk(out); err != nil {
		t.Fatal(err)
	}
	tail := pool.Alloc()
	if tail == nil {
		t.Fatal("no mbuf")
	}
	copy(tail.Append(10), "0123456789")
	for _, m := range out {
		m.Append(20)
	}
	if !out[0].Chain(tail) {
		t.Fatal("chain")
	}
	tx := dpdk.Batch{HoldSent: true}
	if _, err := tx.Add(a, 0, out); err != nil {
		t.Fatal(err)
	}
	tx.SetCount(0, len(out))
	tx.Tx()
	if tx.Got(0) != 7 {
		t.Fatalf("queue took %d, want 7 (the ring's room)", tx.Got(0))
	}
	for i, m := range out {
		if want := i < 7; m.Shared() != want || (i == 0 && !tail.Shared()) {
			t.Fatalf("packet %d: shared %v, want %v (refcnt %d)", i, m.Shared(), want, m.Refcnt())
		}
	}
	dpdk.FreeBulk(out[7:]) // refused: back to the pool at once
	in := make([]*dpdk.Mbuf, 16)
	var rx dpdk.Batch
	if _, err := rx.Add(b, 0, in); err != nil {
		t.Fatal(err)
	}
	if rx.Rx() != 7 {
		t.Fatalf("peer received %d, want 7", rx.Got(0))
	}
	dpdk.FreeBulk(rx.Pkts(0)[:3]) // the peer is done with the first three
	for i, m := range out[:7] {
		if want := i >= 3; m.Shared() != want {
			t.Fatalf("after the peer freed 3: packet %d shared %v, want %v", i, m.Shared(), want)
		}
	}
	if tail.Shared() {
		t.Error("the chained segment is still shared after the peer freed its packet")
	}
	if got := pool.InUse(); got != 8 { // 7 sent + the chained segment, all still ours
		t.Fatalf("%d mbufs in use, want 8", got)
	}
	dpdk.FreeBulk(out[:7]) // ours: the first three (and the tail) go back, the others are the peer's now
	dpdk.FreeBulk(rx.Pkts(0)[3:7])
	if pool.InUse() != 0 {
		t.Errorf("%d mbufs in use after both let go", pool.InUse())
	}
}
