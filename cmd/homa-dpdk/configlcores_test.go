package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config check prints each port's lcores from ports[].lcores, where the
// top-level lcores is folded in, and says so when the file used it.
func TestConfigCheck_printsEachPortsLcores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "homa.yaml")
	body := "lcores: [1]\nports:\n  - device: net_null0\n    address: 10.0.0.1/24\n" +
		"  - device: net_null1\n    address: 10.0.1.1/24\n    lcores: [2, 3]\nworkers:\n  enabled: false\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := rootCmd()
	var out strings.Builder
	c.SetOut(&out)
	c.SetArgs([]string{"config", "check", path})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := "config " + path + ": valid; 2 port(s):\n" +
		"  ports[0]: net_null0, 10.0.0.1/24, mtu 1500, lcores [1]\n" +
		"  ports[1]: net_null1, 10.0.1.1/24, mtu 1500, 2 shards on lcores [2 3]\n" +
		"  (lcores[i] is shorthand for ports[i].lcores: [lcore], the one place each port's lcores are kept)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
