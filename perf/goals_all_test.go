package perf_test

import (
	"fmt"
	"strings"
	"testing"

	_ "github.com/homa-dpdk/homa-dpdk/perf/scenarios" // the whole table

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/perftest"
)

// Without results every row of the table says why it has no figure.
func TestGoals_noResultsNoFigures(t *testing.T) {
	gs := perf.AllGoals(nil)
	for _, g := range gs {
		if g.Absent == "" || g.Met {
			t.Errorf("%+v", g)
		}
	}
	sec := perf.GoalsSection(gs)
	if len(sec.Tables[0].Rows) != len(gs) || !strings.HasSuffix(sec.Tables[0].Title, "(0 of "+fmt.Sprint(len(gs))+" met)") {
		t.Errorf("%+v", sec)
	}
}

// perf all does not run perf collectives: its rows say so.
func TestGoals_collectivesWithoutItsRun(t *testing.T) {
	all := perftest.GoalsByName(perf.AllGoals(nil))
	if r, ok := all["all_reduce bus bandwidth at 64 MiB, 2 ranks, homa over gloo"]; !ok || !strings.Contains(r.Absent, "perf collectives") {
		t.Errorf("perf all's table without collectives: %+v", r)
	}
}
