package dpdk_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

const memifPackets = 1_000_000

// memifArgs are the devargs of both ends of the test's memif link: a socket
// in the file system (the default abstract socket is per network namespace).
func memifArgs(role, sock string) string {
	return fmt.Sprintf("role=%s,id=0,socket=%s,socket-abstract=no", role, sock)
}

// TestMemif_twoProcessesMillionInOrder: a child process (memif server)
// sends a million sequence-numbered packets; this process (memif client)
// must receive every one, in order. The client is stopped last (a memif
// server may crash when its peer leaves first:
// docs/decisions.md#dpdk-facts-behind-the-code).
func TestMemif_twoProcessesMillionInOrder(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=memif-sender", "HOMA_CHILD_SOCK="+sock)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("sender did not start: %q", lines.Text())
	}

	pool := newPool(t, 8192, 0)
	p := newVdev(t, "net_memif_rx", memifArgs("client", sock))
	startPort(t, p, pool, 1, 1)
	pkts := make([]*dpdk.Mbuf, 64)
	next := uint64(0)
	deadline := time.Now().Add(90 * time.Second)
	for next < memifPackets && time.Now().Before(deadline) {
		n := p.RxBurst(0, pkts)
		for _, m := range pkts[:n] {
			d := m.Data()
			if len(d) != 64 {
				t.Fatalf("packet %d has %d bytes, want 64", next, len(d))
			}
			if seq := binary.BigEndian.Uint64(d[14:]); seq != next {
				t.Fatalf("got sequence %d, want %d (lost or reordered)", seq, next)
			}
			next++
		}
		dpdk.FreeBulk(pkts[:n])
	}
	if next != memifPackets {
		t.Fatalf("received %d of %d packets before the deadline", next, memifPackets)
	}
	st, _ := p.Stats()
	if st.IPackets != memifPackets {
		t.Errorf("port counted %d packets in, want %d", st.IPackets, memifPackets)
	}
	stdin.Close() // the sender exits when its standard input closes
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sender: %v (%s)", err, rest)
	}
	if !strings.Contains(string(rest), fmt.Sprintf("sent %d", memifPackets)) {
		t.Errorf("sender reported %q", rest)
	}
}

// memifSender is the child side: a memif server that sends memifPackets
// packets of 64 bytes, each holding its sequence number after a 14-byte
// Ethernet header, retrying whatever the ring does not take.
func memifSender() error {
	args := dpdktest.EALArgs()
	args[1] = "0" // one lcore is enough
	if _, err := dpdk.Init(args); err != nil {
		return err
	}
	pool, err := dpdk.NewPktMbufPool("send", 8192, 0, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	p, err := dpdk.NewVdev("net_memif_tx", memifArgs("server", os.Getenv("HOMA_CHILD_SOCK")))
	if err != nil {
		return err
	}
	if err := p.Configure(1, 1, dpdk.PortConf{}); err != nil {
		return err
	}
	if err := p.RxQueueSetup(0, 1024, pool); err != nil {
		return err
	}
	if err := p.TxQueueSetup(0, 1024); err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	fmt.Println("ready")
	pkts := make([]*dpdk.Mbuf, 32)
	seq := uint64(0)
	pending := 0 // pkts[:pending] were allocated and not yet taken
	for seq < memifPackets || pending > 0 {
		if pending == 0 {
			n := len(pkts)
			if rem := memifPackets - seq; rem < uint64(n) {
				n = int(rem)
			}
			if err := pool.AllocBulk(pkts[:n]); err != nil {
				return err
			}
			for _, m := range pkts[:n] {
				d := m.Append(64)
				clear(d)
				binary.BigEndian.PutUint16(d[12:], 0x88b5) // local experimental EtherType
				binary.BigEndian.PutUint64(d[14:], seq)
				seq++
			}
			pending = n
		}
		k := p.TxBurst(0, pkts[:pending])
		copy(pkts, pkts[k:pending])
		pending -= k
	}
	fmt.Printf("sent %d\n", seq)
	io.Copy(io.Discard, os.Stdin) // wait until the receiver is done
	return nil
}

// waitLink polls p's link until it is up (or down), or fails the test.
func waitLink(t *testing.T, p *dpdk.Port, up bool, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); p.LinkUp() != up; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: link up=%v after %v, want up=%v", p.Name, p.LinkUp(), timeout, up)
		}
	}
}

// A memif client whose server went away and came back stays down until
// it is redialled; Redial (on EAL's interrupt thread) brings it back, and
// packets flow again. Stop and Close of both ends, with the other end's
// teardown running on the interrupt thread, run there too.
func TestMemif_clientRedialsAfterServerRestart(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	pool := newPool(t, 4096, 0)
	server := newVdev(t, "net_memif_rds", memifArgs("server", sock))
	startPort(t, server, pool, 1, 1)
	client := newVdev(t, "net_memif_rdc", memifArgs("client", sock))
	startPort(t, client, pool, 1, 1)
	waitLink(t, server, true, 5*time.Second)
	waitLink(t, client, true, 5*time.Second)

	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	waitLink(t, client, false, 5*time.Second)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if client.LinkUp() {
		t.Fatal("the memif client connected again by itself")
	}
	if err := client.Redial(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		pending, err := client.RedialResult()
		if err != nil {
			t.Fatal(err)
		}
		if !pending {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the redial did not run within 5 s")
		}
	}
	if !client.Started() {
		t.Fatal("the port is not started after a redial")
	}
	waitLink(t, client, true, 5*time.Second)
	waitLink(t, server, true, 5*time.Second)

	pkts := make([]*dpdk.Mbuf, 8)
	got := 0
	for end := time.Now().Add(5 * time.Second); got < 100 && time.Now().Before(end); {
		if err := pool.AllocBulk(pkts[:1]); err != nil {
			t.Fatal(err)
		}
		clear(pkts[0].Append(64))
		if client.TxBurst(0, pkts[:1]) == 0 {
			dpdk.FreeBulk(pkts[:1])
		}
		n := server.RxBurst(0, pkts)
		got += n
		dpdk.FreeBulk(pkts[:n])
		server.TxBurst(0, nil)
	}
	if got < 100 {
		t.Fatalf("the server received %d packets after the redial, want 100", got)
	}
}

// LinkUp reads the link without allocating (a polling loop calls it).
func TestPort_linkUpAllocatesNothing(t *testing.T) {
	dpdktest.Need(t)
	pool := newPool(t, 256, 0)
	p := newVdev(t, "net_null_link", "")
	startPort(t, p, pool, 1, 1)
	if !p.LinkUp() {
		t.Fatal("net_null's link is down")
	}
	if allocs := testing.AllocsPerRun(100, func() { p.LinkUp() }); allocs != 0 {
		t.Errorf("LinkUp allocates %.1f times, want 0", allocs)
	}
}
