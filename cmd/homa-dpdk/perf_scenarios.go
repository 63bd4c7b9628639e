package main

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
	"github.com/homa-dpdk/homa-dpdk/perf/workerrtt"
	"github.com/spf13/cobra"
)

// The perf scenarios of issue 6 that write a results directory: rtt,
// throughput, and all (every scenario, then one markdown report and one
// JSON).

func perfScenarioCmds() []*cobra.Command {
	return []*cobra.Command{perfRTTCmd(), perfThroughputCmd(), perfTestpmdPathCmd(), perfAllCmd()}
}

type scenarioFlags struct {
	smoke   bool
	out     string
	noVeth  bool
	testpmd string // set by testpmd-path: Homa's hosts joined through this dpdk-testpmd
}

func (f *scenarioFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.smoke, "smoke", false, "tiny counts and durations (CI runs this once)")
	c.Flags().StringVar(&f.out, "out", "", "results directory (default results/<timestamp>)")
	c.Flags().BoolVar(&f.noVeth, "no-veth", false, "skip kernel TCP across a veth pair between network namespaces")
}

func scenarioPrereqs() (string, error) {
	if runtime.NumCPU() < 2 {
		return "", fmt.Errorf("the scenario needs two CPUs (the daemon's polling loop and the workers); this machine has %d", runtime.NumCPU())
	}
	return os.Executable()
}

// scenarioRunE is a scenario command's body: prerequisites, the results
// directory, run, and where the results are.
func scenarioRunE(f *scenarioFlags, run func(self, dir string, out io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		self, err := scenarioPrereqs()
		if err != nil {
			return err
		}
		dir, err := perf.ResultsDir(f.out)
		if err != nil {
			return err
		}
		if err := run(self, dir, cmd.OutOrStdout()); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "results in %s\n", dir)
		return nil
	}
}

func perfRTTCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "rtt [--smoke] [--out DIR]",
		Short: "Unloaded RTT of Homa workers (100 B to 1 MB) vs kernel TCP over loopback and veth",
		Long: `rtt measures the unloaded round trip of 100 B, 1 KB, 10 KB, 100 KB and 1 MB messages
issued by shared-memory workers through the daemon (two Homa hosts on a net_memif pair,
run as a child process: demo --workers), then of the same request/response over kernel
TCP (TCP_NODELAY) on loopback and across a veth pair between two network namespaces,
in the same run. It prints P50 and P99 per size and the ratios TCP/Homa, and writes
rtt.json and rtt.png into the results directory.`,
		RunE: scenarioRunE(&f, func(self, dir string, out io.Writer) error {
			_, _, err := runRTTScenario(self, dir, f, out)
			return err
		}),
	}
	f.add(c)
	return c
}

func runRTTScenario(self, dir string, f scenarioFlags, out io.Writer) (*perf.RTTResult, []string, error) {
	cfg := perf.RTTConfigFor(f.smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth, cfg.Testpmd = self, dir, out, !f.noVeth, f.testpmd
	cfg.Progress = perf.NewProgress(os.Stderr, "rtt", perf.RTTSteps(cfg))
	res, err := perf.RunRTT(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(dir)
	return res, imgs, err
}

func perfTestpmdPathCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "testpmd-path [--smoke] [--out DIR]",
		Short: "rtt and throughput with dpdk-testpmd forwarding between the two Homa hosts",
		Long: `testpmd-path runs rtt and throughput with the daemon's two hosts joined through
dpdk-testpmd (io forwarding between two memif ports) instead of directly, so that a
third-party DPDK forwarder sits in the path; kernel TCP is measured beside it as in rtt
and throughput. Results go to DIR/testpmd-path/.`,
		RunE: scenarioRunE(&f, func(self, dir string, out io.Writer) error {
			_, _, _, err := runTestpmdPath(self, dir, f, out)
			return err
		}),
	}
	f.add(c)
	return c
}

