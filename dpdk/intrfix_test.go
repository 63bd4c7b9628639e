package dpdk_test

import (
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// A memif server survives clients that connect and leave at once: each
// such connection makes memif's accept path free its control channel
// with the channel's callback still registered (see intrfix.go), which
// without the repair panics EAL's interrupt thread ("Error adding fd N
// epoll_ctl, Bad file descriptor") and kills the process within a few
// connections. With it, every leftover callback is unregistered at the
// free, counted, and a real memif client still connects afterwards.
func TestIntrFix_memifServerSurvivesClientsLeavingAtOnce(t *testing.T) {
	dpdktest.Need(t)
	if !dpdk.IntrFixBound() {
		t.Fatal("the process's rte_intr_instance_free is not the repair's")
	}
	sock := filepath.Join(t.TempDir(), "memif.sock")
	pool, err := dpdk.NewPktMbufPool("intrfix", 1024, 0, 2048+uint16(dpdk.PktmbufHeadroom), dpdk.SocketIDAny)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Free()
	server, err := dpdk.NewVdev("net_memif_ifx", "role=server,id=0,socket="+sock+",socket-abstract=no")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { server.Close(); dpdk.RemoveVdev("net_memif_ifx") }()
	if err := server.Configure(1, 1, dpdk.PortConf{}); err != nil {
		t.Fatal(err)
	}
	if server.RxQueueSetup(0, 256, pool) != nil || server.TxQueueSetup(0, 256) != nil || server.Start() != nil {
		t.Fatal("memif server set-up failed")
	}
	before := dpdk.IntrFix().Unregistered
	for i := range 200 {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		unix.Close(fd)
		if i%20 == 19 {
			time.Sleep(20 * time.Millisecond) // let the interrupt thread rebuild its epoll set
		}
	}
	time.Sleep(100 * time.Millisecond)
	n := dpdk.IntrFix().Unregistered - before
	t.Logf("200 connections that left at once: %d leftover callbacks unregistered", n)
	if n == 0 {
		t.Error("no connection took memif's failing accept path; the test proves nothing")
	}
	client, err := dpdk.NewVdev("net_memif_ifxc", "role=client,id=0,socket="+sock+",socket-abstract=no")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { client.Close(); dpdk.RemoveVdev("net_memif_ifxc") }()
	if client.Configure(1, 1, dpdk.PortConf{}) != nil || client.RxQueueSetup(0, 256, pool) != nil ||
		client.TxQueueSetup(0, 256) != nil || client.Start() != nil {
		t.Fatal("memif client set-up failed")
	}
	for end := time.Now().Add(5 * time.Second); !server.LinkUp() || !client.LinkUp(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a real memif client did not connect after the quick ones")
		}
	}
}
