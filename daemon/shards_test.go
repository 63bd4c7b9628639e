package daemon

import (
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/rs/zerolog"
)

var shardSeq atomic.Int64

// Two ports of two shards each (ports[].lcores), joined by rings whose
// ports have one RX queue: every RPC of both client shards completes,
// the second shard of each port served through the first, and the
// daemon's hosts stay one per port.
func TestStart_portsOfTwoShards(t *testing.T) {
	dpdktest.Need(t)
	workers := dpdk.WorkerLcores()
	if len(workers) == 0 {
		t.Skip("no EAL worker lcore")
	}
	l := workers[0]
	name := fmt.Sprintf("dsh%d", shardSeq.Add(1))
	ports, rings, err := host.NewRingPorts(name, 16) // 2 shards x 8 TX queues
	defer host.CloseRingPorts(ports, rings)
	if err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
lcores: [%[1]d, %[1]d]
ports:
  - device: net_ring_%[2]s0
    address: 10.0.0.1/24
    lcores: [%[1]d, %[1]d]
    tx_queues: 8
    rx_queues: 1
  - device: net_ring_%[2]s1
    address: 10.0.0.2/24
    lcores: [%[1]d, %[1]d]
    tx_queues: 8
    rx_queues: 1
arp:
  timeout: 20ms
metrics:
  address: ""
workers:
  enabled: false
log:
  level: warn
`, l, name)
	path := t.TempDir() + "/shards.yaml"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := config.Load(config.Source{File: path})
	if err != nil {
		t.Fatal(err)
	}
	const perShard = 20
	var done atomic.Int64
	var failed atomic.Value
	prepare := func(ps [][]*host.Host) error {
		if len(ps) != 2 || len(ps[0]) != 2 || len(ps[1]) != 2 {
			return fmt.Errorf("shards %d ports: want 2 of 2", len(ps))
		}
		for _, s := range ps[1] {
			srv, err := s.Endpoint().Bind(99)
			if err != nil {
				return err
			}
			s.AddApp(host.AppFunc(func(int64) {
				for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
					srv.Reply(m, m.Data)
				}
			}))
		}
		dst := engine.Addr{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 99}
		for _, c := range ps[0] {
			cli, err := c.Endpoint().OpenClient()
			if err != nil {
				return err
			}
			sent := 0
			c.AddApp(host.AppFunc(func(int64) {
				for ; sent < perShard; sent++ {
					if _, err := cli.Send(dst, make([]byte, 1000+sent*500)); err != nil {
						failed.Store(err)
						return
					}
				}
				for m, ok := cli.Receive(); ok; m, ok = cli.Receive() {
					if m.Err != nil {
						failed.Store(m.Err)
					}
					done.Add(1)
				}
			}))
		}
		return nil
	}
	d, err := Start(spec, zerolog.New(os.Stderr).Level(zerolog.WarnLevel), Options{PrepareShards: prepare, SkipEAL: true})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for done.Load() < 2*perShard && failed.Load() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.StopLoops(); err != nil {
		t.Error(err)
	}
	if e := failed.Load(); e != nil {
		t.Errorf("an RPC failed: %v", e)
	}
	if n := done.Load(); n != 2*perShard {
		t.Errorf("%d of %d RPCs completed", n, 2*perShard)
	}
	if n := len(d.Hosts()); n != 2 {
		t.Errorf("%d hosts: want one per port", n)
	}
	for i, hs := range d.shards {
		if hs[0].HandOff().Frames == 0 {
			t.Errorf("port %d: shard 0 handed shard 1 nothing: shard 1 did no work", i)
		}
	}
	if err := d.StopPorts(); err != nil {
		t.Error(err)
	}
}
