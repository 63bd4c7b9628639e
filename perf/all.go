package perf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/internal/child"
)

// Build and CPUModel are the program's build and the machine's CPU, for
// perf all's report; the program sets them.
var Build, CPUModel string

// AllResult is the combined JSON of `perf all`: the run, each scenario's
// result under its Key (in the table's order), the goals table, the
// scenarios that failed and the files each wrote.
type AllResult struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Smoke   bool      `json:"smoke"`
	CPUs    int       `json:"cpus"`
	// Build and CPUModel name the program and the machine: the program
	// sets the package's Build and CPUModel.
	Build    string `json:"build"`
	CPUModel string `json:"cpu_model"`
	// Results are the scenarios' results by Key, written in keys' order.
	Results map[string]any    `json:"-"`
	keys    []string          `json:"-"`
	Goals   []Goal            `json:"goals"`
	Errors  map[string]string `json:"errors,omitempty"`
	Files   map[string]string `json:"files"`
}

// MarshalJSON writes the run's fields, then each result under its key,
// then the goals, errors and files.
func (a *AllResult) MarshalJSON() ([]byte, error) {
	type fields AllResult // without this method
	b, err := json.Marshal((*fields)(a))
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, []byte(`,"goals":`))
	if i < 0 {
		return nil, fmt.Errorf("all.json: no goals field in %.80s", b)
	}
	var out bytes.Buffer
	out.Write(b[:i])
	for _, k := range a.keys {
		v, err := json.Marshal(a.Results[k])
		if err != nil {
			return nil, fmt.Errorf("all.json: %s: %w", k, err)
		}
		fmt.Fprintf(&out, ",%q:", k)
		out.Write(v)
	}
	out.Write(b[i:])
	return out.Bytes(), nil
}

// All runs every scenario with an All, in Order, then writes report.md
// (the goals table first, then each scenario's sections) and all.json
// into o.Dir. A scenario that fails is reported as failed and the others
// still run; All then returns an error naming them.
func All(o Options) error {
	all := AllResult{Started: time.Now(), Smoke: o.Smoke, CPUs: runtime.NumCPU(), Build: Build, CPUModel: CPUModel, Results: map[string]any{},
		Errors: map[string]string{}, Files: map[string]string{}}
	var secs []Section
	prior := map[string]any{}
	for _, s := range Scenarios() {
		if s.All == nil {
			continue
		}
		out, err := s.All(o, prior)
		if out.Files != "" {
			all.Files[s.Name] = out.Files
		}
		if err != nil {
			all.Errors[s.Name] = err.Error()
			if len(out.Sections) == 0 {
				out.Sections = []Section{{Name: s.Name, Title: s.Title}}
			}
			for i := range out.Sections {
				out.Sections[i].Error = err.Error()
			}
			secs = append(secs, out.Sections...)
			continue
		}
		secs = append(secs, out.Sections...)
		if out.Result != nil {
			prior[s.Name] = out.Result
			if s.Key != "" {
				all.Results[s.Key] = out.Result
				all.keys = append(all.keys, s.Key)
			}
		}
	}

	// The goals table leads the report.
	all.Goals = AllGoals(prior)
	secs = append([]Section{GoalsSection(all.Goals)}, secs...)

	all.Seconds = time.Since(all.Started).Seconds()
	all.Files["report"] = "report.md"
	if err := WriteJSON(filepath.Join(o.Dir, "all.json"), &all); err != nil {
		return err
	}
	meta := []string{
		"Started " + all.Started.Format(time.RFC3339) + fmt.Sprintf(", took %.0f s.", all.Seconds),
		fmt.Sprintf("Build: %s. Machine: %d CPUs (%s), %s/%s.", all.Build, all.CPUs, all.CPUModel, runtime.GOOS, runtime.GOARCH),
		"Every figure comes from this one run; absolute figures from different runs do not compare, ratios from one run do.",
		"Combined results: all.json; each scenario's own JSON and its child process's log are beside this report.",
	}
	if o.Smoke {
		meta = append(meta, "**Smoke run** (--smoke): tiny counts and durations, the figures mean nothing.")
	}
	if err := WriteReport(filepath.Join(o.Dir, "report.md"), "homa-dpdk performance report", meta, secs); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "report: %s, combined JSON: %s\n", filepath.Join(o.Dir, "report.md"), filepath.Join(o.Dir, "all.json"))
	if len(all.Errors) > 0 {
		var names []string
		for n := range all.Errors {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("scenario(s) failed: %s (see report.md)", strings.Join(names, ", "))
	}
	return nil
}

