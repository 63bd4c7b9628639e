package pmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The memif traffic peer is this program run as `perf pmd-peer`: a memif
// client with two interfaces on the forwarder's socket. It sends 64-byte
// packets as fast as it can into id 0 and counts what arrives on id 1,
// printing its counters with a timestamp every 250 ms. A line "stop" on
// its standard input stops its loop (it answers "stopped"); it closes its
// ports and exits when its standard input closes.
//
// Neither side of a memif link may poll while the other disconnects (the
// PMD tears the rings down under the poller and crashes), so the order is:
// the peer stops polling, the forwarder stops, the peer leaves.

// memifPeer is the parent's handle on a running peer process.
type memifPeer struct {
	cmd     *exec.Cmd
	stopped chan struct{} // closed when the peer says "stopped"
	stdin   io.WriteCloser
	mu      sync.Mutex
	samples []peerSample
	stderr  strings.Builder
	readErr chan struct{}
	once    sync.Once
	err     error
}

type peerSample struct {
	t       time.Time
	rx      uint64
	refused uint64
}

func startMemifPeer(cfg *Config, sock string) (*memifPeer, error) {
	if cfg.Self == "" {
		return nil, fmt.Errorf("memif peer: the path of this program is unknown")
	}
	args := []string{"perf", "pmd-peer", "--socket", sock, "--burst", strconv.Itoa(cfg.Burst), "--cpu", strconv.Itoa(cfg.PeerCPU), "--"}
	args = append(args, dpdk.VirtualDeviceArgs(strconv.Itoa(cfg.PeerCPU), cfg.Mem, 512, fmt.Sprintf("homapeer%d", os.Getpid()))...)
	p := &memifPeer{cmd: exec.Command(cfg.Self, args...), readErr: make(chan struct{}), stopped: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start memif peer: %w", err)
	}
	ready := make(chan bool, 1)
	go p.read(out, ready)
	select {
	case ok := <-ready:
		if !ok {
			p.stop()
			return nil, fmt.Errorf("memif peer failed: %s", lastLines(p.stderr.String(), 5))
		}
	case <-time.After(20 * time.Second):
		p.stop()
		return nil, fmt.Errorf("memif peer did not connect within 20 s: %s", lastLines(p.stderr.String(), 5))
	}
	return p, nil
}

func (p *memifPeer) read(out io.Reader, ready chan<- bool) {
	defer close(p.readErr)
	sc := bufio.NewScanner(out)
	sent := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "ready" && !sent {
			ready <- true
			sent = true
			continue
		}
		if len(f) == 1 && f[0] == "stopped" {
			close(p.stopped)
			continue
		}
		if len(f) != 3 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		rx, _ := strconv.ParseUint(f[1], 10, 64)
		ref, _ := strconv.ParseUint(f[2], 10, 64)
		p.mu.Lock()
		p.samples = append(p.samples, peerSample{time.Unix(0, ns), rx, ref})
		p.mu.Unlock()
	}
	if !sent {
		ready <- false
	}
}

// rate returns the median receive rate in Mpps over one-second windows
// between from and to, and the packets the peer could not send then.
func (p *memifPeer) rate(from, to time.Time) (float64, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var in []peerSample
	for _, s := range p.samples {
		if !s.t.Before(from) && !s.t.After(to) {
			in = append(in, s)
		}
	}
	var rates []float64
	for i := 0; i+4 < len(in); i += 4 { // samples are 250 ms apart
		a, b := in[i], in[i+4]
		rates = append(rates, float64(b.rx-a.rx)/b.t.Sub(a.t).Seconds()/1e6)
	}
	if len(rates) == 0 && len(in) > 1 { // a window shorter than a second
		a, b := in[0], in[len(in)-1]
		rates = append(rates, float64(b.rx-a.rx)/b.t.Sub(a.t).Seconds()/1e6)
	}
	var refused uint64
	if len(in) > 1 {
		refused = in[len(in)-1].refused - in[0].refused
	}
	return perf.Median(rates), refused
}

