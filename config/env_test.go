package config

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A HOMA_ variable that is not shaped like a key (its first word no
// section's) but is one letter or two from a key's variable is a typo
// that would be ignored: it is warned of, with the variable meant. The
// other programs' HOMA_ variables (otherEnv) and names near no key are
// left alone.
func TestEnvWarnings_nearMissNamed(t *testing.T) {
	got := EnvWarnings([]string{
		"HOMA_WORKER_ZERO_COPY_MIN=5",
		"HOMA_METRIC_ADDRESS=127.0.0.1:1",
		"HOMA_SOCKET=/run/homa-dpdk/workers.sock",
		"HOMA_TEST_V6=only",
		"HOMA_SOMETHING_ELSE_ENTIRELY=1",
		"PATH=/usr/bin",
	})
	want := []string{
		"environment variable HOMA_METRIC_ADDRESS names no config key and is ignored (did you mean HOMA_METRICS_ADDRESS, for metrics.address?)",
		"environment variable HOMA_WORKER_ZERO_COPY_MIN names no config key and is ignored (did you mean HOMA_WORKERS_ZERO_COPY_MIN, for workers.zero_copy_min?)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// envUse finds the HOMA_ names that the repository's files use as
// environment variables: quoted in Go, read by getenv-like calls in C,
// C++ and Python, assigned (HOMA_X=) or expanded ($HOMA_X) anywhere.
var envUse = []struct {
	files *regexp.Regexp // the files the pattern applies to
	re    *regexp.Regexp
}{
	{regexp.MustCompile(`\.go$`), regexp.MustCompile(`"(HOMA_[A-Z0-9_]*[A-Z0-9])[="]`)},
	{regexp.MustCompile(`\.(c|h|cpp|hpp)$`), regexp.MustCompile(`\w*(?:env|get)\w*\(\s*"(HOMA_[A-Z0-9_]*[A-Z0-9])"`)},
	{regexp.MustCompile(`\.py$`), regexp.MustCompile(`["'](HOMA_[A-Z0-9_]*[A-Z0-9])["']`)},
	{regexp.MustCompile(``), regexp.MustCompile(`\b(HOMA_[A-Z0-9_]*[A-Z0-9])=`)},
	{regexp.MustCompile(``), regexp.MustCompile(`\$\{?(HOMA_[A-Z0-9_]*[A-Z0-9])`)},
}

// Every HOMA_ environment variable the repository uses is a config key's
// or listed in otherEnv, the one list of the others, which names none
// that is no longer used. The tests of config and of config check are
// left out: they set misspelt names on purpose.
func TestEnv_everyHOMAVariableIsAKeyOrListed(t *testing.T) {
	used := map[string]string{} // name → a file that uses it
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "build" || name == "results" || name == "node_modules" || name == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "config/") && strings.HasSuffix(rel, "_test.go") || rel == "cmd/homa-dpdk/configcmd_test.go" {
			return nil // misspelt on purpose
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 4<<20 {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(data, 0) >= 0 { // binaries
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if trimmed := strings.TrimSpace(line); strings.HasSuffix(rel, ".go") && strings.HasPrefix(trimmed, "//") {
				continue // Go comments show placeholders (HOMA_KEY=value)
			}
			for _, u := range envUse {
				if !u.files.MatchString(rel) {
					continue
				}
				for _, m := range u.re.FindAllStringSubmatch(line, -1) {
					if _, ok := used[m[1]]; !ok {
						used[m[1]] = rel
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := envKeys()
	var unknown []string
	for name, file := range used {
		if keys[name] == "" && otherEnv[name] == "" {
			unknown = append(unknown, name+" (in "+file+")")
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Errorf("HOMA_ variables used in the repository that are no config key's and not in otherEnv (env.go): %s", strings.Join(unknown, ", "))
	}
	for name := range otherEnv {
		if _, ok := used[name]; !ok {
			t.Errorf("otherEnv lists %s, which nothing in the repository uses", name)
		}
		if keys[name] != "" {
			t.Errorf("otherEnv lists %s, the variable of config key %s", name, keys[name])
		}
	}
	for _, want := range []string{"HOMA_SOCKET", "HOMA_REQUIRE_DPDK", "HOMA_DPDK_SPIN_US", "HOMA_NCCL_PORT", "HOMA_TEST_V6", "HOMA_METRICS_ADDRESS", "HOMA_WORKERS_ZERO_COPY_MIN"} {
		if _, ok := used[want]; !ok {
			t.Errorf("the scan missed %s", want)
		}
	}
}
