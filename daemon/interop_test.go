package daemon

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two daemons on memif exchange RPCs of 1 B to 1 MB, byte-exact, with 2%
// of frames dropped, in the forms kernel Homa builds other than the
// native full protocol: TCP-hijacked framing both ways, and one daemon
// speaking only the upstream subset.

// interopRPCs is how many RPCs each exchange runs (log-uniform 1 B-1 MB,
// so some near 1 MB).
const interopRPCs = 150

// TestMemifHosts_hijackedWithLoss: both daemons send every packet to the
// other as TCP-hijacked framing (peers: 0.0.0.0/0, hijack), as kernel
// Homa does with hijack_tcp. The client's capture holds only TCP frames
// whose checksums tshark finds good, and the project's dissector decodes
// them as Homa.
func TestMemifHosts_hijackedWithLoss(t *testing.T) {
	peers := "peers:\n  - prefix: 0.0.0.0/0\n    hijack: true\n"
	capture := exchangeCaptured(t, 9216, []string{"HOMA_TEST_YAML=" + peers}, nil, peers)

	total := tsharkCount(t, capture, "ip", "")
	tcp := tsharkCount(t, capture, "tcp.flags == 0x006 && tcp.urgent_pointer == 0xb97d", "")
	good := tsharkCount(t, capture, "tcp.checksum.status == 1", "")
	homa := tsharkCount(t, capture, "homa.type", "lua")
	if total < 1000 || tcp != total || good != total || homa != total {
		t.Errorf("capture: %d IP frames, %d hijacked TCP, %d with a good TCP checksum, %d decoded as Homa; want all", total, tcp, good, homa)
		out, _ := exec.Command("tshark", "-r", capture, "-o", "tcp.check_checksum:TRUE", "-X", "lua_script:"+filepath.Join("..", "tools", "wireshark", "homa.lua"),
			"-Y", "ip && !(homa.type && tcp.checksum.status == 1)", "-c", "5").CombinedOutput()
		t.Logf("some of the others:\n%s", out)
	}
	if native := tsharkCount(t, capture, "ip.proto == 146", ""); native != 0 {
		t.Errorf("%d native Homa frames in a hijacked exchange", native)
	}
}

// TestMemifHosts_upstreamServerWithLoss: the server speaks only the
// upstream subset (protocol.variant upstream); the client, on defaults,
// finds it out and sends it whole messages. Its capture shows no GRANT
// or CUTOFFS from the server and only 36-byte RESENDs.
func TestMemifHosts_upstreamServerWithLoss(t *testing.T) {
	capture := exchangeCaptured(t, 128, []string{"HOMA_TEST_PROTOCOL=  variant: upstream"}, nil, "")

	fromServer := "ip.src == 10.0.0.2 && "
	if n := tsharkCount(t, capture, fromServer+"(homa.type == 0x11 || homa.type == 0x15)", "lua"); n != 0 {
		t.Errorf("the upstream server sent %d GRANT/CUTOFFS packets", n)
	}
	resends := tsharkCount(t, capture, fromServer+"homa.type == 0x12", "lua")
	short := tsharkCount(t, capture, fromServer+"homa.type == 0x12 && ip.len == 56", "lua")
	if resends == 0 || short != resends {
		t.Errorf("the upstream server's RESENDs: %d, of which %d of 36 bytes; want some, all short", resends, short)
	}
	if n := tsharkCount(t, capture, fromServer+"homa.type == 0x10 && homa.data.incoming != 0", "lua"); n != 0 {
		t.Errorf("%d DATA packets from the upstream server with incoming set", n)
	}
}

// TestMemifHosts_ipv6WithLoss: both daemons have an IPv6 address
// beside their IPv4 one; the client's RPCs go to the server's IPv6
// address, which it resolves by neighbour discovery. Its capture holds
// Homa over IPv6 only (and the solicitation and advertisement), which
// tshark and the project's dissector decode.
func TestMemifHosts_ipv6WithLoss(t *testing.T) {
	capture := exchangeCaptured(t, 128, []string{"HOMA_TEST_V6=1"}, []string{"HOMA_TEST_V6=1"}, "")

	homa6 := tsharkCount(t, capture, "ipv6.nxt == 146 && homa.type", "lua")
	homa4 := tsharkCount(t, capture, "ip.proto == 146", "")
	ns := tsharkCount(t, capture, "icmpv6.type == 135", "")
	na := tsharkCount(t, capture, "icmpv6.type == 136 && icmpv6.nd.na.flag.s == 1", "")
	t.Logf("capture: %d Homa frames over IPv6, %d over IPv4, %d solicitations, %d solicited advertisements", homa6, homa4, ns, na)
	if homa6 < 1000 || homa4 != 0 || ns == 0 || na == 0 {
		t.Errorf("capture: %d Homa frames over IPv6 decoded, %d over IPv4, %d solicitations, %d solicited advertisements", homa6, homa4, ns, na)
	}
}

// TestMemifHosts_ipv6OnlyWithLoss: the same over ports with an IPv6
// address and no IPv4 one.
func TestMemifHosts_ipv6OnlyWithLoss(t *testing.T) {
	server, client := startMemifDaemons(t, interopRPCs/2, 0.02, "", "", []string{"HOMA_TEST_V6=only"}, []string{"HOMA_TEST_V6=only"})
	t.Log(client.expect(t, "done", 240*time.Second))
	stopMemifDaemons(t, server, client)
}

// exchangeCaptured runs interopRPCs RPCs between two memif daemons with
// 2% loss, the server's environment serverEnv, the client's clientEnv
// and clientYAML (top-level keys) plus a capture keeping snaplen bytes of
// each packet, and returns the capture's path.
func exchangeCaptured(t *testing.T, snaplen int, serverEnv, clientEnv []string, clientYAML string) string {
	t.Helper()
	requireTshark(t)
	capture := filepath.Join(t.TempDir(), "client.pcapng")
	clientYAML += fmt.Sprintf("capture:\n  file: %s\n  snaplen: %d\n", capture, snaplen)
	server, client := startMemifDaemons(t, interopRPCs, 0.02, "", "", serverEnv, append(clientEnv, "HOMA_TEST_YAML="+clientYAML))
	t.Log(client.expect(t, "done", 240*time.Second))
	stopMemifDaemons(t, server, client)
	return capture
}

func requireTshark(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatal("tshark is missing (scripts/setup.sh installs it)")
	}
}

// tsharkCount counts the frames of capture that filter matches (all
// with ""), with TCP checksums validated, and with the project's
// dissector loaded when lua is set.
func tsharkCount(t *testing.T, capture, filter, lua string) int {
	t.Helper()
	args := []string{"-r", capture, "-o", "tcp.check_checksum:TRUE"}
	if lua != "" {
		args = append(args, "-X", "lua_script:"+filepath.Join("..", "tools", "wireshark", "homa.lua"))
	}
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	out, err := exec.Command("tshark", append(args, "-T", "fields", "-e", "frame.number")...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	return strings.Count(string(out), "\n")
}
