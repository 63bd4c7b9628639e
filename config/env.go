package config

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// envPrefix starts every environment variable that sets a config key:
// HOMA_ and the key in capitals, dots as underscores
// (protocol.max_incoming: HOMA_PROTOCOL_MAX_INCOMING).
const envPrefix = "HOMA_"

// envName is the environment variable that sets key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// envKeys maps each config key's environment variable to the key.
func envKeys() map[string]string {
	m := map[string]string{envName("eal"): "eal", envName("ports"): "ports"}
	for k := range defaults {
		m[envName(k)] = k
	}
	for k := range removedKeys {
		m[envName(k)] = k
	}
	return m
}

// envSections are the first words of the config's keys in capitals
// (PROTOCOL, WORKERS, ...): a HOMA_ variable that starts with one is meant
// as a config key. Other HOMA_ variables (HOMA_SOCKET for the clients,
// HOMA_REQUIRE_DPDK for the tests) are not the config's business.
func envSections() map[string]bool {
	s := map[string]bool{"EAL": true, "PORTS": true}
	for k := range defaults {
		s[strings.ToUpper(strings.SplitN(k, ".", 2)[0])] = true
	}
	return s
}

// checkEnv refuses HOMA_ variables in env (os.Environ's form) that are
// shaped like a config key (HOMA_PROTOCOL_...) but name none, as a YAML
// key that names none is refused: a typo must not be ignored.
func checkEnv(env []string) error {
	known, sections := envKeys(), envSections()
	var bad []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] != "" || otherEnv[name] != "" {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(name, envPrefix), "_")
		if !sections[first] {
			continue
		}
		msg := fmt.Sprintf("environment variable %s names no config key", name)
		if near := nearestEnv(name, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s, for %s?)", near, known[near])
		}
		bad = append(bad, msg)
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%s; the keys are in %s, each set by HOMA_ and its name in capitals, dots as underscores", strings.Join(bad, "; "), ExampleFile)
}

