package pmd

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
	"github.com/homa-dpdk/homa-dpdk/perf"
)

const (
	poolSize    = 16384
	poolCache   = 250
	descriptors = 1024
	dataRoom    = 2048 + 128
)

var poolSeq int

func newMempool() (*dpdk.Mempool, error) {
	poolSeq++
	return dpdk.NewPktMbufPool(fmt.Sprintf("pmd_fwd%d", poolSeq), poolSize, poolCache, dataRoom, dpdk.SocketIDAny)
}

// forwarder is our io-forwarding loop between two ports: every packet
// received on one port is sent on the other, after its Ethernet header is
// read in Go (so the benchmark exercises the Go data path, not only the
// burst calls). A pass makes one cgo call (dpdk.TxRx): it sends what the
// previous pass received, on both ports, then receives on both; what a TX
// queue does not take is freed and counted, as testpmd's io mode does.
type forwarder struct {
	ports   [2]*dpdk.Port
	rx, tx  dpdk.Batch
	bufs    [2][]*dpdk.Mbuf
	sink    uint64 // folds the headers read, so the reads are not optimised away
	dropped uint64 // packets a TX queue did not take (freed)
}

func newForwarder(ports [2]*dpdk.Port, burst int) (*forwarder, error) {
	f := &forwarder{ports: ports}
	for i := range 2 {
		f.bufs[i] = make([]*dpdk.Mbuf, burst)
		// Entry i receives on port i into bufs[i] and sends bufs[i] on the
		// other port.
		if _, err := f.rx.Add(ports[i], 0, f.bufs[i]); err != nil {
			return nil, err
		}
		if _, err := f.tx.Add(ports[i^1], 0, f.bufs[i]); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *forwarder) pass() int {
	freed, total := dpdk.TxRx(&f.tx, &f.rx)
	f.dropped += uint64(freed)
	if total == 0 {
		return 0
	}
	sink := uint64(0) // a local: adding into f.sink per packet would chain stores
	for i := range 2 {
		for _, m := range f.rx.Pkts(i) {
			if d := m.Data(); len(d) >= 14 {
				sink += uint64(binary.BigEndian.Uint16(d[12:14])) ^ uint64(d[0])
			}
		}
		f.tx.SetCount(i, f.rx.Got(i)) // sent at the start of the next pass
	}
	f.sink += sink
	return total
}

// drain sends what the last pass left, then frees whatever the ports still
// hold for us (the loop-back rings of net_ring keep packets circulating).
func (f *forwarder) drain() {
	f.dropped += uint64(f.tx.TxOrFree())
	for range 1000 {
		if f.rx.Rx() == 0 {
			return
		}
		for i := range 2 {
			dpdk.FreeBulk(f.rx.Pkts(i))
		}
	}
}

var vdevSeq int

// vdevArgs returns the two devices' names and arguments for a device kind.
func vdevArgs(dev, sock string) (names, args [2]string) {
	vdevSeq++
	for i := range 2 {
		names[i] = fmt.Sprintf("%s_pmd%d_%d", deviceNames[dev], vdevSeq, i)
		switch dev {
		case "null":
			args[i] = "size=64"
		case "memif":
			args[i] = memifDevargs("server", i, sock)
		}
	}
	return names, args
}

func memifDevargs(role string, id int, sock string) string {
	return fmt.Sprintf("role=%s,id=%d,socket=%s,socket-abstract=no", role, id, sock)
}

// runOurs runs our forwarder once on dev and returns its rate in Mpps and,
// for memif, how many packets the peer could not send.
func (cfg *Config) runOurs(dev string) (_ float64, _ uint64, err error) {
	pool, err := newMempool()
	if err != nil {
		return 0, 0, err
	}
	defer pool.Free()
	sock, cleanup, err := memifSocket(dev)
	if err != nil {
		return 0, 0, err
	}
	defer cleanup()
	names, args := vdevArgs(dev, sock)
	var ports [2]*dpdk.Port
	for i := range 2 {
		p, err := dpdk.NewVdev(names[i], args[i])
		if err != nil {
			return 0, 0, err
		}
		defer dpdk.RemoveVdev(names[i])
		if err := setupPort(p, pool); err != nil {
			return 0, 0, err
		}
		ports[i] = p
	}
	f, err := newForwarder(ports, cfg.Burst)
	if err != nil {
		return 0, 0, err
	}
	if dev == "ring" { // like testpmd --tx-first: one burst per port in flight
		for _, p := range ports {
			if err := injectBurst(p, pool, cfg.Burst); err != nil {
				return 0, 0, err
			}
		}
	}
	// The loop starts first and the peer joins a polling forwarder, as it
	// does with testpmd.
	loop, err := lcore.Launch(cfg.FwdLcore, lcore.Config{Name: "pmd-fwd", Pass: f.pass, Drain: f.drain})
	if err != nil {
		return 0, 0, err
	}
	var peer *memifPeer
	if dev == "memif" {
		if peer, err = startMemifPeer(cfg, sock); err != nil {
			loop.Stop(10 * time.Second)
			return 0, 0, err
		}
		defer peer.stop()
	}
	start := time.Now()
	var rate float64
	var refused uint64
	if peer != nil {
		time.Sleep(cfg.Warmup + cfg.Measure + 500*time.Millisecond)
		rate, refused = peer.rate(start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Measure))
	} else {
		rate, err = sampleTx(f.ports[:], cfg.Warmup, cfg.Measure)
	}
	if peer != nil {
		if qerr := peer.quiesce(); qerr != nil && err == nil {
			err = qerr
		}
	}
	if serr := loop.Stop(10 * time.Second); serr != nil && err == nil {
		err = serr
	}
	for _, p := range f.ports { // the memif server stops before its client
		p.Stop()
	}
	if peer != nil {
		if perr := peer.stop(); perr != nil && err == nil {
			err = perr
		}
	}
	return rate, refused, err
}