// runTestpmdPath runs rtt and throughput through dpdk-testpmd, in
// DIR/testpmd-path; it returns the report's section images relative to
// dir.
func runTestpmdPath(self, dir string, f scenarioFlags, out io.Writer) (*perf.RTTResult, *perf.ThroughputResult, []string, error) {
	sub := filepath.Join(dir, "testpmd-path")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, nil, nil, err
	}
	f.testpmd = "dpdk-testpmd"
	rtt, rimgs, err := runRTTScenario(self, sub, f, out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("rtt through testpmd: %w", err)
	}
	tp, timgs, err := runThroughputScenario(self, sub, f, out)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("throughput through testpmd: %w", err)
	}
	var imgs []string
	for _, i := range append(rimgs, timgs...) {
		imgs = append(imgs, filepath.Join("testpmd-path", i))
	}
	return rtt, tp, imgs, nil
}

func perfThroughputCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "throughput [--smoke] [--out DIR]",
		Short: "Gbps and CPU per GB of a Homa worker pair streaming 1 MB messages vs kernel TCP",
		Long: `throughput streams 1 MB messages (4 outstanding, 1-byte replies) from a client worker
to a server worker through the daemon (run as a child process: demo --workers), then
over kernel TCP on loopback and across a veth pair, and prints Gbps of payload and CPU
seconds per GB (harness and daemon processes). It writes throughput.json and
throughput-gbps.png, throughput-cpu.png into the results directory.`,
		RunE: scenarioRunE(&f, func(self, dir string, out io.Writer) error {
			_, _, err := runThroughputScenario(self, dir, f, out)
			return err
		}),
	}
	f.add(c)
	return c
}

func runThroughputScenario(self, dir string, f scenarioFlags, out io.Writer) (*perf.ThroughputResult, []string, error) {
	cfg := perf.ThroughputConfigFor(f.smoke)
	cfg.Self, cfg.OutDir, cfg.Out, cfg.Veth, cfg.Testpmd = self, dir, out, !f.noVeth, f.testpmd
	cfg.Progress = perf.NewProgress(os.Stderr, "throughput", perf.ThroughputSteps(cfg))
	res, err := perf.RunThroughput(cfg)
	cfg.Progress.Done()
	if err != nil {
		return nil, nil, err
	}
	imgs, err := res.WriteFiles(dir)
	return res, imgs, err
}

// allResult is the combined JSON of `perf all`.
type allResult struct {
	Started    time.Time              `json:"started"`
	Seconds    float64                `json:"seconds"`
	Smoke      bool                   `json:"smoke"`
	CPUs       int                    `json:"cpus"`
	PMD        *perf.PMDResult        `json:"pmd,omitempty"`
	WorkerRTT  *workerrtt.Result      `json:"worker_rtt,omitempty"`
	RTT        *perf.RTTResult        `json:"rtt,omitempty"`
	Throughput *perf.ThroughputResult `json:"throughput,omitempty"`
	Errors     map[string]string      `json:"errors,omitempty"`
	Files      map[string]string      `json:"files"`
}

