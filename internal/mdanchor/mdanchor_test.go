package mdanchor

import (
	"slices"
	"testing"
)

func TestSlugs_asGitHubMakesThem(t *testing.T) {
	got := Slugs([]string{"The cluster in simulation: `perf cluster`", "Tests", "Tests", "4. Priorities are real queues", "See [wire](wire.md)", "Ünïcode_and-dash"})
	want := []string{"the-cluster-in-simulation-perf-cluster", "tests", "tests-1", "4-priorities-are-real-queues", "see-wire", "ünïcode_and-dash"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
