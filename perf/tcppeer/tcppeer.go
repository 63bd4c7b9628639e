package tcppeer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The kernel TCP peer: a request/response server and client over
// TCP_NODELAY sockets, each message a 4-byte big-endian length then the
// bytes. The length's top bit asks for a 1-byte acknowledgement instead
// of an echo of the same bytes (the throughput scenario), so a message
// has up to 2^31 - 1 bytes (maxTCPMessage): 64 MB ones fit. The server
// serves each connection on a goroutine of its own (Go's net package
// waits for sockets through epoll: an epoll server with a goroutine per
// connection); each connection's buffer starts at 64 KiB and grows to the
// longest message it has read.

const ackFlag = 1 << 31

// maxTCPMessage is the longest message the length prefix can carry.
const maxTCPMessage = ackFlag - 1

// Server accepts connections on an ordinary goroutine and serves each
// on a goroutine of its own (rtt and throughput use one connection, rate
// one per outstanding RPC).
type Server struct {
	l     net.Listener
	Addr  string
	done  chan error     // the accept loop's end
	conns sync.WaitGroup // connections being served
	mu    sync.Mutex
	err   error // the first connection's error other than EOF
}

// StartServer listens on addr ("IP:0"), in network namespace netns
// when it is not "". Only the listening socket is made on a thread in the
// namespace (a socket keeps the namespace it was made in); accepting and
// serving run on an ordinary goroutine, neither locked to a thread nor
// pinned: in Go, a goroutine locked to its thread that blocks in a read is
// woken through a hand-off to that very thread, which cost about 70 µs a
// wake-up on a 2-vCPU VM (100-byte P50 80 µs locked and pinned, 13 µs free).
func StartServer(netns, addr string) (*Server, error) {
	s := &Server{done: make(chan error, 1)}
	err := perf.OnPinnedThread(-1, netns, func() error {
		l, err := net.Listen("tcp4", addr)
		if err != nil {
			return err
		}
		s.l, s.Addr = l, l.Addr().String()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("TCP server on %s: %w", addr, err)
	}
	go func() {
		for {
			c, err := s.l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil
				}
				s.done <- err
				return
			}
			s.conns.Add(1)
			go func() {
				defer s.conns.Done()
				if err := serveTCP(c.(*net.TCPConn)); err != nil && !errors.Is(err, io.EOF) {
					s.mu.Lock()
					if s.err == nil {
						s.err = err
					}
					s.mu.Unlock()
				}
			}()
		}
	}()
	return s, nil
}

// Close stops accepting and waits for the connections to end (their
// clients Close them first); it returns the first serving error.
func (s *Server) Close() error {
	s.l.Close()
	var err error
	select {
	case err = <-s.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("TCP server did not stop")
	}
	served := make(chan struct{})
	go func() { s.conns.Wait(); close(served) }()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("TCP server: connections still open 10 s after the listener closed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(err, s.err)
}

func serveTCP(c *net.TCPConn) error {
	defer c.Close()
	c.SetNoDelay(true)
	buf := make([]byte, 4+1<<16)
	ack := []byte{1}
	for {
		if _, err := io.ReadFull(c, buf[:4]); err != nil {
			return err
		}
		h := binary.BigEndian.Uint32(buf)
		n := int(h &^ ackFlag)
		if n > len(buf)-4 {
			buf = append(buf, make([]byte, n+4-len(buf))...)
		}
		if _, err := io.ReadFull(c, buf[4:4+n]); err != nil {
			return err
		}
		var err error
		if h&ackFlag != 0 {
			_, err = c.Write(ack)
		} else {
			_, err = c.Write(buf[:4+n]) // the same length and bytes back, one write
		}
		if err != nil {
			return err
		}
	}
}

// Serve runs fn on conns connections to a server along p (the server
// listening in p's server namespace, the connections dialled from its
// client one), then closes them and the server; it returns the first
// error.
func Serve(p Path, conns int, fn func(cs []*net.TCPConn) error) error {
	srv, err := StartServer(p.ServerNS, p.Listen)
	if err != nil {
		return err
	}
	var cs []*net.TCPConn
	for err == nil && len(cs) < conns {
		var c *net.TCPConn
		if c, err = Dial(p.ClientNS, srv.Addr); err != nil {
			err = fmt.Errorf("connection %d: %w", len(cs), err)
		} else {
			cs = append(cs, c)
		}
	}
	if err == nil {
		err = fn(cs)
	}
	for _, c := range cs {
		c.Close()
	}
	if cerr := srv.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s server: %w", p.Name, cerr)
	}
	return err
}

