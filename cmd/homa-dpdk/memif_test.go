package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Two processes, each running the daemon's data path (a hostLoop: engine
// on mbufs, nicq, ARP) on a net_memif port, exchange RPCs. The child
// processes are this test binary, re-executed with memifRoleEnv set.
const memifRoleEnv = "HOMA_TEST_MEMIF_HOST"

// memifChild runs one host; it returns the exit code.
func memifChild(role string) int {
	err := runMemifHost(role, os.Getenv("HOMA_TEST_SOCK"), os.Getenv("HOMA_TEST_RPCS"), os.Getenv("HOMA_TEST_LOSS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1
	}
	return 0
}

func runMemifHost(role, sock, rpcsArg, lossArg string) error {
	memRole, last := "server", byte(2)
	if role == "client" {
		memRole, last = "client", 1
	}
	args := dpdktest.EALArgs()
	args[1] = strconv.Itoa(int(last) - 1) // one lcore each: CPU 0 or 1
	if _, err := dpdk.Init(args); err != nil {
		return err
	}
	pool, err := dpdk.NewPktMbufPool("memifhost", 16384, 0, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	p, err := dpdk.NewVdev("net_memif_h", fmt.Sprintf("role=%s,id=0,socket=%s,socket-abstract=no", memRole, sock))
	if err != nil {
		return err
	}
	if err := setupRingPort(p, pool, 1); err != nil {
		return err
	}
	fmt.Println("up")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if l, err := p.Link(); err == nil && l.Up {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("memif link down after 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	loss, _ := strconv.ParseFloat(lossArg, 64)
	_, clock, _ := newClock()
	pm, _ := nicq.NewMap(1)
	hc := hostConfig{port: p, pool: pool, ip: [4]byte{10, 0, 0, last}, mac: wire.MAC{2, 0, 10, 0, 0, last},
		txQueues: 1, prioMap: pm, linkBps: 10e9, engine: engine.DefaultConfig(), clock: clock, burst: 32}
	hc.arp.timeout, hc.arp.aging, hc.arp.retries = 20*time.Millisecond, time.Hour, 50
	hc.faults.drop, hc.faults.seed = loss, int64(last)
	h, err := newHostLoop(hc)
	if err != nil {
		return err
	}
	cmds := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(cmds)
	}()
	var app func() (bool, error)
	if role == "server" {
		srv, err := h.ep.Bind(99)
		if err != nil {
			return err
		}
		h.app = func(int64) {
			for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
				srv.Reply(m, m.Data)
			}
		}
		app = func() (bool, error) { return false, nil }
	} else {
		n, _ := strconv.Atoi(rpcsArg)
		c, err := newMemifClient(h, n)
		if err != nil {
			return err
		}
		app = c.finished
	}
	// Poll until the application is done (client) or told to stop, then
	// stop polling ("quiet") and leave when standard input closes.
	for polling := true; ; {
		select {
		case c, ok := <-cmds:
			if !ok {
				h.drain()
				return nil
			}
			if c == "stop" {
				polling = false
				fmt.Println("quiet")
			}
		default:
		}
		if !polling {
			time.Sleep(time.Millisecond)
			continue
		}
		h.pass()
		if done, err := app(); err != nil {
			return err
		} else if done {
			fmt.Printf("done %s\n", strings.TrimSpace(h.summary()))
			polling = false
		}
	}
}

// memifClient issues RPCs of sizes from 1 B to 1 MB (log-uniform), 8 at a
// time, and checks each response byte for byte.
type memifClient struct {
	h     *hostLoop
	port  *engine.Port
	dst   engine.Addr
	total int
	next  int
	done  int
	sent  map[uint64][]byte
	rng   *rand.Rand
	err   error
}

func newMemifClient(h *hostLoop, total int) (*memifClient, error) {
	p, err := h.ep.OpenClient()
	if err != nil {
		return nil, err
	}
	c := &memifClient{h: h, port: p, dst: engine.Addr{IP: [4]byte{10, 0, 0, 2}, Port: 99}, total: total,
		sent: map[uint64][]byte{}, rng: rand.New(rand.NewPCG(11, 11))}
	h.app = c.run
	return c, nil
}

func (c *memifClient) run(int64) {
	if c.err != nil {
		return
	}
	if ready, failed := c.h.peerReady(c.dst.IP); failed {
		c.err = fmt.Errorf("ARP for the server failed")
		return
	} else if !ready {
		return
	}
	for c.next < c.total && len(c.sent) < 8 {
		size := int(math.Exp(c.rng.Float64() * math.Log(1_000_000)))
		msg := make([]byte, max(size, 1))
		for i := range msg {
			msg[i] = byte(c.rng.Uint32())
		}
		id, err := c.port.Send(c.dst, msg)
		if err != nil {
			c.err = err
			return
		}
		c.sent[id] = msg
		c.next++
	}
	for m, ok := c.port.Receive(); ok; m, ok = c.port.Receive() {
		if m.Err != nil {
			c.err = fmt.Errorf("RPC %d: %w", m.ID, m.Err)
			return
		}
		if !bytes.Equal(m.Data, c.sent[m.ID]) {
			c.err = fmt.Errorf("RPC %d: response differs from the request (%d vs %d bytes)", m.ID, len(m.Data), len(c.sent[m.ID]))
			return
		}
		delete(c.sent, m.ID)
		c.done++
	}
}

func (c *memifClient) finished() (bool, error) { return c.done == c.total, c.err }

// memifProc is the parent's handle on a child host.
type memifProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startMemifProc(t *testing.T, role, sock string, rpcs int, loss float64) *memifProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memifRoleEnv+"="+role, "HOMA_TEST_SOCK="+sock,
		"HOMA_TEST_RPCS="+strconv.Itoa(rpcs), "HOMA_TEST_LOSS="+strconv.FormatFloat(loss, 'f', -1, 64))
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &memifProc{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

func (p *memifProc) expect(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			t.Fatalf("child said %q (exited: %v), want %q", l, !ok, prefix)
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("child did not say %q within %v", prefix, timeout)
	}
	return ""
}

func runMemifPair(t *testing.T, rpcs int, loss float64) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	server := startMemifProc(t, "server", sock, 0, loss)
	server.expect(t, "up", 20*time.Second)
	client := startMemifProc(t, "client", sock, rpcs, loss)
	client.expect(t, "up", 20*time.Second)
	done := client.expect(t, "done", 240*time.Second)
	t.Log(done)
	// Neither side may poll while the other leaves: quiet both, then the
	// memif server leaves first and the client last.
	client.stdin.Write([]byte("stop\n"))
	server.stdin.Write([]byte("stop\n"))
	server.expect(t, "quiet", 10*time.Second)
	server.stdin.Close()
	if err := server.cmd.Wait(); err != nil {
		t.Errorf("server: %v", err)
	}
	client.stdin.Close()
	if err := client.cmd.Wait(); err != nil {
		t.Errorf("client: %v", err)
	}
}

func TestMemifHosts_thousandRPCsByteExact(t *testing.T) { runMemifPair(t, 1000, 0) }

func TestMemifHosts_thousandRPCsWithLoss(t *testing.T) { runMemifPair(t, 1000, 0.02) }
