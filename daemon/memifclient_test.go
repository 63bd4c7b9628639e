package daemon

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
)

// memifClient issues RPCs of sizes from 1 B to 1 MB (log-uniform), 8 at a
// time, and checks each response byte for byte. A tolerant one counts an
// RPC that fails (its peer gone) and goes on; a response that differs
// from its request is an error for both.
type memifClient struct {
	state    atomic.Value  // memifResult, for goroutines outside the loop
	ok, fail atomic.Uint64 // RPCs completed and failed, for the same
	tolerant bool
	maxSize  int // bytes (HOMA_TEST_MAX_SIZE; 1 MB)
	h        *host.Host
	shards   []*host.Host // its port's shards, h the first (set before the loop starts)
	port     *engine.Port
	dst      engine.Addr
	total    int
	next     int
	done     int
	sent     map[uint64][]byte
	rng      *rand.Rand
	err      error
}

func newMemifClient(h *host.Host, total int, tolerant bool) (*memifClient, error) {
	p, err := h.Endpoint().OpenClient()
	if err != nil {
		return nil, err
	}
	dst := netip.AddrFrom4([4]byte{10, 0, 0, 2})
	if os.Getenv("HOMA_TEST_V6") != "" {
		dst = netip.MustParseAddr("2001:db8::2")
	}
	c := &memifClient{h: h, port: p, dst: engine.Addr{IP: dst, Port: 99}, total: total,
		sent: map[uint64][]byte{}, rng: rand.New(rand.NewPCG(11, 11)), tolerant: tolerant, maxSize: 1_000_000}
	if n, err := strconv.Atoi(os.Getenv("HOMA_TEST_MAX_SIZE")); err == nil && n > 0 {
		c.maxSize = n
	}
	h.AddApp(host.AppFunc(c.run))
	return c, nil
}

func (c *memifClient) run(int64) {
	defer c.publish()
	if c.err != nil {
		return
	}
	for c.next < c.total && len(c.sent) < 8 {
		size := int(math.Exp(c.rng.Float64() * math.Log(float64(c.maxSize))))
		msg := make([]byte, max(size, 1))
		for i := range msg {
			msg[i] = byte(c.rng.Uint32())
		}
		id, err := c.port.Send(c.dst, msg)
		if err != nil && c.tolerant {
			c.fail.Add(1)
			c.next++
			c.done++
			break // again next pass
		}
		if err != nil {
			c.err = err
			return
		}
		c.sent[id] = msg
		c.next++
	}
	for m, ok := c.port.Receive(); ok; m, ok = c.port.Receive() {
		if m.Err != nil && c.tolerant {
			delete(c.sent, m.ID)
			c.fail.Add(1)
			c.done++
			continue
		}
		if m.Err != nil {
			c.err = fmt.Errorf("RPC %d: %w", m.ID, m.Err)
			return
		}
		if !bytes.Equal(m.Data, c.sent[m.ID]) {
			c.err = fmt.Errorf("RPC %d: response differs from the request (%d vs %d bytes)", m.ID, len(m.Data), len(c.sent[m.ID]))
			return
		}
		delete(c.sent, m.ID)
		c.ok.Add(1)
		c.done++
	}
}

// count is called from outside the loop.
func (c *memifClient) count() string {
	_, err := c.finished()
	return fmt.Sprintf("ok=%d failed=%d err=%v", c.ok.Load(), c.fail.Load(), err)
}

// memifResult is what the loop publishes for the process's main goroutine:
// with done, the host's summary and its shards' hand-offs, read on the
// loop.
type memifResult struct {
	done    bool
	err     error
	summary string
}

func (c *memifClient) publish() {
	if r, _ := c.state.Load().(memifResult); r.done || r.err != nil {
		return
	}
	if c.err != nil || c.done == c.total {
		r := memifResult{done: c.done == c.total, err: c.err, summary: strings.TrimSpace(c.h.Summary())}
		if hs := c.shards; len(hs) > 1 { // the port's shards share the loop's lcore
			r.summary += fmt.Sprintf(" shards %d handed %d", len(hs), hs[0].HandOff().Frames+hs[1].HandOff().Frames)
		}
		c.state.Store(r)
	}
}

// finished is called from outside the loop.
func (c *memifClient) finished() (bool, error) {
	r, _ := c.state.Load().(memifResult)
	return r.done, r.err
}

// summary is the client's host's summary once done; outside the loop.
func (c *memifClient) summary() string {
	r, _ := c.state.Load().(memifResult)
	return r.summary
}
