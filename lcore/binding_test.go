package lcore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/lcore"
)

// TestBinding_pollNullPort is docs/design.md's example of the binding:
// a port made, configured and started, and a loop on an EAL worker lcore
// receiving its bursts and freeing them. net_null makes packets out of
// nothing, so the loop sees some at once.
func TestBinding_pollNullPort(t *testing.T) {
	w := workerLcore(t)
	if err := pollNullPort(w, "net_null_doc"); err != nil {
		t.Fatal(err)
	}
}

func pollNullPort(w uint, name string) error {
	// #region binding
	pool, err := dpdk.NewPktMbufPool("rx", 8192, 256, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		return err // *dpdk.Error: rte_errno, its text, and the lines DPDK logged
	}
	defer pool.Free()
	port, err := dpdk.NewVdev(name, "") // or dpdk.PortByName for a device given to EAL
	if err != nil {
		return err
	}
	defer dpdk.RemoveVdev(name)
	if err := port.Configure(1, 1, dpdk.PortConf{}); err != nil {
		return err
	}
	if err := port.RxQueueSetup(0, 1024, pool); err != nil {
		return err
	}
	if err := port.TxQueueSetup(0, 1024); err != nil {
		return err
	}
	if err := port.Start(); err != nil {
		return err
	}
	defer port.Stop()

	bufs := make([]*dpdk.Mbuf, 32)
	loop, err := lcore.Launch(w, lcore.Config{
		Name: "rx",
		Pass: func() int {
			n := port.RxBurst(0, bufs) // one cgo call, no allocation
			dpdk.FreeBulk(bufs[:n])
			return n
		},
		Idle: lcore.Idle{Kind: lcore.Adaptive},
	})
	if err != nil {
		return err
	}
	time.Sleep(100 * time.Millisecond)
	if err := loop.Stop(time.Second); err != nil {
		return err
	}
	fmt.Printf("%d packets received and freed\n", loop.Stats().Packets)
	// #endregion
	return nil
}
