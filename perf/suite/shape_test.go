package suite

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/slowdown"
)

var updateShape = flag.Bool("update-shape", false, "rewrite testdata/report-shape.txt")

// The report's shape is pinned: every scenario's JSON keys (its own file
// and all.json's), its report section's name and title, and the goals
// table's rows, as perf all writes them. Moving code between packages
// must leave testdata/report-shape.txt as it is; a change of the report
// that is meant is written there with -update-shape and shows in review.
func TestReportShape_pinned(t *testing.T) {
	got := reportShape()
	path := filepath.Join("testdata", "report-shape.txt")
	if *updateShape {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the report's shape changed (go test ./perf/suite -run Shape -update-shape rewrites it):\n%s",
			lineDiff(string(want), got))
	}
}

func reportShape() string {
	var b strings.Builder
	files := []struct {
		name string
		v    any
	}{
		{"all.json", AllResult{}},
		{"pmd.json", perf.PMDResult{}},
		{"worker-rtt.json", perf.WorkerRTTResult{}},
		{"rtt.json", perf.RTTResult{}},
		{"throughput.json", perf.ThroughputResult{}},
		{"rate.json", perf.RateResult{}},
		{"cost.json", perf.CostResult{}},
		{"floor.json", perf.FloorResult{}},
		{"starts.json", perf.StartsResult{}},
		{"slowdown.json", slowdown.Result{}},
	}
	for _, f := range files {
		fmt.Fprintf(&b, "== %s\n", f.name)
		for _, k := range jsonKeys(reflect.TypeOf(f.v), "") {
			fmt.Fprintf(&b, "%s\n", k)
		}
	}
	b.WriteString("== sections\n")
	secs := []perf.Section{
		perf.GoalsSection(nil),
		perf.PMDSection(&perf.PMDResult{}),
		(&perf.WorkerRTTResult{}).Section(),
		(&perf.RTTResult{}).Section(nil),
		(&perf.ThroughputResult{}).Section(nil),
		(&perf.RateResult{}).Section(nil),
		(&perf.CostResult{}).Section(),
		(&perf.FloorResult{}).Section(),
		(&perf.StartsResult{}).Section(nil),
		{Name: "slowdown", Title: slowdownTitle},
		{Name: "testpmd-path", Title: testpmdPathTitle + ": rtt"},
		{Name: "testpmd-path", Title: testpmdPathTitle + ": throughput"},
	}
	for _, s := range secs {
		fmt.Fprintf(&b, "%s: %s\n", s.Name, s.Title)
	}
	b.WriteString("== goals\n")
	for _, g := range perf.Goals(perf.GoalInputs{}) {
		fmt.Fprintf(&b, "%s [%s]\n", g.Goal, g.Source)
	}
	return b.String()
}

// jsonKeys lists the JSON paths of t's fields: a.b for nested objects,
// a[] for arrays, a{} for maps, sorted.
func jsonKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		return jsonKeys(t.Elem(), prefix+"[]")
	case reflect.Map:
		return jsonKeys(t.Elem(), prefix+"{}")
	case reflect.Struct:
		if t == reflect.TypeOf(time.Time{}) {
			return nil
		}
	default:
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			keys = append(keys, jsonKeys(f.Type, prefix)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		keys = append(keys, p)
		keys = append(keys, jsonKeys(f.Type, p)...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
