package main

import (
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
