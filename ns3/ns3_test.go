package ns3

import (
	"bytes"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

func TestWriteTrace_headerAndLines(t *testing.T) {
	f := Fabric{Racks: 2, HostsPerRack: 2, Cores: 1, LinkBps: 10e9, UplinkBps: 40e9, SwitchNs: 250, HostNs: 1000, RecvNs: 500, MTU: 1500}
	msgs := []workload.Msg{
		{Message: workload.Message{At: 5, Src: 0, Dst: 3, Size: 100}, Op: -1, After: -1},
		{Message: workload.Message{At: 5, Src: 3, Dst: 1, Size: 200}, Op: 0, After: 0},
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, f, msgs); err != nil {
		t.Fatal(err)
	}
	want := "# homa-dpdk cluster trace 1\n# racks 2\n# hosts_per_rack 2\n# cores 1\n# link_bps 10000000000\n# uplink_bps 40000000000\n" +
		"# prop_ns 0\n# switch_ns 250\n# host_ns 1000\n# recv_ns 500\n# mtu 1500\nid,at_ns,src,dst,size,after\n0,5,0,3,100,-1\n1,5,3,1,200,0\n"
	if b.String() != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", b.String(), want)
	}
	msgs[0].After = 1
	if err := WriteTrace(&b, f, msgs); err == nil {
		t.Fatal("a message waiting for a later one was written")
	}
}

func TestReadOutput(t *testing.T) {
	out := "# homa-ns3-tcp 1\n# transport dctcp\n# drops 3\n# marks 17\n# retransmits 2\n# wall_s 1.5\nid,start_ns,done_ns\n0,5,900\n1,-1,-1\n"
	o, err := ReadOutput(strings.NewReader(out), 2)
	if err != nil {
		t.Fatal(err)
	}
	if o.Drops != 3 || o.Marks != 17 || o.Retransmits != 2 || o.WallSeconds != 1.5 || o.Setting("transport") != "dctcp" ||
		o.Start[0] != 5 || o.Done[0] != 900 || o.Done[1] != -1 {
		t.Fatalf("read %+v", o)
	}
	for _, bad := range []string{
		"id,start_ns,done_ns\n0,5,900\n",                   // a message missing
		"id,start_ns,done_ns\n1,5,900\n0,5,900\n",          // out of order
		"id,start_ns,done_ns\n0,900,5\n1,-1,-1\n",          // delivered before sent
		"0,5,900\n1,-1,-1\n",                               // no header
		"# drops x\nid,start_ns,done_ns\n0,5,9\n1,-1,-1\n", // a counter that is not a number
	} {
		if _, err := ReadOutput(strings.NewReader(bad), 2); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestFind_saysHowToBuild(t *testing.T) {
	t.Setenv("HOMA_NS3", "")
	_, err := Find("/nonexistent/homa-dpdk")
	if err == nil || !strings.Contains(err.Error(), "make -C ns3") || !strings.Contains(err.Error(), "libns3-dev") {
		t.Fatalf("Find: %v, want how to build it", err)
	}
}
