package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runArgs executes the command line in-process and returns its error.
func runArgs(t *testing.T, args ...string) error {
	t.Helper()
	c := rootCmd()
	c.SetArgs(args)
	c.SetOut(&strings.Builder{})
	c.SetErr(&strings.Builder{})
	return c.Execute()
}

func TestRun_badConfigAndFlagsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{"run", "--config", filepath.Join(dir, "none.yaml")}, []string{"start-up phase config", "none.yaml"}},
		{"unknown key", []string{"run", "--config", write("a.yaml", good+"protocol:\n  max_incomming: 1\n")}, []string{"unknown key protocol.max_incomming"}},
		{"bad value", []string{"run", "--config", write("b.yaml", good+"    mtu: 70000\n")}, []string{"ports[0].mtu", "576..9000"}},
		{"bad flag value", []string{"run", "--config", write("c.yaml", good), "--log-format", "xml"}, []string{"log.format", "json, console"}},
		{"bad flag number", []string{"run", "--config", write("d.yaml", good), "--capture-last", "many"}, []string{"capture-last"}},
		{"unknown flag", []string{"run", "--config", write("e.yaml", good), "--bogus"}, []string{"unknown flag: --bogus"}},
		{"no ports", []string{"run", "--config", write("f.yaml", "log:\n  level: info\n")}, []string{"ports: no port is configured"}},
		{"gateway off subnet", []string{"run", "--config", write("h.yaml", good+"    gateway: 10.9.9.9\n")}, []string{"ports[0].gateway", "not on the port's subnet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runArgs(t, tc.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