// AllGoals is the goals table from results (by scenario name; a scenario
// absent did not run or failed): every scenario's rows, in GoalOrder.
func AllGoals(results map[string]any) []Goal {
	ss := Scenarios()
	slices.SortStableFunc(ss, func(a, b Scenario) int { return a.GoalOrder - b.GoalOrder })
	var gs []Goal
	for _, s := range ss {
		if s.Goals != nil {
			gs = append(gs, s.Goals(results[s.Name])...)
		}
	}
	return gs
}

// RunChildJSON runs `o.Self args... --out o.Dir` (a scenario that needs
// a process of its own: EAL, namespaces) with its output in
// o.Dir/NAME.log, showing it on the progress line, and reads the
// o.Dir/NAME.json it wrote into v; a failure ends with the log's end.
func RunChildJSON(o Options, name string, args []string, v any) error {
	logPath := filepath.Join(o.Dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	args = append(args, "--out", o.Dir)
	prog := NewProgress(os.Stderr, name, 1)
	prog.Step("running " + strings.Join(args, " ") + " (log: " + logPath + ")")
	cmd := exec.Command(o.Self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	err = child.Run(cmd, syscall.SIGTERM) // a perf all that dies ends the scenario (SIGTERM: it cleans up)
	prog.Done()
	if err != nil {
		return fmt.Errorf("%s: %v; its log ends: %s", strings.Join(args, " "), err, LastLines(Tail(logPath, 1500), 10))
	}
	jsonPath := filepath.Join(o.Dir, name+".json")
	b, err := os.ReadFile(jsonPath)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	return nil
}

// ChildOutcome runs a scenario as a child process writing
// o.Dir/NAME.json (RunChildJSON) and makes perf all's outcome of it: its
// result, its report's text on o.Out and its section, with the plots the
// child drew. The file is listed even when the child failed.
func ChildOutcome[R any, P interface {
	*R
	Reporter
}](o Options, name string, args []string) (Outcome, error) {
	files := name + ".json"
	r := P(new(R))
	if err := RunChildJSON(o, name, args, r); err != nil {
		return Outcome{Files: files}, err
	}
	rep := r.Report()
	rep.Text(o.Out)
	var images []string
	for _, p := range rep.Plots {
		if _, err := os.Stat(filepath.Join(o.Dir, p.File)); err == nil {
			images = append(images, p.File)
		}
	}
	return Outcome{Result: r, Sections: []Section{rep.Section(images)}, Files: files}, nil
}

// LastLines are the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// AllNames are the scenarios perf all runs, in the order it runs them,
// and those it leaves to their own commands, from the table.
func AllNames() (runs, skips []string) {
	for _, s := range Scenarios() {
		switch {
		case s.All != nil:
			runs = append(runs, s.Name)
		case !s.Hidden:
			skips = append(skips, s.Name)
		}
	}
	return runs, skips
}

// AllScenario is `perf all`: every scenario of the table with an All, in
// Order, then the report. Its help names them, and those it leaves out,
// from the table.
func AllScenario() Scenario {
	runs, skips := AllNames()
	return Scenario{
		Name:  "all",
		Use:   "[--smoke] [--out DIR] [--no-veth]",
		Short: "Every scenario but " + strings.Join(skips, ", ") + ", then one markdown report and one JSON",
		Long: "all runs, in this order: " + strings.Join(runs, ", ") + `; each as its own command would
(pmd, worker-rtt and slowdown as child processes of this program; floor beside
throughput's homa-memif runs, with Homa on memif at MTU 9000 of its own; testpmd-path
into testpmd-path/), then writes report.md (the goals table, then every scenario's
tables, plots, method and known distortions) and all.json into the results directory.
A scenario that fails is reported as failed and the others still run; the command then
exits with an error. It does not run ` + strings.Join(skips, ", ") + `: each is a command of its
own (the goals table shows the rows of those with goals, without figures). perf --help
says what each scenario measures.`,
		Command: DirCommand(func(o Options, _ map[string]any) (Outcome, error) { return Outcome{}, All(o) }),
	}
}