// memifSocket returns, for memif, a fresh socket path for the run and the
// function that removes it; for other devices, "".
func memifSocket(dev string) (string, func(), error) {
	if dev != "memif" {
		return "", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "homa-pmd")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "memif.sock"), func() { os.RemoveAll(dir) }, nil
}

func setupPort(p *dpdk.Port, pool *dpdk.Mempool) error {
	if err := p.Configure(1, 1, dpdk.PortConf{}); err != nil {
		return err
	}
	if err := p.RxQueueSetup(0, descriptors, pool); err != nil {
		return err
	}
	if err := p.TxQueueSetup(0, descriptors); err != nil {
		return err
	}
	return p.Start()
}

// injectBurst sends one burst of 64-byte packets on p.
func injectBurst(p *dpdk.Port, pool *dpdk.Mempool, n int) error {
	bufs := make([]*dpdk.Mbuf, n)
	if err := pool.AllocBulk(bufs); err != nil {
		return err
	}
	for _, m := range bufs {
		clear(m.Append(64))
	}
	if k := p.TxBurst(0, bufs); k < n {
		dpdk.FreeBulk(bufs[k:])
	}
	return nil
}

// sampleTx waits out the warm-up, then samples the ports' transmitted
// packets once a second and returns the median rate in Mpps.
func sampleTx(ports []*dpdk.Port, warmup, measure time.Duration) (float64, error) {
	time.Sleep(warmup)
	total := func() (uint64, error) {
		var sum uint64
		for _, p := range ports {
			st, err := p.Stats()
			if err != nil {
				return 0, err
			}
			sum += st.OPackets
		}
		return sum, nil
	}
	prev, err := total()
	if err != nil {
		return 0, err
	}
	prevT := time.Now()
	var rates []float64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range int(measure / time.Second) {
		<-tick.C
		cur, err := total()
		if err != nil {
			return 0, err
		}
		now := time.Now()
		rates = append(rates, float64(cur-prev)/now.Sub(prevT).Seconds()/1e6)
		prev, prevT = cur, now
	}
	return perf.Median(rates), nil
}
