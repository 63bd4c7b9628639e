package homapeer

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

// WorkerPair is the client worker on 10.0.0.1 and the server worker,
// bound to port 99, on 10.0.0.2, both to be used from one goroutine.
type WorkerPair struct {
	Client, Server *client.Client
	Dst            client.Addr
}

// DialPair attaches both workers and checks that their regions take what
// the scenario will send: messages of maxSize bytes (the region's
// MaxMessage, from the daemon's protocol.max_message), inFlight bytes of
// them at once in the client's transmit arena (workers.max_bytes) and one
// in the server's. The receive
// pool (workers.pool_bytes) is not visible to a worker: demo/workers.go
// sizes it as the arena.
func DialPair(dir string, maxSize, inFlight int) (*WorkerPair, error) {
	return DialPairPort(dir, 99, maxSize, inFlight)
}

// DialPairPort is dialPair with the server worker bound to port (the
// rate scenario's workers each have a server port of their own).
func DialPairPort(dir string, port uint16, maxSize, inFlight int) (*WorkerPair, error) {
	// Spin for the whole wait, never sleep: a latency-critical worker
	// does, and it keeps the eventfd sleep path out of the figures.
	opt := client.Options{Spin: time.Hour}
	cli, err := client.Dial(filepath.Join(dir, "10.0.0.1.sock"), opt)
	if err != nil {
		return nil, err
	}
	srv, err := client.Dial(filepath.Join(dir, "10.0.0.2.sock"), opt)
	if err != nil {
		cli.Close()
		return nil, err
	}
	w := &WorkerPair{Client: cli, Server: srv, Dst: client.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: port}}
	if err := checkRegion(cli, maxSize, inFlight); err != nil {
		w.Close()
		return nil, err
	}
	if err := checkRegion(srv, maxSize, maxSize); err != nil {
		w.Close()
		return nil, err
	}
	if err := srv.Bind(port); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// checkRegion says whether c's region takes messages of maxSize bytes
// and has inFlight bytes of transmit arena.
func checkRegion(c *client.Client, maxSize, inFlight int) error {
	if m := c.MaxMessage(); m < maxSize {
		return fmt.Errorf("the daemon's worker regions take messages of up to %d bytes, the scenario sends %d (protocol.max_message, demo/workers.go)", m, maxSize)
	}
	if a := c.Stats().ArenaFree; a < uint64(inFlight) {
		return fmt.Errorf("the daemon's worker regions have %d bytes of transmit arena, the scenario keeps %d in flight (workers.max_bytes, demo/workers.go)", a, inFlight)
	}
	return nil
}

func (w *WorkerPair) Close() {
	w.Client.Close()
	w.Server.Close()
}

// RPC is one echo RPC of msg, one at a time on this goroutine: Send, the
// server worker's Receive and Reply with the same bytes, the client's
// Wait. It returns the response's length.
func (w *WorkerPair) RPC(msg []byte) (int, error) {
	id, err := w.Client.Send(w.Dst, msg)
	if err != nil {
		return 0, err
	}
	req, err := w.Server.Receive(10 * time.Second)
	if err != nil {
		return 0, fmt.Errorf("server worker: %w", err)
	}
	if req.Err != nil || !req.Request {
		return 0, fmt.Errorf("server worker received %+v", req)
	}
	err = w.Server.Reply(req, req.Data)
	req.Release()
	if err != nil {
		return 0, err
	}
	resp, err := w.Client.Wait(id, 10*time.Second)
	if err != nil {
		return 0, err
	}
	n := len(resp.Data)
	resp.Release()
	return n, nil
}
