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
		{"EAL arguments before --", []string{"run", "--config", write("e2.yaml", good), "-l", "0-1"},
			[]string{"unknown shorthand flag: 'l' in -l", "EAL's arguments go after --, as in: homa-dpdk run [flags] -- -l 0-1"}},
		{"no ports", []string{"run", "--config", write("f.yaml", "log:\n  level: info\n")}, []string{"ports: no port is configured"}},
		{"gateway off subnet", []string{"run", "--config", write("h.yaml", good+"    gateway: 10.9.9.9\n")}, []string{"ports[0].gateway", "not on the port's subnet"}},
		{"capture path", []string{"run", "--config", write("i.yaml", good), "--capture", filepath.Join(dir, "no/such/dir/x.pcapng")},
			[]string{"start-up phase config", "capture.file", "no/such/dir: no such file or directory"}},
		{"config check: capture path", []string{"config", "check", write("j.yaml", good+"capture:\n  file: "+filepath.Join(dir, "none/x.pcapng")+"\n")},
			[]string{"j.yaml", "capture.file", "none: no such file or directory"}},
		{"config check: bad key", []string{"config", "check", write("k.yaml", good+"protocol:\n  max_incomming: 1\n")}, []string{"unknown key protocol.max_incomming"}},
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

// run without --config names the flag: ports come only from a file.
func TestRun_noConfigNamesTheFlag(t *testing.T) {
	err := runArgs(t, "run")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"start-up phase config", "no port is configured", "give --config FILE", "config/example.yaml", "homa-dpdk demo"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestConfigCheck_validFileSummarised(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(p, []byte("ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := rootCmd()
	var out strings.Builder
	c.SetArgs([]string{"config", "check", p})
	c.SetOut(&out)
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "valid; 1 port(s):\n  ports[0]: net_null0, 10.0.0.1/24, mtu 1500"; !strings.Contains(out.String(), want) {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

func TestVersion_namesCommitGoAndDPDK(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		c := rootCmd()
		var out strings.Builder
		c.SetArgs(args)
		c.SetOut(&out)
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		if !strings.HasPrefix(s, "homa-dpdk ") || !strings.Contains(s, "; go1.") || !strings.Contains(s, "; DPDK ") {
			t.Errorf("%v printed %q", args, s)
		}
	}
}

// deploy/man/homa-dpdk.8 is what `homa-dpdk man` writes now: a change to a
// command's help must regenerate it (go run ./cmd/homa-dpdk man deploy/man/homa-dpdk.8).
func TestMan_committedPageIsCurrent(t *testing.T) {
	var b strings.Builder
	if err := writeMan(&b, rootCmd()); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../deploy/man/homa-dpdk.8")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != b.String() {
		t.Fatal("deploy/man/homa-dpdk.8 is stale: run go run ./cmd/homa-dpdk man deploy/man/homa-dpdk.8")
	}
	for _, want := range []string{".TH HOMA-DPDK 8", ".SS homa\\-dpdk run", ".SS homa\\-dpdk config check", "\\-\\-capture\\-snaplen"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
