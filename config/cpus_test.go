package config

import (
	"strings"
	"testing"
)

// A copier CPU is checked against the CPUs EAL runs the polling lcores
// and its main lcore on, its lcore ids resolved to CPUs as its -l, -c or
// --lcores says (lcore ids are EAL's, copier CPUs the machine's).
func TestValidate_copierOffTheLoopsCPUs(t *testing.T) {
	port := func(extra string) string {
		return "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n" + extra
	}
	for _, tc := range []struct{ name, body, want string }{
		{"on the polling lcore", `eal: ["-l", "0-1", "--no-pci"]` + "\nlcores: [1]\n" + port("    copier_cpus: [1]\n"),
			"ports[0].copier_cpus[0]: CPU 1 is where polling lcore 1 (lcores[0]) runs (EAL's -l 0-1 runs each lcore on the CPU of its number): " +
				"the copier would take turns with the loop it is to relieve; give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. 2, or no copier_cpus (the loop copies)"},
		{"on the main lcore", `eal: ["-l", "0-1", "--no-pci"]` + "\nlcores: [1]\n" + port("    copier_cpus: [0]\n"),
			"ports[0].copier_cpus[0]: CPU 0 is where EAL's main lcore 0 runs (EAL's -l 0-1 runs each lcore on the CPU of its number, the first as the main one): " +
				"the copier would take turns with the daemon's main thread; give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. 2, or no copier_cpus (the loop copies)"},
		{"mapped by --lcores", `eal: ["--lcores", "0@0,1@3", "--no-pci"]` + "\nlcores: [1]\n" + port("    copier_cpus: [3]\n"),
			"ports[0].copier_cpus[0]: CPU 3 is where polling lcore 1 (lcores[0]) runs (EAL's --lcores 0@0,1@3 runs lcore 1 on CPU 3): " +
				"the copier would take turns with the loop it is to relieve; give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. 1, or no copier_cpus (the loop copies)"},
		{"a shard's lcore", `eal: ["-l", "0-2"]` + "\n" + port("    lcores: [1, 2]\n    copier_cpus: [3, 2]\n"),
			"ports[0].copier_cpus[1]: CPU 2 is where polling lcore 2 (ports[0].lcores[1]) runs (EAL's -l 0-2 runs each lcore on the CPU of its number): "},
		{"a coremask", `eal: ["-c", "0x6", "--main-lcore", "2"]` + "\nlcores: [1]\n" + port("    copier_cpus: [2]\n"),
			"ports[0].copier_cpus[0]: CPU 2 is where EAL's main lcore 2 runs (EAL's -c 0x6 runs each lcore on the CPU of its number, --main-lcore 2 as the main one): "},
		{"lcores sharing CPUs", `eal: ["--lcores", "0@(0-1),1@(0-1)", "--main-lcore", "0"]` + "\nlcores: [1]\n" + port("    copier_cpus: [0]\n"),
			"ports[0].copier_cpus[0]: CPU 0 is where polling lcore 1 (lcores[0]) runs (EAL's --lcores 0@(0-1),1@(0-1) runs lcore 1 on CPUs 0-1): " +
				"the copier would take turns with the loop it is to relieve; give a CPU that neither a polling lcore nor EAL's main lcore runs on, e.g. 2, or no copier_cpus (the loop copies)"},
		{"no lcore option", `eal: ["--no-pci"]` + "\nlcores: [1]\n" + port("    copier_cpus: [1]\n"),
			"ports[0].copier_cpus[0]: CPU 1 is where polling lcore 1 (lcores[0]) runs (EAL, given no -l, -c or --lcores, runs each lcore on the CPU of its number): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.body)
			_, err := Load(Source{File: file})
			if want := "config " + file + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v\nwant it to start %q", err, want)
			}
		})
	}
	for _, tc := range []struct{ name, body string }{
		{"off the loops", `eal: ["-l", "0-1"]` + "\nlcores: [1]\n" + port("    copier_cpus: [2]\n")},
		{"lcore 1 moved to CPU 3", `eal: ["--lcores", "0@0,1@3"]` + "\nlcores: [1]\n" + port("    copier_cpus: [1]\n")},
		{"a group of lcores on other CPUs", `eal: ["--lcores", "(0-1)@(4,5)"]` + "\nlcores: [1]\n" + port("    copier_cpus: [0]\n")},
		{"perf slowdown's lcores sharing CPUs", `eal: ["--lcores", "0@(0-1),1@(0-1)", "--main-lcore", "0"]` + "\nlcores: [1]\n" + port("")},
		{"no eal: the caller's EAL", "lcores: [1]\n" + port("    copier_cpus: [1]\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load(Source{File: writeFile(t, tc.body)}); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// A polling lcore that EAL's -l (or -c, --lcores) does not name, or that
// is its main lcore, is refused before EAL is up, with what to change.
func TestValidate_pollingLcoresAmongEALs(t *testing.T) {
	port := "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n"
	for _, tc := range []struct{ name, body, want string }{
		{"outside -l", `eal: ["-l", "0-1"]` + "\nlcores: [2]\n" + port,
			"lcores[0]: lcore 2 is not one of EAL's lcores (-l 0-1 gives lcores 0-1, 0 the main one); add it there (e.g. -l 0-2), or poll on lcore 1"},
		{"outside --lcores", `eal: ["--lcores=0@0,1@3,2@4"]` + "\n" + port + "    lcores: [1, 3]\n",
			"ports[0].lcores[1]: lcore 3 is not one of EAL's lcores (--lcores 0@0,1@3,2@4 gives lcores 0-2, 0 the main one); add it there (e.g. 3@1), or poll on one of lcores 1-2"},
		{"outside -c", `eal: ["-c", "0x3"]` + "\nlcores: [4]\n" + port,
			"lcores[0]: lcore 4 is not one of EAL's lcores (-c 0x3 gives lcores 0-1, 0 the main one); add it there (e.g. -c 0x13), or poll on lcore 1"},
		{"the main lcore", `eal: ["-l", "0-1"]` + "\nlcores: [0]\n" + port,
			"lcores[0]: lcore 0 is EAL's main lcore (the first of -l 0-1), which runs no polling loop; poll on lcore 1, or make another lcore the main one (--main-lcore)"},
		{"the main lcore, none other", `eal: ["-l0"]` + "\nlcores: [0]\n" + port,
			"lcores[0]: lcore 0 is EAL's main lcore (the first of -l 0), which runs no polling loop; add a worker lcore to -l (e.g. -l 0-1) and poll on it"},
		{"--main-lcore outside", `eal: ["-l", "0-1", "--main-lcore", "5"]` + "\nlcores: [1]\n" + port,
			"eal: --main-lcore 5 is not one of EAL's lcores (-l 0-1 gives lcores 0-1)"},
		{"a bad list", `eal: ["-l", "0-x"]` + "\nlcores: [1]\n" + port,
			`eal: -l "0-x" is not a list of lcores like 0-2 or 0,2,4`},
		{"two lcore options", `eal: ["-l", "0-1", "--lcores", "0@0,1@1"]` + "\nlcores: [1]\n" + port,
			"eal: -l and --lcores both name the lcores; EAL takes one of -l, -c and --lcores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.body)
			_, err := Load(Source{File: file})
			if want := "config " + file + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v\nwant it to start %q", err, want)
			}
		})
	}
	// run's arguments after -- replace the file's eal list before the
	// lcores are checked against it.
	file := writeFile(t, `eal: ["-l", "0-1"]`+"\nlcores: [2]\n"+port)
	if _, err := Load(Source{File: file, EAL: []string{"-l", "0-2"}}); err != nil {
		t.Errorf("-- -l 0-2 given: %v", err)
	}
}

// The copier CPUs are checked against the CPUs of the machine that
// checks them (run, config check): one that does not exist is named with
// those that do, where pinning the copier would only say "invalid
// argument".
func TestCheckMachine_copierCPUThatDoesNotExist(t *testing.T) {
	defer func(f func() (string, error)) { onlineCPUs = f }(onlineCPUs)
	onlineCPUs = func() (string, error) { return "0-1\n", nil }
	s, err := Load(Source{File: writeFile(t, "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    lcores: [1, 1]\n    copier_cpus: [0, 7]\n")})
	if err != nil {
		t.Fatal(err)
	}
	want := "ports[0].copier_cpus[1]: CPU 7 does not exist here (CPUs 0-1): give one of this machine's CPUs that neither a polling lcore nor EAL's main lcore runs on, or no copier_cpus (the loop copies)"
	if err := s.CheckMachine(); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %q", err, want)
	}
	s.Ports[0].CopierCPUs = []uint{1, 0}
	if err := s.CheckMachine(); err != nil {
		t.Errorf("CPUs 1 and 0: %v", err)
	}
}
