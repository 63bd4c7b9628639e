package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
	"github.com/homa-dpdk/homa-dpdk/engine"
)

// A Go worker on each of two daemons joined by net_memif: 10,000 RPCs of
// sizes from 1 B to 100 KB, 8 outstanding, each response byte-exact.
func TestMemifHosts_workers10000RPCs(t *testing.T) { memifWorkerRPCs(t, 1, 10_000) }

// Both daemons' ports as two shards (HOMA_TEST_SHARDS=2): two server and
// two client workers a side, each worker on a shard of its own (the
// least loaded when it attached), every client sending to both servers'
// ports. Every RPC completes byte-exact; the clients' ids show each
// lives on one shard, the two on different ones (an unsharded port's ids
// would name both shards by turns).
func TestMemifHosts_workersOnTwoShards(t *testing.T) {
	t.Setenv("HOMA_TEST_SHARDS", "2")
	shards := memifWorkerRPCs(t, 2, 4_000)
	if len(shards[0]) != 1 || len(shards[1]) != 1 || maps.Equal(shards[0], shards[1]) {
		t.Errorf("the client workers' RPC ids name shards %v and %v: want one each, not the same", shards[0], shards[1])
	}
}

// Workers on both daemons, their receive copies (into the workers' pools)
// on a copier thread: every RPC byte-exact, none delivered before its
// bytes are in (the fence), no copy into a region let go.
func TestMemifHosts_workersWithACopier(t *testing.T) {
	t.Setenv("HOMA_TEST_COPIER", "0")
	memifWorkerRPCs(t, 2, 4_000)
}

// memifWorkerRPCs runs total RPCs from pairs client workers on one daemon
// to pairs echoing server workers (ports 100 and up) on the other, each
// client sending to every server in turn, 8 outstanding, and returns the
// shards (of 2) each client's RPC ids name.
func memifWorkerRPCs(t *testing.T, pairs, total int) []map[int]bool {
	dir := t.TempDir()
	srvSock, cliSock := filepath.Join(dir, "server.sock"), filepath.Join(dir, "client.sock")
	serverD, clientD := startMemifDaemons(t, 0, 0, srvSock, cliSock, nil, nil)

	stop := make(chan struct{})
	echoDone := make(chan error, pairs)
	var srvs []*client.Client
	for k := range pairs {
		srv, err := client.Dial(srvSock, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Bind(uint16(100 + k)); err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, srv)
		go func() { echoDone <- echoWorker(srv, stop) }() // a Client is one goroutine's
	}
	start := time.Now()
	shards := make([]map[int]bool, pairs)
	var wg sync.WaitGroup
	for k := range pairs {
		cli, err := client.Dial(cliSock, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cli.Close()
			ids, err := clientWorkerRPCs(cli, pairs, total/pairs, uint64(k))
			if err != nil {
				t.Errorf("client worker %d: %v", k, err)
			}
			shards[k] = map[int]bool{}
			for _, id := range ids {
				shards[k][engine.ShardOfID(id, 2)] = true
			}
			t.Logf("client worker %d stats: %+v", k, cli.Stats())
		}()
	}
	wg.Wait()
	t.Logf("%d RPCs through %d worker pairs in %v", total, pairs, time.Since(start).Round(time.Millisecond))
	close(stop)
	for range pairs {
		if err := <-echoDone; err != nil {
			t.Errorf("server worker: %v", err)
		}
	}
	for _, srv := range srvs {
		srv.Close()
	}
	stopMemifDaemons(t, serverD, clientD)
	return shards
}

// echoWorker answers every request with its own bytes until stop closes.
func echoWorker(srv *client.Client, stop chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		m, err := srv.Receive(100 * time.Millisecond)
		if errors.Is(err, client.ErrWaitTimeout) {
			continue
		}
		if err != nil {
			return err
		}
		err = srv.Reply(m, m.Data)
		m.Release()
		if err != nil {
			return err
		}
	}
}

