package daemon

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// A Go worker on each of two daemons joined by net_memif: 10,000 RPCs of
// sizes from 1 B to 100 KB, 8 outstanding, each response byte-exact.
func TestMemifHosts_workers10000RPCs(t *testing.T) {
	dir := t.TempDir()
	srvSock, cliSock := filepath.Join(dir, "server.sock"), filepath.Join(dir, "client.sock")
	serverD, clientD := startMemifDaemons(t, 0, 0, srvSock, cliSock, nil, nil)

	srv, err := client.Dial(srvSock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bind(100); err != nil {
		t.Fatal(err)
	}
	echoDone := make(chan error, 1)
	stop := make(chan struct{})
	go func() { // the server worker (a Client is one goroutine's): echo until stopped
		for {
			select {
			case <-stop:
				echoDone <- nil
				return
			default:
			}
			m, err := srv.Receive(100 * time.Millisecond)
			if errors.Is(err, client.ErrWaitTimeout) {
				continue
			}
			if err != nil {
				echoDone <- err
				return
			}
			err = srv.Reply(m, m.Data)
			m.Release()
			if err != nil {
				echoDone <- err
				return
			}
		}
	}()

	cli, err := client.Dial(cliSock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 100}
	rng := rand.New(rand.NewPCG(5, 10))
	const total, window = 10_000, 8
	type pending struct {
		id  uint64
		msg []byte
	}
	var inflight []pending
	sent, done := 0, 0
	start := time.Now()
	for done < total {
		for sent < total && len(inflight) < window {
			size := int(math.Exp(rng.Float64() * math.Log(100_000)))
			msg := make([]byte, max(size, 1))
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			id, err := cli.Send(dst, msg)
			if err != nil {
				t.Fatalf("send %d: %v", sent, err)
			}
			inflight = append(inflight, pending{id, msg})
			sent++
		}
		p := inflight[0]
		inflight = inflight[1:]
		resp, err := cli.Wait(p.id, 30*time.Second)
		if err != nil {
			t.Fatalf("RPC %d (%d bytes): %v", done, len(p.msg), err)
		}
		if !bytes.Equal(resp.Data, p.msg) {
			t.Fatalf("RPC %d: %d-byte response differs from the %d-byte request", done, len(resp.Data), len(p.msg))
		}
		resp.Release()
		done++
	}
	t.Logf("%d RPCs through workers in %v", total, time.Since(start).Round(time.Millisecond))
	st := cli.Stats()
	cli.Close()
	close(stop)
	if err := <-echoDone; err != nil {
		t.Errorf("server worker: %v", err)
	}
	srv.Close()
	t.Logf("client worker stats: %+v", st)
	stopMemifDaemons(t, serverD, clientD)
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
