package host

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

// In a loop of two hosts on a ring pair, a frame that a sends in its pass
// reaches b in b's pass right after, in the same loop iteration (as with
// two PassAt calls: the pipeline adds no latency), and b's answer
// reaches a at the start of the next iteration. Drain sends what b
// prepared, and nothing leaks (pairHosts checks the pool).
func TestPipeline_frameReachesNextHostInSameIteration(t *testing.T) {
	a, b := ringHosts(t, 2, 0)
	p := NewPipeline(a, b)
	buf := make([]*dpdk.Mbuf, 1)
	sendEcho(t, a, b, buf)
	p.Pass()
	if b.stack.EchoRequests != 1 {
		t.Fatalf("after one iteration b counted %d echo requests, want 1 (a's frame in b's pass of the same iteration)", b.stack.EchoRequests)
	}
	if !b.txPending || a.txPending {
		t.Errorf("after one iteration: b's reply prepared %v (want true), a's TX pending %v (want false)", b.txPending, a.txPending)
	}
	if st := a.sched.Stats(0); st.Sent != 1 {
		t.Errorf("a's queue 0 sent %d, want 1 (completed in b's stage)", st.Sent)
	}
	p.Pass()
	if got := a.rx.Got(0); got != 1 || b.txPending {
		t.Fatalf("second iteration: a received %d frames in its crossing (want b's reply), b pending %v", got, b.txPending)
	}
	if st := b.sched.Stats(0); st.Sent != 1 {
		t.Errorf("b's queue 0 sent %d, want 1", st.Sent)
	}
	// A reply left prepared at the end goes out at Drain.
	sendEcho(t, a, b, buf)
	p.Pass()
	if !b.txPending {
		t.Fatal("b's second reply is not pending")
	}
	p.Drain()
	if st := b.sched.Stats(0); b.txPending || st.Sent != 2 {
		t.Errorf("after Drain: b pending %v, sent %d; want false, 2", b.txPending, st.Sent)
	}
}

// A loop of one host sends a pass's bursts in the next pass's crossing,
// or at Flush (a loop about to sleep).
func TestPipeline_singleHostSendsInNextPassOrAtFlush(t *testing.T) {
	a, b := ringHosts(t, 1, 0)
	p := NewPipeline(a)
	buf := make([]*dpdk.Mbuf, 1)
	sendEcho(t, a, b, buf)
	if n := p.Pass(); n != 0 || !a.txPending {
		t.Fatalf("the pass returned %d, TX pending %v; want 0 (nothing sent yet), true", n, a.txPending)
	}
	b.Pass()
	if b.stack.EchoRequests != 0 {
		t.Fatal("b received the echo request before a's next pass")
	}
	if n := p.Pass(); n != 1 || a.sched.Stats(0).Sent != 1 { // sends it first
		t.Fatalf("a's next pass returned %d, sent %d; want 1, 1", n, a.sched.Stats(0).Sent)
	}
	b.Pass()
	if b.stack.EchoRequests != 1 {
		t.Fatalf("b counted %d echo requests, want 1", b.stack.EchoRequests)
	}
	if n := p.Pass(); n != 1 { // b's reply
		t.Fatalf("a pass received %d, want b's reply", n)
	}
	sendEcho(t, a, b, buf)
	p.Pass()
	if n := p.Flush(); n != 1 || a.txPending {
		t.Fatalf("Flush sent %d, TX pending %v; want 1, false", n, a.txPending)
	}
	if n := p.Flush(); n != 0 {
		t.Errorf("a second Flush sent %d", n)
	}
	b.Pass()
	if b.stack.EchoRequests != 2 {
		t.Errorf("b counted %d echo requests, want 2", b.stack.EchoRequests)
	}
}

// A pipelined iteration of two hosts exchanging a frame and its answer
// (RX, the host stack, TX bursts, the crossing, TX completion) allocates
// nothing.
func TestPipeline_passAllocatesNothing(t *testing.T) {
	a, b := ringHosts(t, 8, 0)
	runRPCs(t, a, b, []int{100}) // ARP resolved, server bound, loops warm
	a.apps, b.apps = nil, nil
	p := NewPipeline(a, b)
	buf := make([]*dpdk.Mbuf, 1)
	for range 10 {
		p.Pass()
	}
	before := b.stack.EchoRequests
	allocs := testing.AllocsPerRun(1000, func() {
		sendEcho(t, a, b, buf)
		p.Pass()
		p.Pass()
	})
	if allocs != 0 {
		t.Errorf("a pipelined iteration allocates %.1f times, want 0", allocs)
	}
	if got := b.stack.EchoRequests - before; got != 1001 { // AllocsPerRun runs once more to warm up
		t.Errorf("b answered %d echo requests, want 1001", got)
	}
}