// Dial connects to addr with TCP_NODELAY from network namespace
// netns when it is not "" (the socket is made on a thread in it; it may
// then be used from any goroutine).
func Dial(netns, addr string) (*net.TCPConn, error) {
	var c net.Conn
	err := perf.OnPinnedThread(-1, netns, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, 5*time.Second)
		return err
	})
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	if err := tc.SetNoDelay(true); err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// Message is a request of size bytes (with its length prefix), 1 to
// maxTCPMessage.
func Message(size int, ack bool) []byte {
	if size < 1 || size > maxTCPMessage {
		panic(fmt.Sprintf("perf: a %d-byte TCP message: the length prefix carries 1..%d", size, maxTCPMessage))
	}
	m := make([]byte, 4+size)
	h := uint32(size)
	if ack {
		h |= ackFlag
	}
	binary.BigEndian.PutUint32(m, h)
	for i := 4; i < len(m); i++ {
		m[i] = byte(i*13 + 1)
	}
	return m
}

// Ask sends a request of size bytes from buf (4+size bytes at least,
// whose first 4 it frames) that asks for the 1-byte acknowledgement, and
// reads it.
func Ask(c net.Conn, buf []byte, size int) error {
	binary.BigEndian.PutUint32(buf, uint32(size)|ackFlag)
	if _, err := c.Write(buf[:4+size]); err != nil {
		return err
	}
	_, err := io.ReadFull(c, buf[:1])
	return err
}

// RPC sends req and reads the echo of the same length into resp.
func RPC(c *net.TCPConn, req, resp []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	_, err := io.ReadFull(c, resp[:len(req)])
	return err
}

// VethPair is two network namespaces joined by a veth pair: A holds
// 10.77.0.1/24, B 10.77.0.2/24.
type VethPair struct {
	A, B   string // namespace names
	AddrA  string
	AddrB  string
	device string
}

// Sh runs a command (ip, tc) and returns its output in the error when it
// fails.
func Sh(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewVethPair creates the namespaces and the veth pair, names unique to
// this process; on error it removes what it made.
func NewVethPair() (v *VethPair, err error) {
	id := fmt.Sprintf("%d", os.Getpid())
	v = &VethPair{A: "hdperfA-" + id, B: "hdperfB-" + id, AddrA: "10.77.0.1", AddrB: "10.77.0.2", device: "hdpa" + id}
	if len(v.device) > 15 {
		v.device = v.device[:15]
	}
	peer := "hdpb" + v.device[4:]
	RemoveStaleNetns()
	v.Remove()
	defer func() {
		if err != nil {
			v.Remove()
			v = nil
		}
	}()
	steps := [][]string{
		{"ip", "netns", "add", v.A},
		{"ip", "netns", "add", v.B},
		{"ip", "link", "add", v.device, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", v.device, "netns", v.A},
		{"ip", "link", "set", peer, "netns", v.B},
		{"ip", "-n", v.A, "addr", "add", v.AddrA + "/24", "dev", v.device},
		{"ip", "-n", v.B, "addr", "add", v.AddrB + "/24", "dev", peer},
		{"ip", "-n", v.A, "link", "set", "lo", "up"},
		{"ip", "-n", v.B, "link", "set", "lo", "up"},
		{"ip", "-n", v.A, "link", "set", v.device, "up"},
		{"ip", "-n", v.B, "link", "set", peer, "up"},
	}
	for _, s := range steps {
		if err := Sh(s...); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Remove deletes both namespaces (and with them the veth pair).
func (v *VethPair) Remove() {
	if v == nil {
		return
	}
	exec.Command("ip", "netns", "del", v.A).Run()
	exec.Command("ip", "netns", "del", v.B).Run()
	exec.Command("ip", "link", "del", v.device).Run()
}

// Path is one way of reaching the TCP server: loopback, or across the
// veth pair from namespace B to namespace A.
type Path struct {
	Name     string // "tcp-loopback", "tcp-veth"
	ServerNS string
	ClientNS string
	Listen   string
}

// RemoveStaleNetns deletes the namespaces of earlier runs whose process
// is gone (killed before it could clean up).
func RemoveStaleNetns() {
	ents, _ := os.ReadDir("/var/run/netns")
	for _, e := range ents {
		name := e.Name()
		var pid int
		if !strings.HasPrefix(name, "hdperfA-") && !strings.HasPrefix(name, "hdperfB-") {
			continue
		}
		if _, err := fmt.Sscanf(name[len("hdperfA-"):], "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			exec.Command("ip", "netns", "del", name).Run()
		}
	}
}

// Paths are the paths kernel TCP is measured on: loopback, and with
// veth a veth pair between two network namespaces, made here (remove
// deletes it). vethSkip says why there is no veth path ("" when there
// is one): not asked for, or why the pair could not be made.
func Paths(veth bool, prog *perf.Progress) (paths []Path, vethSkip string, remove func()) {
	paths = []Path{{Name: "tcp-loopback", Listen: "127.0.0.1:0"}}
	if !veth {
		return paths, "not asked for", func() {}
	}
	prog.Step("make the veth pair")
	v, err := NewVethPair()
	if err != nil {
		return paths, err.Error(), func() {}
	}
	paths = append(paths, Path{Name: "tcp-veth", ServerNS: v.A, ClientNS: v.B, Listen: v.AddrA + ":0"})
	return paths, "", v.Remove
}