// otherEnv are the HOMA_ environment variables that are no config key's:
// those of the worker libraries, the PyTorch backend, the NCCL plugin,
// the scripts, the image's build and the tests. One list, which
// TestEnv_everyHOMAVariableIsAKeyOrListed holds to what the repository
// uses: EnvWarnings leaves these alone.
var otherEnv = map[string]string{
	// The worker libraries, their examples and the PyTorch backend.
	"HOMA_SOCKET":                         "the daemon's worker socket, for the clients and examples",
	"HOMA_SERVER_SOCKET":                  "the serving side's worker socket, for the Python tests and examples",
	"HOMA_PEER":                           "the peer's address, for the Python tests and examples",
	"HOMA_PEER6":                          "the peer's IPv6 address, for the Python tests",
	"HOMA_RPC_TIMEOUT":                    "the RPC timeout of the Python tests",
	"HOMA_UNBOUND_PORT":                   "a port the Python tests find unbound",
	"HOMA_ASYNC_PEER":                     "the asyncio test's peer",
	"HOMA_CLOSING_PORT":                   "the closing test's port",
	"HOMA_CLOSING_ROUNDS":                 "the closing test's rounds",
	"HOMA_SKIP_GO":                        "the Python fake engine's tests without Go",
	"HOMA_DPDK_SOCKET_DIR":                "the PyTorch backend's directory of worker sockets",
	"HOMA_DPDK_PORT_BASE":                 "the PyTorch backend's first server port",
	"HOMA_DPDK_SPIN_US":                   "how long libhoma spins before it sleeps (PyTorch backend)",
	"HOMA_DPDK_TORCH_GRACE_US":            "the PyTorch backend's progress thread",
	"HOMA_DPDK_TORCH_INLINE_BYTES":        "the PyTorch backend's inline operations",
	"HOMA_DPDK_TORCH_MAX_UNEXPECTED":      "the PyTorch backend's bound on unexpected bytes",
	"HOMA_DPDK_TORCH_MAX_UNEXPECTED_MSGS": "the PyTorch backend's bound on unexpected messages",
	"HOMA_DPDK_TORCH_PART_BYTES":          "the PyTorch backend's message parts",
	"HOMA_DPDK_TORCH_RENDEZVOUS_S":        "the PyTorch backend's rendezvous timeout",
	"HOMA_DPDK_TORCH_RING_BYTES":          "the PyTorch backend's ring buffers",
	"HOMA_DPDK_TORCH_RING_PARTS":          "the PyTorch backend's ring parts",
	"HOMA_DPDK_TORCH_YIELD_BACKOFF_US":    "the PyTorch backend's yielding",
	"HOMA_DPDK_TORCH_YIELD_US":            "the PyTorch backend's yielding",
	"HOMA_TORCH_RANKS":                    "the ranks of scripts/torch-demo.sh",
	// The NCCL plugin.
	"HOMA_NCCL_SOCKET":   "the NCCL plugin's worker socket",
	"HOMA_NCCL_PORT":     "the NCCL plugin's server port",
	"HOMA_NCCL_EARLY":    "the NCCL plugin's early messages per comm",
	"HOMA_NCCL_PROBE_MS": "the NCCL plugin's liveness probe",
	"HOMA_NCCL_SPIN_US":  "the NCCL plugin's spinning",
	"HOMA_NCCL_WARN_S":   "the NCCL plugin's slow-receive warning",
	// The scripts, the image's build and the deployments.
	"HOMA_VERSION":        "the build's stamp (Dockerfile, scripts)",
	"HOMA_COMMIT":         "the build's stamp (Dockerfile, scripts)",
	"HOMA_DATE":           "the build's stamp (Dockerfile, scripts)",
	"HOMA_MODIFIED":       "the build's stamp (Dockerfile, scripts)",
	"HOMA_HUGEPAGES":      "the hugepages scripts/setup.sh reserves",
	"HOMA_IMAGE":          "scripts/container-test.sh's image",
	"HOMA_KEEP":           "scripts/container-test.sh keeps its containers",
	"HOMA_CONTAINER_MODE": "scripts/container-test.sh's mode",
	"HOMA_DEBIAN_MIRROR":  "the container tests' Debian mirror",
	"HOMA_K8S_DIR":        "deploy/k8s/start.sh's directory",
	"HOMA_PCI_ENV":        "deploy/k8s/start.sh's device plugin variable",
	// The tests.
	"HOMA_REQUIRE_DPDK":            "the tests fail, not skip, without DPDK",
	"HOMA_REQUIRE_NS3":             "the tests of perf cluster's ns-3 runs fail rather than skip without the program (CI)",
	"HOMA_NS3":                     "the ns-3 program perf cluster runs for dctcp and tcp",
	"HOMA_REQUIRE_PYTHON":          "the tests fail, not skip, without Python",
	"HOMA_TEST_INSTALLED":          "the Python install tests",
	"HOMA_TEST_VERBOSE":            "the Python tests' output",
	"HOMA_TEST_STRANGER":           "the tests' stranger process",
	"HOMA_TEST_STRANGER_ONLY":      "the tests' stranger process",
	"HOMA_TEST_RUN_MAIN":           "cmd/homa-dpdk's tests run main",
	"HOMA_TEST_MAIN_STARTED_FD":    "cmd/homa-dpdk's tests see main start",
	"HOMA_DOCS_IN_BLOCK":           "cmd/homa-dpdk's docs tests",
	"HOMA_DPDK_TEST_CHILD":         "dpdk's child-process tests",
	"HOMA_CHILD_ARGS":              "dpdk's child-process tests",
	"HOMA_CHILD_SOCK":              "dpdk's memif tests",
	"HOMA_SHM_TEST_DIAL":           "shm's child-process tests",
	"HOMA_CLIENT_TEST_FAKE_ENGINE": "client's child-process tests",
	"HOMA_TEST_WORKER_CHILD":       "hub's child-process tests",
	"HOMA_PERF_PLOT_DIR":           "perf's plot tests",
	"HOMA_PERF_TEST_PEER":          "perf's peer tests",
	"HOMA_TEST_MEMIF_HOST":         "daemon's memif tests",
	"HOMA_TEST_MEMIF_ROLE":         "daemon's memif tests",
	"HOMA_TEST_COPIER":             "daemon's memif tests",
	"HOMA_TEST_LOSS":               "daemon's memif tests",
	"HOMA_TEST_MAX_SIZE":           "daemon's memif tests",
	"HOMA_TEST_PROTOCOL":           "daemon's memif tests",
	"HOMA_TEST_RPCS":               "daemon's memif tests",
	"HOMA_TEST_SHARDS":             "daemon's memif tests",
	"HOMA_TEST_SOCK":               "daemon's memif tests",
	"HOMA_TEST_TOLERANT":           "daemon's memif tests",
	"HOMA_TEST_V6":                 "daemon's memif and interop tests",
	"HOMA_TEST_VDEV":               "daemon's memif tests",
	"HOMA_TEST_WORKERS":            "daemon's memif tests",
	"HOMA_TEST_YAML":               "daemon's memif tests",
	"HOMA_TEST_ZERO_COPY_MIN":      "daemon's memif tests",
}

// EnvWarnings names the HOMA_ variables in env (os.Environ's form) that
// are ignored but look meant as a config key: not shaped like one
// (checkEnv refuses those), none of otherEnv, yet near a key's variable
// (HOMA_WORKER_ZERO_COPY_MIN for HOMA_WORKERS_ZERO_COPY_MIN). Other
// programs' HOMA_ variables, near none, are left alone. run logs each as
// a warning, config check prints it; neither refuses the config for it.
func EnvWarnings(env []string) []string {
	known, sections := envKeys(), envSections()
	var warn []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		first, _, _ := strings.Cut(strings.TrimPrefix(name, envPrefix), "_")
		if !strings.HasPrefix(name, envPrefix) || known[name] != "" || otherEnv[name] != "" || sections[first] {
			continue
		}
		if near := nearestEnv(name, known); near != "" {
			warn = append(warn, fmt.Sprintf("environment variable %s names no config key and is ignored (did you mean %s, for %s?)", name, near, known[near]))
		}
	}
	sort.Strings(warn)
	return warn
}

// nearestEnv is the known variable closest to name by edit distance, if
// within a third of its length; "" otherwise.
func nearestEnv(name string, known map[string]string) string {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	return nearest(name, names)
}

// nearest is the one of names closest to name by edit distance (the first
// in sorted order of those as close), if within a third of name's length;
// "" otherwise. It says "did you mean" for HOMA_ variables and the file's
// keys alike.
func nearest(name string, names []string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	best, bestD := "", len(name)/3+1
	for _, k := range names {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fromEnv reports which variable set key, or "" when none did; an
// element of a list (lcores[0]) is set by the list's variable.
func fromEnv(key string) string {
	name := envName(strings.TrimSuffix(key, listIndex.FindString(key)))
	if !strings.HasSuffix(key, "]") {
		name = envName(key)
	}
	if _, ok := os.LookupEnv(name); ok {
		return name
	}
	return ""
}