// clientWorkerRPCs sends total RPCs of sizes from 1 B to 100 KB
// (log-uniform, seeded by seed), to ports 100..100+servers-1 in turn, 8
// outstanding, checking each response byte for byte; it returns the RPCs'
// ids.
func clientWorkerRPCs(cli *client.Client, servers, total int, seed uint64) ([]uint64, error) {
	return workerRPCs(cli, rpcLoad{servers: servers, total: total, seed: seed, maxSize: 100_000, window: 8})
}

// rpcLoad is what workerRPCs sends: total RPCs of sizes from 1 B to
// maxSize (log-uniform, seeded by seed) to ports 100..100+servers-1 in
// turn, window outstanding.
type rpcLoad struct {
	servers, total  int
	seed            uint64
	maxSize, window int
	// retries is how often one message is sent again, as a new RPC,
	// after its RPC timed out (a client's retry; 0: a timeout fails the
	// load); timedOut counts those retries.
	retries  int
	timedOut *int
}

// workerRPCs sends l's RPCs from cli, checking each response byte for
// byte; it returns the RPCs' ids.
func workerRPCs(cli *client.Client, l rpcLoad) ([]uint64, error) {
	rng := rand.New(rand.NewPCG(5, 10+l.seed))
	servers, total, window := l.servers, l.total, l.window
	type pending struct {
		id    uint64
		dst   client.Addr
		msg   []byte
		tries int
	}
	var inflight []pending
	var ids []uint64
	sent, done := 0, 0
	for done < total {
		for sent < total && len(inflight) < window {
			size := int(math.Exp(rng.Float64() * math.Log(float64(l.maxSize))))
			msg := make([]byte, max(size, 1))
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			dst := client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: uint16(100 + sent%servers)}
			id, err := cli.Send(dst, msg)
			if err != nil {
				return ids, fmt.Errorf("send %d: %w", sent, err)
			}
			inflight = append(inflight, pending{id, dst, msg, 0})
			ids = append(ids, id)
			sent++
		}
		p := inflight[0]
		inflight = inflight[1:]
		resp, err := cli.Wait(p.id, 30*time.Second)
		if errors.Is(err, client.ErrTimeout) && p.tries < l.retries {
			*l.timedOut++
			if p.id, err = cli.Send(p.dst, p.msg); err == nil {
				p.tries++
				inflight = append(inflight, p)
				ids = append(ids, p.id)
				continue
			}
		}
		if err != nil {
			return ids, fmt.Errorf("RPC %d (%d bytes): %w", done, len(p.msg), err)
		}
		if !bytes.Equal(resp.Data, p.msg) {
			return ids, fmt.Errorf("RPC %d: %d-byte response differs from the %d-byte request", done, len(resp.Data), len(p.msg))
		}
		resp.Release()
		done++
	}
	return ids, nil
}

// A daemon whose peer stopped polling (its loops quiet, its port up) stops
// at once even with a worker's payloads queued for that peer: more than
// the memif ring holds, so they can never leave.
func TestMemifHosts_workerStopsWhilePeerQuiet(t *testing.T) {
	dir := t.TempDir()
	srvSock := filepath.Join(dir, "server.sock")
	serverD, clientD := startMemifDaemons(t, 10, 0, srvSock, "", nil, nil)
	clientD.expect(t, "done", 60*time.Second) // each daemon knows the other's MAC now
	clientD.stdin.Write([]byte("stop\n"))
	clientD.expect(t, "quiet", 10*time.Second)

	w, err := client.Dial(srvSock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 1}), Port: 99}
	msg := make([]byte, 100_000)
	for i := range 50 { // their unscheduled bytes alone are thousands of packets
		if _, err := w.Send(dst, msg); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	serverD.stdin.Write([]byte("stop\n"))
	serverD.expect(t, "quiet", 10*time.Second)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the daemon took %v to quiet its loops", d)
	}
	w.Close()
	serverD.stdin.Close()
	if err := serverD.waitAll(); err != nil {
		t.Errorf("server: %v", err)
	}
	clientD.stdin.Close()
	if err := clientD.waitAll(); err != nil {
		t.Errorf("client: %v", err)
	}
}
