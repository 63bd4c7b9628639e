package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// config check without its FILE (or with more than one) says what is
// wrong and prints its usage line.
func TestConfigCheck_argsWantedNamedWithUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "check"}, "config check: missing FILE, the config file to check"},
		{[]string{"config", "check", "a.yaml", "b.yaml"}, "config check: takes one FILE, got 2 arguments"},
	} {
		err := runArgs(t, tc.args...)
		if err == nil {
			t.Fatalf("%v accepted", tc.args)
		}
		for _, w := range []string{tc.want, "usage: homa-dpdk config check FILE"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", tc.args, err, w)
			}
		}
	}
}

// checkFile runs config check on a file of body and returns its error
// and what it printed on stdout and stderr.
func checkFile(t *testing.T, body string) (path string, err error, stdout, stderr string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "homa.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := rootCmd()
	c.SetArgs([]string{"config", "check", path})
	var out, errOut strings.Builder
	c.SetOut(&out)
	c.SetErr(&errOut)
	err = c.Execute()
	return path, err, out.String(), errOut.String()
}

// A copier CPU on the polling lcore's CPU is a mistake the file alone
// shows: config check says so (the lcore resolved to its CPU by the eal
// list), where it said "valid".
func TestConfigCheck_copierOnThePollingLcore(t *testing.T) {
	path, err, _, _ := checkFile(t, `eal: ["--lcores", "0@0,1@2", "--no-pci"]
lcores: [1]
ports:
  - device: net_null0
    address: 10.0.0.1/24
    copier_cpus: [2]
`)
	want := "config " + path + ": ports[0].copier_cpus[0]: CPU 2 is where polling lcore 1 (lcores[0]) runs (EAL's --lcores 0@0,1@2 runs lcore 1 on CPU 2): " +
		"the copier would take turns with the loop it is to relieve; give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. 1, or no copier_cpus (the loop copies)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// A copier CPU that this machine does not have is named, with the CPUs
// it has, by config check and by run in its config phase, before EAL:
// not as "pinning to CPU 4096: invalid argument" once the ports are up.
func TestConfigCheck_copierCPUThatDoesNotExistHere(t *testing.T) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("no list of the online CPUs: %v", err)
	}
	here := "CPU 4096 does not exist here (CPUs " + strings.TrimSpace(string(online)) + "): give one of this machine's CPUs that neither a polling lcore nor EAL's main lcore runs on, or no copier_cpus (the loop copies)"
	body := `eal: ["-l", "0-1", "--no-pci"]
lcores: [1]
ports:
  - device: net_null0
    address: 10.0.0.1/24
    copier_cpus: [4096]
capture:
  file: /nonexistent/dir/run.pcapng
`
	path, err, _, _ := checkFile(t, body)
	if want := "config " + path + ": ports[0].copier_cpus[0]: " + here; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("config check: got %v\nwant it to start %s", err, want)
	}
	err = runArgs(t, "run", "--config", path)
	if want := "start-up phase config: config " + path + ": ports[0].copier_cpus[0]: " + here; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("run: got %v\nwant it to start %s", err, want)
	}
}

// A misspelt HOMA_ variable that is not shaped like a key (HOMA_WORKER_
// for HOMA_WORKERS_) is not silently ignored: config check prints a
// warning with the variable meant (the file stays valid), and run logs
// it.
func TestConfigCheck_warnsOfMisspeltEnvironmentVariable(t *testing.T) {
	t.Setenv("HOMA_WORKER_ZERO_COPY_MIN", "65536")
	body := "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\ncapture:\n  file: /nonexistent/dir/run.pcapng\n"
	want := "environment variable HOMA_WORKER_ZERO_COPY_MIN names no config key and is ignored (did you mean HOMA_WORKERS_ZERO_COPY_MIN, for workers.zero_copy_min?)"
	path, err, _, stderr := checkFile(t, strings.Replace(body, "capture:\n  file: /nonexistent/dir/run.pcapng\n", "", 1))
	if err != nil {
		t.Fatalf("config check: %v", err)
	}
	if !strings.Contains(stderr, "warning: "+want+"\n") {
		t.Errorf("config check printed %q, want the line %q", stderr, "warning: "+want)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// run, as the program (its log goes to stderr), stops at capture.file
	// before EAL, after the warning.
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "run", "--config", path)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "capture.file") {
		t.Errorf("run printed %q, want a warning %q and its capture.file error", out, want)
	}
}
