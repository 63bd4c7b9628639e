package daemon

import (
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// A daemon whose port is a memif client, started before its server (two
// `homa-dpdk run` started in either order), dials again while its link
// phase waits instead of failing at once in phase ports ("start port 0:
// Operation not permitted"): it comes up when the server does, and RPCs
// flow.
func TestDialClients_serverStartedSecond(t *testing.T) {
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("two daemons need two CPUs")
	}
	sock := filepath.Join(t.TempDir(), "memif.sock")
	client := startDaemonChild(t, "", "client", "HOMA_TEST_SOCK="+sock, 100, 0)
	time.Sleep(1500 * time.Millisecond) // its first dial, and a redial or two, fail
	server := startDaemonChild(t, "", "server", "HOMA_TEST_SOCK="+sock, 0, 0)
	server.expect(t, "up", 20*time.Second)
	client.expect(t, "up", 20*time.Second)
	t.Log(client.expect(t, "done", 60*time.Second))
	client.terminate(t, "the client", 5*time.Second)
	server.terminate(t, "the server", 5*time.Second)
	if s := client.stderr.String(); !strings.Contains(s, "Failed to connect socket") {
		t.Errorf("the client's first dial did not fail (the server was up first?); its stderr:\n%s", s)
	}
}

// A memif client whose server never comes up fails the link phase at its
// end, naming the socket and the server it waits for.
func TestDialClients_noServerNamesTheSocket(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	client := startDaemonChild(t, "", "client", "HOMA_TEST_SOCK="+sock, 1, 0)
	err := client.waitAll()
	if err == nil {
		t.Fatal("the client came up with no server")
	}
	s := client.stderr.String()
	for _, want := range []string{"start-up phase link", "no memif server accepted its dial on " + sock + " within 10s",
		"is a memif client on " + sock, "role=server"} {
		if !strings.Contains(s, want) {
			t.Errorf("its error does not say %q; stderr:\n%s", want, s)
		}
	}
}

// A memif client whose dial is taken and then dropped without a
// handshake — as a memif server does while its own port is not yet
// started (EAL made it and it listens, but its daemon is still making its
// mbuf pools: two daemons started at once) — dials again while its link
// phase waits, and comes up with the real server started after. Here the
// dropping server is a plain listener of the test's that closes each
// connection.
func TestDialClients_redialAfterDroppedConnection(t *testing.T) {
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("two daemons need two CPUs")
	}
	sock := filepath.Join(t.TempDir(), "memif.sock")
	l, err := net.Listen("unixpacket", sock)
	if err != nil {
		t.Fatal(err)
	}
	var dropped atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			dropped.Add(1)
		}
	}()
	client := startDaemonChild(t, "", "client", "HOMA_TEST_SOCK="+sock, 10, 0)
	for deadline := time.Now().Add(20 * time.Second); dropped.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client did not dial within 20 s")
		}
	}
	time.Sleep(500 * time.Millisecond)
	l.Close() // removes the socket file
	server := startDaemonChild(t, "", "server", "HOMA_TEST_SOCK="+sock, 0, 0)
	server.expect(t, "up", 20*time.Second)
	client.expect(t, "up", 20*time.Second)
	t.Log(client.expect(t, "done", 60*time.Second))
	client.terminate(t, "the client", 5*time.Second)
	server.terminate(t, "the server", 5*time.Second)
}
