package memnet

import (
	"errors"
	"testing"
)

// fabricCfg is the Homa paper's tree shrunk to racks of 2 hosts: 10 Gb/s
// host links, 40 Gb/s ToR–core links, 250 ns per switch.
func fabricCfg(racks, cores int) Config {
	return Config{Fabric: Fabric{Racks: racks, HostsPerRack: 2, Cores: cores, UplinkBps: 40e9, SwitchLatency: 250}}
}

// A lone frame takes the link math of its path: within a rack two host
// links and one switch, between racks two host links, two fabric links
// and three switches.
func TestFabric_idlePathsAreLinkMath(t *testing.T) {
	n, h := newNet(fabricCfg(2, 2), 4)
	var at []int64
	for _, x := range h {
		x.SetReceive(func([]byte) { at = append(at, n.Now()) })
	}
	const size = 1500
	h[0].Send(homaFrame(t, h[0], h[1], 0, size, 1)) // same rack
	n.RunUntilIdle(1e9)
	start := n.Now()
	h[0].Send(homaFrame(t, h[0], h[3], 0, size, 2)) // rack 0 → rack 1
	n.RunUntilIdle(1e9)
	host := n.TxTime(size)
	fab := txTimeAt(size, 40e9)
	prop, sw := n.Config().PropDelay, int64(250)
	if want := 2*host + 2*prop + sw; at[0] != want {
		t.Errorf("same rack: %d ns, want %d", at[0], want)
	}
	if want := 2*host + 2*fab + 4*prop + 3*sw; at[1]-start != want {
		t.Errorf("across racks: %d ns, want %d", at[1]-start, want)
	}
	if h[0].Rack() != 0 || h[3].Rack() != 1 {
		t.Errorf("racks %d, %d", h[0].Rack(), h[3].Rack())
	}
	checkConserved(t, n)

	// HostDelay comes once, before the sender's NIC.
	cfg := fabricCfg(2, 2)
	cfg.HostDelay = 500
	n, h = newNet(cfg, 4)
	at = at[:0]
	h[1].SetReceive(func([]byte) { at = append(at, n.Now()) })
	h[0].Send(homaFrame(t, h[0], h[1], 0, size, 1))
	n.RunUntilIdle(1e9)
	if want := 500 + 2*host + 2*prop + sw; len(at) != 1 || at[0] != want {
		t.Errorf("same rack with a host delay: %v, want %d", at, want)
	}
	checkConserved(t, n)

	// RecvDelay comes once, after the receiver's link.
	cfg.RecvDelay = 700
	n, h = newNet(cfg, 4)
	at = at[:0]
	h[3].SetReceive(func([]byte) { at = append(at, n.Now()) })
	h[0].Send(homaFrame(t, h[0], h[3], 0, size, 1))
	n.RunUntilIdle(1e9)
	if want := 500 + 2*host + 2*fab + 4*prop + 3*sw + 700; len(at) != 1 || at[0] != want {
		t.Errorf("across racks with host and receive delays: %v, want %d", at, want)
	}
	checkConserved(t, n)
}

// Spraying spreads one pair's frames over every core; ECMP keeps them on
// one. Either way every frame arrives, and in order per core.
func TestFabric_sprayingAndECMP(t *testing.T) {
	for _, ecmp := range []bool{false, true} {
		cfg := fabricCfg(2, 4)
		cfg.Fabric.ECMP = ecmp
		n, h := newNet(cfg, 4)
		got := 0
		h[3].SetReceive(func([]byte) { got++ })
		for i := range 40 {
			h[0].Send(homaFrame(t, h[0], h[3], 0, 1500, uint32(i)))
		}
		n.RunUntilIdle(1e9)
		used := 0
		for _, q := range n.FabricStats().Up[0] {
			if q > 0 {
				used++
			}
		}
		want := 4
		if ecmp {
			want = 1
		}
		if used != want || got != 40 {
			t.Errorf("ecmp %v: %d uplinks used, %d frames arrived; want %d, 40", ecmp, used, got, want)
		}
		checkConserved(t, n)
	}
}

// The fabric's ports serve priorities strictly and drop the tail when full.
func TestFabric_priorityAndDropTail(t *testing.T) {
	cfg := fabricCfg(2, 1)
	cfg.BufferBytes = 10 * 1500
	cfg.Fabric.UplinkBps = 10e9 // the uplink is the bottleneck: both hosts of rack 0 send at 10 Gb/s
	n, h := newNet(cfg, 4)
	var order []uint32
	h[2].SetReceive(func(f []byte) { order = append(order, seqOf(t, f)) })
	for i := range 30 {
		h[0].Send(homaFrame(t, h[0], h[2], 0, 1500, uint32(i)))
		h[1].Send(homaFrame(t, h[1], h[2], 0, 1500, uint32(100+i)))
	}
	h[1].Send(homaFrame(t, h[1], h[2], 7, 1500, 999))
	n.RunUntilIdle(1e9)
	s := checkConserved(t, n)
	if s.Dropped[DropBufferFull] == 0 {
		t.Errorf("no tail drops at a 2:1 uplink with a 10-frame buffer: %v", s.Dropped)
	}
	if fs := n.FabricStats(); fs.Up[0][0] > cfg.BufferBytes {
		t.Errorf("uplink held %d bytes, buffer %d", fs.Up[0][0], cfg.BufferBytes)
	}
	pos := -1
	for i, q := range order {
		if q == 999 {
			pos = i
		}
	}
	if pos < 0 || pos > len(order)-5 {
		t.Errorf("the priority-7 frame came at %d of %d: it did not overtake the queue", pos, len(order))
	}
}

func TestFabric_configChecked(t *testing.T) {
	for _, f := range []Fabric{{HostsPerRack: 2}, {Racks: 2, Cores: 1}, {Racks: 2, HostsPerRack: 2}, {Racks: 2, HostsPerRack: 2, Cores: 1, SwitchLatency: -1}} {
		if err := (Config{Fabric: f}).Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", f, err)
		}
	}
	n, _ := newNet(fabricCfg(1, 1), 2)
	defer func() {
		if recover() == nil {
			t.Error("a third host in 1 rack of 2 was taken")
		}
	}()
	n.AddHost(addr(3))
}
