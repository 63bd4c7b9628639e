package host

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// TestCapture_priorityInTOSAndOnMappedQueue captures an exchange of RPCs
// and checks with tshark that every Homa packet carries its priority in
// the IPv4 TOS top bits, and that the packets of each priority were
// counted on the TX queue the map gives that priority.
func TestCapture_priorityInTOSAndOnMappedQueue(t *testing.T) {
	dpdktest.Need(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		if dpdktest.Required() {
			t.Fatal("tshark is missing (scripts/setup.sh installs it)")
		}
		t.Skip("tshark is missing")
	}
	path := filepath.Join(t.TempDir(), "run.pcapng")
	capture, err := dpdk.NewCapture(path, []string{"10.0.0.1", "10.0.0.2"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ringHostsCapture(t, 4, 0, capture, false)
	runRPCs(t, a, b, []int{100, 5_000, 60_000, 300_000})
	// Let the server ask for, and the client send, the ACK of the last RPCs.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
		a.Pass()
		b.Pass()
	}
	if err := capture.Close(); err != nil {
		t.Fatal(err)
	}
	// Every Homa packet captured: sender, TOS and Homa header.
	out, err := exec.Command("tshark", "-r", path, "-Y", "ip.proto == 146",
		"-T", "fields", "-e", "frame.interface_id", "-e", "ip.src", "-e", "ip.dsfield", "-e", "data.data").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	perPrio := map[int]uint64{}
	types := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			t.Fatalf("tshark line %q", line)
		}
		tos, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 8)
		if err != nil {
			t.Fatalf("TOS %q", f[2])
		}
		if tos&0x1f != 0 {
			t.Errorf("TOS %#x has bits below the priority", tos)
		}
		if len(f[3]) >= 24 { // Homa type at byte 11 of the header
			types[f[3][22:24]]++
		}
		// Sent by 10.0.0.1: captured outbound on its interface 0.
		if f[0] == "0" && f[1] == "10.0.0.1" {
			perPrio[int(tos>>5)]++
		}
	}
	for _, typ := range []string{"10", "11"} { // DATA, GRANT
		if types[typ] == 0 {
			t.Errorf("no Homa packet of type 0x%s captured (types seen: %v)", typ, types)
		}
	}
	if types["18"]+types["17"] == 0 {
		t.Errorf("no ACK or NEED_ACK captured (types seen: %v)", types)
	}
	perQueue := map[int]uint64{}
	for p, n := range perPrio {
		perQueue[a.sched.Map().Queue(p)] += n
	}
	for q := range a.txBufs {
		st := a.sched.Stats(q)
		if st.Returned != 0 {
			t.Fatalf("queue %d refused packets, which the capture then shows twice", q)
		}
		// Queue 0 also carried the ARP request (priority 7, not protocol 146).
		want := perQueue[q]
		if q == 0 {
			want += a.neigh.Requests
		}
		if st.Sent != want {
			t.Errorf("queue %d sent %d packets; the capture shows %d of its priorities (map %s)", q, st.Sent, want, a.sched.Map())
		}
	}
}

// TestCapture_pcpMarkingTagsFramesWithTheirPriority runs RPCs with
// priority marking pcp and checks with tshark that every Homa frame and
// the ARP requests carry an 802.1Q tag on VLAN 7 whose PCP is the priority
// (the TOS carries it too).
func TestCapture_pcpMarkingTagsFramesWithTheirPriority(t *testing.T) {
	dpdktest.Need(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		if dpdktest.Required() {
			t.Fatal("tshark is missing (scripts/setup.sh installs it)")
		}
		t.Skip("tshark is missing")
	}
	path := filepath.Join(t.TempDir(), "pcp.pcapng")
	capture, err := dpdk.NewCapture(path, []string{"10.0.0.1", "10.0.0.2"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ringHostsCapture(t, 8, 0, capture, true)
	runRPCs(t, a, b, []int{100, 70_000})
	if err := capture.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "vlan.id", "-e", "vlan.priority", "-e", "ip.dsfield", "-e", "eth.type").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	homa, arp := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 4 || f[0] != "7" {
			t.Fatalf("frame without the VLAN 7 tag: %q", line)
		}
		if f[2] == "" { // ARP
			arp++
			continue
		}
		homa++
		tos, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 8)
		if pcp, _ := strconv.Atoi(f[1]); uint64(pcp) != tos>>5 {
			t.Errorf("PCP %d but TOS priority %d: %q", pcp, tos>>5, line)
		}
	}
	if homa < 50 || arp == 0 {
		t.Errorf("%d Homa frames and %d ARP frames captured", homa, arp)
	}
}
