// Package suite runs the perf harness's scenarios that write a results
// directory — rtt, throughput, rate, floor, starts, cost, testpmd-path — and all of them at once
// (All: every scenario, then one markdown report and one JSON). The
// scenarios that bring DPDK up in their own process (pmd, worker-rtt,
// slowdown's daemons) run as child processes of the program, so this
// package needs no cgo.
package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/slowdown"
)

// Options are a scenario run's: the program to run the daemons and
// children with, the results directory, and the command's flags.
type Options struct {
	Self    string // this program (os.Executable)
	Dir     string // results directory
	Smoke   bool   // tiny counts and durations
	NoVeth  bool   // skip kernel TCP across a veth pair
	Testpmd string // join Homa's hosts through this dpdk-testpmd ("": directly)
	Out     io.Writer
}

// RTT runs the rtt scenario into o.Dir; it returns the result and its
// images (relative to o.Dir).
func RTT(o Options) (*perf.RTTResult, []string, error) {
	cfg := perf.RTTConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth, cfg.Testpmd = o.Self, o.Dir, o.Out, !o.NoVeth, o.Testpmd
	cfg.Progress = perf.NewProgress(os.Stderr, "rtt", perf.RTTSteps(cfg))
	res, err := perf.RunRTT(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(o.Dir)
	return res, imgs, err
}

// Throughput runs the throughput scenario into o.Dir.
func Throughput(o Options) (*perf.ThroughputResult, []string, error) {
	cfg := perf.ThroughputConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth, cfg.Testpmd = o.Self, o.Dir, o.Out, !o.NoVeth, o.Testpmd
	cfg.Progress = perf.NewProgress(os.Stderr, "throughput", perf.ThroughputSteps(cfg))
	res, err := perf.RunThroughput(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(o.Dir)
	return res, imgs, err
}

// Cost runs the cost scenario (the engine benchmark in this process, the
// demo pair as children) and writes o.Dir/cost.json.
func Cost(o Options) (*perf.CostResult, error) {
	cfg := perf.CostConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir = o.Self, o.Dir
	prog := perf.NewProgress(os.Stderr, "cost", perf.CostSteps())
	res, err := perf.RunCost(cfg, prog)
	prog.Done()
	if err != nil {
		return nil, err
	}
	return res, perf.WriteJSON(filepath.Join(o.Dir, "cost.json"), res)
}

// Rate runs the rate scenario into o.Dir. It has no testpmd path: its
// hosts are always joined directly.
func Rate(o Options) (*perf.RateResult, []string, error) {
	cfg := perf.RateConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth = o.Self, o.Dir, o.Out, !o.NoVeth
	cfg.Progress = perf.NewProgress(os.Stderr, "rate", perf.RateSteps(cfg))
	res, err := perf.RunRate(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(o.Dir)
	return res, imgs, err
}

// Starts runs the starts scenario into o.Dir.
func Starts(o Options) (*perf.StartsResult, []string, error) {
	cfg := perf.StartsConfigFor(o.Smoke)
	cfg.Self, cfg.OutDir, cfg.Out = o.Self, o.Dir, o.Out
	cfg.Progress = perf.NewProgress(os.Stderr, "starts", perf.StartsSteps(cfg))
	res, err := perf.RunStarts(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(o.Dir)
	return res, imgs, err
}

// TestpmdPath runs rtt and throughput through dpdk-testpmd, in
// o.Dir/testpmd-path; it returns the report's section images relative to
// o.Dir.
func TestpmdPath(o Options) (*perf.RTTResult, *perf.ThroughputResult, []string, error) {
	sub := filepath.Join(o.Dir, "testpmd-path")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, nil, nil, err
	}
	o.Dir, o.Testpmd = sub, "dpdk-testpmd"
	rtt, rimgs, err := RTT(o)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("rtt through testpmd: %w", err)
	}
	tp, timgs, err := Throughput(o)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("throughput through testpmd: %w", err)
	}
	var imgs []string
	for _, i := range append(rimgs, timgs...) {
		imgs = append(imgs, filepath.Join("testpmd-path", i))
	}
	return rtt, tp, imgs, nil
}

// Floor runs the floor scenario into o.Dir (floor.json): dpdk-testpmd
// over one memif link at MTU 1500 and 9000, and Homa on memif at each of
// homaMTUs; compare are Homa runs of the same invocation (perf all's
// throughput) to set beside the floor too.
func Floor(o Options, compare []perf.ThroughputRun, homaMTUs []int) (*perf.FloorResult, error) {
	cfg := perf.FloorConfigFor(o.Smoke, homaMTUs)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Compare = o.Self, o.Dir, o.Out, compare
	cfg.Progress = perf.NewProgress(os.Stderr, "floor", perf.FloorSteps(cfg))
	res, err := perf.RunFloor(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, err
	}
	return res, res.WriteJSON(filepath.Join(o.Dir, "floor.json"))
}

// AllResult is the combined JSON of `perf all`.
type AllResult struct {
	Started    time.Time              `json:"started"`
	Seconds    float64                `json:"seconds"`
	Smoke      bool                   `json:"smoke"`
	CPUs       int                    `json:"cpus"`
	PMD        *perf.PMDResult        `json:"pmd,omitempty"`
	WorkerRTT  *perf.WorkerRTTResult  `json:"worker_rtt,omitempty"`
	RTT        *perf.RTTResult        `json:"rtt,omitempty"`
	Throughput *perf.ThroughputResult `json:"throughput,omitempty"`
	Cost       *perf.CostResult       `json:"cost,omitempty"`
	Goals      []perf.Goal            `json:"goals"`
	Rate       *perf.RateResult       `json:"rate,omitempty"`
	Floor      *perf.FloorResult      `json:"floor,omitempty"`
	Starts     *perf.StartsResult     `json:"starts,omitempty"`
	Errors     map[string]string      `json:"errors,omitempty"`
	Files      map[string]string      `json:"files"`
}

// All runs every scenario (see the perf all command), then writes
// report.md and all.json into o.Dir. A scenario that fails is reported as
// failed and the others still run; All then returns an error naming them.
func All(o Options) error {
	self, dir, out := o.Self, o.Dir, o.Out
	all := AllResult{Started: time.Now(), Smoke: o.Smoke, CPUs: runtime.NumCPU(), Errors: map[string]string{},
		Files: map[string]string{}}
	var secs []perf.Section

	// pmd, short, as a child process (it brings up EAL in its process).
	pmdArgs := []string{"perf", "pmd", "--seconds", "2", "--warmup", "1", "--trials", "3"}
	if o.Smoke {
		pmdArgs = []string{"perf", "pmd", "--seconds", "1", "--warmup", "1", "--trials", "1"}
	}
	var pmd perf.PMDResult
	if err := runChildScenario(self, dir, "pmd", pmdArgs, &pmd, out); err != nil {
		all.Errors["pmd"] = err.Error()
		secs = append(secs, perf.Section{Name: "pmd", Title: "pmd: forwarding, our Go loop vs dpdk-testpmd", Error: err.Error()})
	} else {
		all.PMD = &pmd
		secs = append(secs, perf.PMDSection(&pmd))
	}
	all.Files["pmd"] = "pmd.json"

	// worker-rtt, as a child process (it runs both hosts in its process).
	wArgs := []string{"perf", "worker-rtt"}
	if o.Smoke {
		wArgs = append(wArgs, "--rounds", "1", "--rpcs", "2000", "--warmup", "200")
	}
	var wr perf.WorkerRTTResult
	if err := runChildScenario(self, dir, "worker-rtt", wArgs, &wr, out); err != nil {
		all.Errors["worker-rtt"] = err.Error()
		secs = append(secs, perf.Section{Name: "worker-rtt", Title: "worker-rtt: what the shared-memory path adds", Error: err.Error()})
	} else {
		all.WorkerRTT = &wr
		secs = append(secs, wr.Section())
	}
	all.Files["worker-rtt"] = "worker-rtt.json"

	rtt, imgs, err := RTT(o)
	if err != nil {
		all.Errors["rtt"] = err.Error()
		secs = append(secs, perf.Section{Name: "rtt", Title: "rtt: unloaded round trip, Homa workers vs kernel TCP", Error: err.Error()})
	} else {
		all.RTT = rtt
		secs = append(secs, rtt.Section(imgs))
		all.Files["rtt"] = "rtt.json"
	}
	tp, imgs, err := Throughput(o)
	if err != nil {
		all.Errors["throughput"] = err.Error()
		secs = append(secs, perf.Section{Name: "throughput", Title: perf.ThroughputTitle, Error: err.Error()})
	} else {
		all.Throughput = tp
		secs = append(secs, tp.Section(imgs))
		all.Files["throughput"] = "throughput.json"
	}
	rate, imgs, err := Rate(o)
	if err != nil {
		all.Errors["rate"] = err.Error()
		secs = append(secs, perf.Section{Name: "rate", Title: perf.RateTitle, Error: err.Error()})
	} else {
		all.Rate = rate
		secs = append(secs, rate.Section(imgs))
		all.Files["rate"] = "rate.json"
	}

	cost, err := Cost(o)
	if err != nil {
		all.Errors["cost"] = err.Error()
		secs = append(secs, perf.Section{Name: "cost", Title: "cost: the data path's time per packet event", Error: err.Error()})
	} else {
		all.Cost = cost
		secs = append(secs, cost.Section())
		all.Files["cost"] = "cost.json"
	}

	// The memif link's floor, beside throughput's homa-memif runs (MTU
	// 1500) and its own at MTU 9000.
	var compare []perf.ThroughputRun
	if tp != nil {
		compare = tp.Runs
	}
	if fl, err := Floor(o, compare, []int{9000}); err != nil {
		all.Errors["floor"] = err.Error()
		secs = append(secs, perf.Section{Name: "floor", Title: perf.FloorTitle, Error: err.Error()})
	} else {
		all.Floor = fl
		secs = append(secs, fl.Section())
		all.Files["floor"] = "floor.json"
	}

	st, imgs, err := Starts(o)
	if err != nil {
		all.Errors["starts"] = err.Error()
		secs = append(secs, perf.Section{Name: "starts", Title: perf.StartsTitle, Error: err.Error()})
	} else {
		all.Starts = st
		secs = append(secs, st.Section(imgs))
		all.Files["starts"] = "starts.json"
	}

	if sec, err := runSlowdownChild(self, dir, o.Smoke, out); err != nil {
		all.Errors["slowdown"] = err.Error()
		secs = append(secs, perf.Section{Name: "slowdown", Title: slowdownTitle, Method: slowdown.Method, Error: err.Error()})
	} else {
		secs = append(secs, sec)
		all.Files["slowdown"] = "slowdown.json"
	}

	if rtt, tp, imgs, err := TestpmdPath(o); err != nil {
		all.Errors["testpmd-path"] = err.Error()
		secs = append(secs, perf.Section{Name: "testpmd-path", Title: testpmdPathTitle, Error: err.Error()})
	} else {
		rs, ts := rtt.Section(nil), tp.Section(nil)
		rs.Name, rs.Title, rs.Images = "testpmd-path", testpmdPathTitle+": rtt", imgs
		ts.Name, ts.Title = "testpmd-path", testpmdPathTitle+": throughput"
		secs = append(secs, rs, ts)
		all.Files["testpmd-path"] = "testpmd-path/rtt.json, testpmd-path/throughput.json"
	}

	// The goals table leads the report.
	all.Goals = perf.Goals(perf.GoalInputs{RTT: all.RTT, Throughput: all.Throughput, Cost: all.Cost, Starts: all.Starts,
		WorkerRTT: all.WorkerRTT})
	secs = append([]perf.Section{perf.GoalsSection(all.Goals)}, secs...)

	all.Seconds = time.Since(all.Started).Seconds()
	all.Files["report"] = "report.md"
	if err := perf.WriteJSON(filepath.Join(dir, "all.json"), &all); err != nil {
		return err
	}
	meta := []string{
		"Started " + all.Started.Format(time.RFC3339) + fmt.Sprintf(", took %.0f s.", all.Seconds),
		fmt.Sprintf("Machine: %d CPUs, %s/%s, %s.", all.CPUs, runtime.GOOS, runtime.GOARCH, runtime.Version()),
		"Every figure comes from this one run; absolute figures from different runs do not compare, ratios from one run do.",
		"Combined results: all.json; each scenario's own JSON and its child process's log are beside this report.",
	}
	if o.Smoke {
		meta = append(meta, "**Smoke run** (--smoke): tiny counts and durations, the figures mean nothing.")
	}
	if err := perf.WriteReport(filepath.Join(dir, "report.md"), "homa-dpdk performance report", meta, secs); err != nil {
		return err
	}
	fmt.Fprintf(out, "report: %s, combined JSON: %s\n", filepath.Join(dir, "report.md"), filepath.Join(dir, "all.json"))
	if len(all.Errors) > 0 {
		var names []string
		for n := range all.Errors {
			names = append(names, n)
		}
		return fmt.Errorf("scenario(s) failed: %s (see report.md)", strings.Join(names, ", "))
	}
	return nil
}

const testpmdPathTitle = "testpmd-path: Homa through dpdk-testpmd (io forwarding between memif ports)"

const slowdownTitle = "slowdown: Homa daemons vs kernel TCP through a tc bottleneck (W1-W5)"

// runSlowdownChild runs `self perf slowdown --out DIR` (it needs its own
// process: daemons and namespaces) and makes its report section from its
// table and plots; its JSON is DIR/slowdown.json.
func runSlowdownChild(self, dir string, smoke bool, out io.Writer) (perf.Section, error) {
	args := []string{"perf", "slowdown", "--out", dir}
	if smoke {
		args = append(args, "--smoke")
	}
	logPath := filepath.Join(dir, "slowdown.log")
	log, err := os.Create(logPath)
	if err != nil {
		return perf.Section{}, err
	}
	defer log.Close()
	prog := perf.NewProgress(os.Stderr, "slowdown", 1)
	prog.Step("running " + strings.Join(args, " ") + " (log: " + logPath + ")")
	cmd := exec.Command(self, args...)
	// A `perf all` that dies (Ctrl-C, kill) takes the scenario with it
	// (SIGTERM: it then removes its namespaces and stops its daemons).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	prog.Done()
	b, _ := os.ReadFile(logPath)
	if err != nil {
		return perf.Section{}, fmt.Errorf("%s: %v; its log ends: %s", strings.Join(args, " "), err, lastLines(string(b), 10))
	}
	table := slowdownTable(string(b))
	fmt.Fprintf(out, "slowdown:\n%s", table)
	imgs, _ := filepath.Glob(filepath.Join(dir, "slowdown-*.png"))
	for i := range imgs {
		imgs[i] = filepath.Base(imgs[i])
	}
	return perf.Section{Name: "slowdown", Title: slowdownTitle, Method: slowdown.Method,
		Notes:  []string{"Results: slowdown.json; the run's own table (end of slowdown.log):", "```\n" + strings.TrimRight(table, "\n") + "\n```"},
		Images: imgs}, nil
}

// slowdownTable is the table slowdown.Print wrote at the end of log: from
// its "slowdown: " line on, without the plots' file names.
func slowdownTable(log string) string {
	i := strings.LastIndex(log, "\nslowdown: ")
	if i < 0 {
		return lastLines(log, 12)
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(log[i+1:], "\n") {
		if !strings.HasPrefix(l, "plot: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// runChildScenario runs `self args... --out DIR` (which writes
// DIR/NAME.json) with its output in DIR/NAME.log, then reads the JSON
// into v.
func runChildScenario(self, dir, name string, args []string, v any, out io.Writer) error {
	jsonPath := filepath.Join(dir, name+".json")
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	prog := perf.NewProgress(os.Stderr, name, 1)
	prog.Step("running " + strings.Join(args, " ") + " (log: " + logPath + ")")
	cmd := exec.Command(self, append(args, "--out", dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	prog.Done()
	if err != nil {
		b, _ := os.ReadFile(logPath)
		if len(b) > 1500 {
			b = b[len(b)-1500:]
		}
		return fmt.Errorf("%s: %v; its log ends: %s", strings.Join(args, " "), err, b)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	// The child's own table, for the terminal.
	if lb, err := os.ReadFile(logPath); err == nil {
		fmt.Fprintf(out, "%s:\n%s", name, lastLines(string(lb), 8))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
