package config

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// ports (like neighbours and peers) is a list of maps: a single value, a
// list of strings or a single map is told the shape to write, with the
// device it gave.
func TestLoad_portsShapeHint(t *testing.T) {
	tail := `, e.g. ports: [{device: net_memif0, address: 10.0.0.1/24}], or on lines of their own "ports:", "  - device: net_memif0", "    address: 10.0.0.1/24"`
	for _, tc := range []struct{ name, body, want string }{
		{"one value", "ports: net_memif0\n",
			`config file %s: ports: "net_memif0" is one value, not a list of maps; write each port as a map in a YAML list` + tail},
		{"a list of strings", "ports: [net_memif0]\n",
			`config file %s: ports[0]: "net_memif0" is not a map; write each port as a map in a YAML list` + tail},
		{"one map", "ports:\n  device: net_memif0\n  address: 10.0.0.1/24\n",
			`config file %s: ports: one map, not a list of maps; start each port with "- ", e.g. on lines of their own "ports:", "  - device: net_memif0", "    address: 10.0.0.1/24"`},
		{"a neighbour", minimal + "neighbours: 10.0.0.2\n",
			`config file %s: neighbours: "10.0.0.2" is one value, not a list of maps; write each neighbour as a map in a YAML list, e.g. neighbours: [{ip: 10.0.0.2, mac: '02:00:00:00:00:02'}], or on lines of their own "neighbours:", "  - ip: 10.0.0.2", "    mac: '02:00:00:00:00:02'"`},
		{"a list in a port", "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    lcores: 1\n",
			`config file %s: ports[0].lcores: 1 is one value, not a list; write a YAML list, e.g. ports[0].lcores: [1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.body)
			_, err := Load(Source{File: file})
			if want := strings.ReplaceAll(tc.want, "%s", file); err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
}

// A bare number for a duration (arp.timeout: 5) would be nanoseconds:
// it is refused with the unit to give, from the file and from the
// environment, for every duration key; 0 needs none.
func TestLoad_durationWithoutUnitRefused(t *testing.T) {
	for _, key := range durationKeys() {
		section, name, _ := strings.Cut(key, ".")
		t.Run(key, func(t *testing.T) {
			file := writeFile(t, minimal+section+":\n  "+name+": 5\n")
			_, err := Load(Source{File: file})
			if want := "config " + file + ": " + key + ": 5 is a number without a unit; give a unit, e.g. 5s or 5ms"; err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
			t.Setenv(envName(key), "5")
			_, err = Load(Source{File: writeFile(t, minimal)})
			if want := "config: " + key + " (set by " + envName(key) + "): 5 is a number without a unit; give a unit, e.g. 5s or 5ms"; err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
	if len(durationKeys()) < 6 {
		t.Errorf("duration keys %v: want protocol.tick, protocol.max_nic_queue, protocol.icmp_ratelimit, workers.linger, arp.timeout, arp.aging at least", durationKeys())
	}
	if _, err := Load(Source{File: writeFile(t, minimal+"protocol:\n  icmp_ratelimit: 0\nworkers:\n  linger: 0\n")}); err != nil {
		t.Errorf("0 without a unit: %v", err)
	}
}

// durationKeys are the keys whose values are durations.
func durationKeys() []string {
	var keys []string
	for k, v := range defaults {
		if _, ok := v.(time.Duration); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
