package config

import (
	"net/netip"
	"reflect"
	"testing"
)

// The top-level lcores is a shorthand: Load folds lcores[i] into
// ports[i].lcores where the port has none of its own and empties the
// list, so that ports[].lcores alone says every port's shards; the key a
// message names is the one the file used.
func TestLoad_topLevelLcoresFoldedIntoPorts(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, `
lcores: [3, 4]
ports:
  - device: net_null0
    address: 10.0.0.1/24
  - device: net_null1
    address: 10.0.1.1/24
    lcores: [5, 6]
workers:
  enabled: false
`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := [][]uint{s.Ports[0].Lcores, s.Ports[1].Lcores}; !reflect.DeepEqual(got, [][]uint{{3}, {5, 6}}) {
		t.Errorf("ports' lcores %v, want [[3] [5 6]]", got)
	}
	if s.Lcores != nil {
		t.Errorf("top-level lcores %v left after the fold", s.Lcores)
	}
	if k0, k1 := s.LcoresKey(0), s.LcoresKey(1); k0 != "lcores[0]" || k1 != "ports[1].lcores" {
		t.Errorf("keys %q, %q; want lcores[0], ports[1].lcores", k0, k1)
	}
	before := *s
	before.Ports = append([]PortSpec(nil), s.Ports...)
	if err := s.Normalize(); err != nil || !reflect.DeepEqual(before, *s) {
		t.Errorf("Normalize again: %v, changed %+v to %+v", err, before, *s)
	}
}

// A port the top-level lcores does not reach, without lcores of its own,
// is refused when the config is read, with the way to give it one.
func TestLoad_portWithoutLcoreRefused(t *testing.T) {
	wantLoadError(t, `
lcores: [1]
ports:
  - device: net_null0
    address: 10.0.0.1/24
  - device: net_null1
    address: 10.0.1.1/24
workers:
  enabled: false
`, []string{"lcores: 1 lcore(s) for 2 ports, and ports[1] has no lcores of its own: give every port a polling lcore, in lcores (lcores[i] polls ports[i]) or in ports[i].lcores"})
}

// A Spec built in Go from Defaults is completed as Load completes a
// file's: the HOMA_* environment wins over the values set in Go, the
// rest stay, the ports get their defaults and their lcores.
func TestComplete_environmentOverGoValues(t *testing.T) {
	t.Setenv("HOMA_METRICS_ADDRESS", "127.0.0.1:9999")
	t.Setenv("HOMA_WORKERS_MAX_OUTSTANDING", "77")
	base := Defaults()
	base.Lcores = []uint{1, 1}
	base.Metrics.Address = ""
	base.Workers.MaxOutstanding = 10
	base.Protocol.MaxMessage = 1 << 20
	base.Protocol.LongMessagePeers = []netip.Prefix{mustPrefix(t, "10.0.0.0/24")}
	base.Ports = []PortSpec{{Device: "net_null0", Address: mustPrefix(t, "10.0.0.1/24")}, {Device: "net_null1", Address: mustPrefix(t, "10.0.0.2/24")}}
	s, err := Complete(base)
	if err != nil {
		t.Fatal(err)
	}
	if s.Metrics.Address != "127.0.0.1:9999" || s.Workers.MaxOutstanding != 77 {
		t.Errorf("metrics.address %q, workers.max_outstanding %d: want the environment's 127.0.0.1:9999, 77", s.Metrics.Address, s.Workers.MaxOutstanding)
	}
	if s.Protocol.MaxMessage != 1<<20 || s.Protocol.MaxIncoming != 400_000 || s.Workers.MaxBytes != 16<<20 {
		t.Errorf("max_message %d, max_incoming %d, workers.max_bytes %d: want Go's 1048576 and the defaults 400000, 16777216",
			s.Protocol.MaxMessage, s.Protocol.MaxIncoming, s.Workers.MaxBytes)
	}
	if p := s.Ports[1]; p.MTU != 1500 || p.Marking != "dscp" || !reflect.DeepEqual(p.Lcores, []uint{1}) {
		t.Errorf("ports[1] %+v: want mtu 1500, marking dscp, lcores [1]", p)
	}
	if base.Ports[1].Lcores != nil || base.Metrics.Address != "" {
		t.Errorf("Complete changed its argument: %+v", base)
	}
	t.Setenv("HOMA_WORKERS_MAX_OUTSTANDIN", "1")
	if _, err := Complete(base); err == nil {
		t.Error("a HOMA_ variable that names no key was accepted")
	}
}

// Defaults holds the same values as a file that sets nothing but a port.
func TestDefaults_areLoadsDefaults(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, minimal)})
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	d.Ports, s.Ports, s.Lcores = nil, nil, d.Lcores // Load folded lcores into its port
	if !reflect.DeepEqual(d, *s) {
		t.Errorf("Defaults\n%+v\nLoad of a minimal file\n%+v", d, *s)
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