func perfAllCmd() *cobra.Command {
	var f scenarioFlags
	c := &cobra.Command{
		Use:   "all [--smoke] [--out DIR]",
		Short: "Every scenario (pmd, worker-rtt, rtt, throughput, slowdown, testpmd-path), then one markdown report and one JSON",
		Long: `all runs pmd (short) and worker-rtt, each as a child process of this program writing its
JSON, then rtt and throughput, then slowdown (a child process: its daemons and
namespaces) and testpmd-path (rtt and throughput through dpdk-testpmd, in
testpmd-path/), and writes report.md (every table, plot and each
scenario's method and known distortions) and all.json into the results directory. A
scenario that fails is reported as failed and the others still run; the command then
exits with an error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := scenarioPrereqs()
			if err != nil {
				return err
			}
			dir, err := perf.ResultsDir(f.out)
			if err != nil {
				return err
			}
			return runAll(self, dir, f, cmd.OutOrStdout())
		},
	}
	f.add(c)
	return c
}

func runAll(self, dir string, f scenarioFlags, out io.Writer) error {
	all := allResult{Started: time.Now(), Smoke: f.smoke, CPUs: runtime.NumCPU(), Errors: map[string]string{},
		Files: map[string]string{}}
	var secs []perf.Section

	// pmd, short, as a child process (it brings up EAL in its process).
	pmdArgs := []string{"perf", "pmd", "--seconds", "2", "--warmup", "1", "--trials", "3"}
	if f.smoke {
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
	if f.smoke {
		wArgs = append(wArgs, "--rounds", "1", "--rpcs", "2000", "--warmup", "200")
	}
	var wr workerrtt.Result
	if err := runChildScenario(self, dir, "worker-rtt", wArgs, &wr, out); err != nil {
		all.Errors["worker-rtt"] = err.Error()
		secs = append(secs, perf.Section{Name: "worker-rtt", Title: "worker-rtt: what the shared-memory path adds", Error: err.Error()})
	} else {
		all.WorkerRTT = &wr
		secs = append(secs, workerRTTSection(&wr))
	}
	all.Files["worker-rtt"] = "worker-rtt.json"

	rtt, imgs, err := runRTTScenario(self, dir, f, out)
	if err != nil {
		all.Errors["rtt"] = err.Error()
		secs = append(secs, perf.Section{Name: "rtt", Title: "rtt: unloaded round trip, Homa workers vs kernel TCP", Error: err.Error()})
	} else {
		all.RTT = rtt
		secs = append(secs, rtt.Section(imgs))
		all.Files["rtt"] = "rtt.json"
	}
	tp, imgs, err := runThroughputScenario(self, dir, f, out)
	if err != nil {
		all.Errors["throughput"] = err.Error()
		secs = append(secs, perf.Section{Name: "throughput", Title: "throughput: 1 MB messages, Homa workers vs kernel TCP", Error: err.Error()})
	} else {
		all.Throughput = tp
		secs = append(secs, tp.Section(imgs))
		all.Files["throughput"] = "throughput.json"
	}

	if sec, err := runSlowdownChild(self, dir, f.smoke, out); err != nil {
		all.Errors["slowdown"] = err.Error()
		secs = append(secs, perf.Section{Name: "slowdown", Title: slowdownTitle, Method: slowdown.Method, Error: err.Error()})
	} else {
		secs = append(secs, sec)
		all.Files["slowdown"] = "slowdown.json"
	}

	if rtt, tp, imgs, err := runTestpmdPath(self, dir, f, out); err != nil {
		all.Errors["testpmd-path"] = err.Error()
		secs = append(secs, perf.Section{Name: "testpmd-path", Title: testpmdPathTitle, Error: err.Error()})
	} else {
		rs, ts := rtt.Section(nil), tp.Section(nil)
		rs.Name, rs.Title, rs.Images = "testpmd-path", testpmdPathTitle+": rtt", imgs
		ts.Name, ts.Title = "testpmd-path", testpmdPathTitle+": throughput"
		secs = append(secs, rs, ts)
		all.Files["testpmd-path"] = "testpmd-path/rtt.json, testpmd-path/throughput.json"
	}

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
	if f.smoke {
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

// runChildScenario runs `self args... --json DIR/NAME.json` with its
// output in DIR/NAME.log, then reads the JSON into v.
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
	cmd := exec.Command(self, append(args, "--json", jsonPath)...)
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

func workerRTTSection(r *workerrtt.Result) perf.Section {
	t := perf.Table{Header: []string{"path", "P50 µs", "P99 µs", "P99.9 µs", "max µs", "RPCs"}}
	for _, p := range r.Paths {
		t.Rows = append(t.Rows, []string{p.Path, fmt.Sprintf("%.2f", p.P50Us), fmt.Sprintf("%.2f", p.P99Us),
			fmt.Sprintf("%.2f", p.P999Us), fmt.Sprintf("%.1f", p.MaxUs), fmt.Sprint(p.RPCs)})
	}
	return perf.Section{Name: "worker-rtt", Title: "worker-rtt: what the shared-memory path adds", Method: r.Method,
		Distortions: "Both hosts run in one process, polled by one busy loop on lcore 1, so a worker's submission " +
			"waits on average about half a pass of a loop that serves both hosts; the workers' CPU 0 is shared " +
			"with the daemon's main thread, the Go runtime's threads and everything else on the machine.",
		Tables: []perf.Table{t},
		Notes: []string{
			fmt.Sprintf("%d-byte RPCs; the shared-memory path adds %.2f µs at the median.", r.Size, r.AddedMedianUs),
			fmt.Sprintf("Polling loop (both hosts, lcore 1): one pass every %.0f ns on average; longest gap between two passes %.1f µs.", r.PassNs, r.MaxGapUs),
		}}
}