// quiesce stops the peer's polling loop (its ports stay open) and waits
// until it has stopped.
func (p *memifPeer) quiesce() error {
	if _, err := io.WriteString(p.stdin, "stop\n"); err != nil {
		return fmt.Errorf("memif peer: %w", err)
	}
	select {
	case <-p.stopped:
		return nil
	case <-p.readErr:
		return fmt.Errorf("memif peer exited: %s", lastLines(p.stderr.String(), 5))
	case <-time.After(10 * time.Second):
		return fmt.Errorf("memif peer did not stop polling within 10 s")
	}
}

// stop closes the peer's input and waits for it to exit.
func (p *memifPeer) stop() error {
	p.once.Do(func() {
		p.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				p.err = fmt.Errorf("memif peer: %w: %s", err, lastLines(p.stderr.String(), 5))
			}
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-done
			p.err = fmt.Errorf("memif peer did not exit within 10 s")
		}
	})
	return p.err
}

// RunMemifPeer is the body of `perf pmd-peer`. EAL must be initialised.
func RunMemifPeer(sock string, burst, cpu int, stdout io.Writer, stdin io.Reader) error {
	pool, err := dpdk.NewPktMbufPool("pmd_peer", 8192, poolCache, dataRoom, dpdk.SocketIDAny)
	if err != nil {
		return err
	}
	var ports [2]*dpdk.Port
	for i := range 2 {
		name := fmt.Sprintf("net_memif_peer%d", i)
		p, err := dpdk.NewVdev(name, memifDevargs("client", i, sock))
		if err != nil {
			return err
		}
		if err := setupPort(p, pool); err != nil {
			return err
		}
		ports[i] = p
	}
	// Wait for both links: the forwarder (server) accepts the connections.
	deadline := time.Now().Add(15 * time.Second)
	for _, p := range ports {
		for {
			l, err := p.Link()
			if err == nil && l.Up {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("memif %s link not up within 15 s", p.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	g := &generator{pool: pool, tx: ports[0], rx: ports[1], out: make([]*dpdk.Mbuf, burst), in: make([]*dpdk.Mbuf, burst)}
	copy(g.frame[:], peerFrame())
	loop, err := lcore.Go(cpu, lcore.Config{Name: "pmd-peer", Pass: g.pass, Drain: g.drain})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	cmds := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			cmds <- strings.TrimSpace(sc.Text())
		}
		close(cmds)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var loopErr error
	for {
		select {
		case c, ok := <-cmds:
			if ok && c == "stop" && loop != nil {
				loopErr = loop.Stop(10 * time.Second)
				loop = nil
				fmt.Fprintln(stdout, "stopped")
			}
			if !ok { // standard input closed: leave
				if loop != nil {
					loopErr = loop.Stop(10 * time.Second)
				}
				for _, p := range ports {
					p.Stop()
				}
				return loopErr
			}
		case now := <-tick.C:
			fmt.Fprintf(stdout, "%d %d %d\n", now.UnixNano(), g.received.Load(), g.refused.Load())
		}
	}
}

// peerFrame is the 64-byte frame the peer sends: broadcast destination, a
// locally administered source, the local experimental EtherType, zeros.
func peerFrame() []byte {
	f := make([]byte, 64)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
	return f
}

type generator struct {
	pool              *dpdk.Mempool
	tx, rx            *dpdk.Port
	out, in           []*dpdk.Mbuf
	frame             [64]byte
	received, refused atomic.Uint64
}

func (g *generator) pass() int {
	sent := 0
	if g.pool.AllocBulk(g.out) == nil {
		for _, m := range g.out {
			copy(m.Append(64), g.frame[:])
		}
		sent = g.tx.TxBurst(0, g.out)
		if sent < len(g.out) {
			dpdk.FreeBulk(g.out[sent:])
			g.refused.Add(uint64(len(g.out) - sent))
		}
	}
	n := g.rx.RxBurst(0, g.in)
	dpdk.FreeBulk(g.in[:n])
	if n > 0 {
		g.received.Add(uint64(n))
	}
	m := g.tx.RxBurst(0, g.in) // nothing should come back on id 0; free it if it does
	dpdk.FreeBulk(g.in[:m])
	return sent + n + m
}

func (g *generator) drain() {
	for _, p := range []*dpdk.Port{g.rx, g.tx} {
		for n := p.RxBurst(0, g.in); n > 0; n = p.RxBurst(0, g.in) {
			dpdk.FreeBulk(g.in[:n])
		}
	}
}
