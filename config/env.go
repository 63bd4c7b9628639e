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
		if !strings.HasPrefix(name, envPrefix) || known[name] != "" {
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
