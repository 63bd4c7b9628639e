package perf_test

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

	_ "github.com/homa-dpdk/homa-dpdk/perf/scenarios" // the whole table

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/cost"
	"github.com/homa-dpdk/homa-dpdk/perf/floor"
	"github.com/homa-dpdk/homa-dpdk/perf/pmd"
	"github.com/homa-dpdk/homa-dpdk/perf/rate"
	"github.com/homa-dpdk/homa-dpdk/perf/rtt"
	"github.com/homa-dpdk/homa-dpdk/perf/slowdown"
	"github.com/homa-dpdk/homa-dpdk/perf/starts"
	"github.com/homa-dpdk/homa-dpdk/perf/testpmdpath"
	"github.com/homa-dpdk/homa-dpdk/perf/throughput"
	"github.com/homa-dpdk/homa-dpdk/perf/workerrtt"
)

var updateShape = flag.Bool("update-shape", false, "rewrite testdata/report-shape.txt")

// The report's shape is pinned: every scenario's JSON keys (its own file
// and all.json's), its report section's name and title, and the goals
// table's rows, as perf all writes them. Moving code between packages
// must leave testdata/report-shape.txt as it is; a change of the report
// that is meant is written there with -update-shape and shows in review.
func TestReportShape_pinned(t *testing.T) {
	got := reportShape(t)
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
		t.Errorf("the report's shape changed (go test ./perf -run Shape -update-shape rewrites it):\n%s",
			lineDiff(string(want), got))
	}
}

func reportShape(t *testing.T) string {
	var b strings.Builder
	// Each scenario's result type, by name: its own JSON file and its
	// key in all.json.
	results := map[string]any{
		"pmd":        pmd.Result{},
		"worker-rtt": workerrtt.Result{},
		"rtt":        rtt.Result{},
		"throughput": throughput.Result{},
		"rate":       rate.Result{},
		"cost":       cost.Result{},
		"floor":      floor.Result{},
		"starts":     starts.Result{},
		"slowdown":   slowdown.Result{},
	}
	var allKeys []string
	for _, k := range jsonKeys(reflect.TypeOf(perf.AllResult{}), "") {
		allKeys = append(allKeys, k)
	}
	for _, s := range perf.Scenarios() {
		if s.Key == "" {
			continue
		}
		r, ok := results[s.Name]
		if !ok {
			t.Errorf("scenario %s has the all.json key %s but no result type here", s.Name, s.Key)
			continue
		}
		allKeys = append(allKeys, s.Key)
		allKeys = append(allKeys, jsonKeys(reflect.TypeOf(r), s.Key)...)
	}
	slices.Sort(allKeys)
	fmt.Fprintf(&b, "== all.json\n%s\n", strings.Join(allKeys, "\n"))
	for _, name := range []string{"pmd", "worker-rtt", "rtt", "throughput", "rate", "cost", "floor", "starts", "slowdown"} {
		fmt.Fprintf(&b, "== %s.json\n", name)
		for _, k := range jsonKeys(reflect.TypeOf(results[name]), "") {
			fmt.Fprintf(&b, "%s\n", k)
		}
	}
	b.WriteString("== sections\n")
	sections := map[string][]perf.Section{
		"pmd":        {(&pmd.Result{}).Report().Section(nil)},
		"worker-rtt": {(&workerrtt.Result{}).Report().Section(nil)},
		"rtt":        {(&rtt.Result{}).Report().Section(nil)},
		"throughput": {(&throughput.Result{}).Report().Section(nil)},
		"rate":       {(&rate.Result{}).Report().Section(nil)},
		"cost":       {(&cost.Result{}).Report().Section(nil)},
		"floor":      {(&floor.Result{}).Report().Section(nil)},
		"starts":     {(&starts.Result{}).Report().Section(nil)},
		"slowdown":   {(&slowdown.Result{}).Report().Section(nil)},
	}
	for _, n := range testpmdpath.Through {
		sections["testpmd-path"] = append(sections["testpmd-path"], perf.Section{Name: "testpmd-path", Title: testpmdpath.Title + ": " + n})
	}
	secs := []perf.Section{perf.GoalsSection(nil)}
	for _, s := range perf.Scenarios() {
		if s.All == nil {
			continue
		}
		ss, ok := sections[s.Name]
		if !ok {
			t.Errorf("perf all runs %s, which has no section here", s.Name)
		}
		secs = append(secs, ss...)
	}
	for _, s := range secs {
		fmt.Fprintf(&b, "%s: %s\n", s.Name, s.Title)
	}
	b.WriteString("== goals\n")
	for _, g := range perf.AllGoals(nil) {
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
