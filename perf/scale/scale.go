// Package scale is the scale scenario: how the data path grows with the
// shards a host runs on, 1 to N: the engine alone on hosts of n shards
// (perf/enginebench Sharded: small RPCs per second and 1 MB streams'
// Gbps), and the demo pair with each host on n lcores (demo --shards n:
// small RPCs per second), each figure over its 1-shard value. Run it on
// a machine with more cores than shards: on fewer, the shards share them
// and the figures say so.
package scale

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/enginebench"
	"github.com/homa-dpdk/homa-dpdk/perf/homapeer"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot/vg"
)

// Title heads the scale report.
const Title = "scale: the data path on 1 to N shards a host"

func init() {
	perf.Register(perf.Scenario{
		Name:  "scale",
		Order: 105,
		Use:   "[--max N] [--smoke] [--out DIR]",
		Short: "The engine and the demo pair on 1 to N shards a host: small RPCs/s and 1 MB Gbps over 1 shard",
		Long: `scale measures how the data path grows with the shards a host runs on, for n = 1 to
--max (default: the CPUs less one, at least 2): the engine alone on a client and a server
host of n shards each, each shard on its own locked thread (small RPCs per second, and
Gbps of 1 MB streams), and the demo pair with each host on n lcores (demo --shards n:
100-byte RPCs per second, this program's demo as a child). Each figure is also given over
its 1-shard value. On a machine with fewer CPUs than the shards need, the shards share
them: the report says how many CPUs there were. It writes scale.json and scale.png into
the results directory; perf all does not run it (perf cost has the 1 and 2 shards rows).`,
		Title:   Title,
		Command: command,
	})
}

// Config is a scale run's.
type Config struct {
	Self       string
	OutDir     string
	Max        int           // shards: 1..Max
	EngineTime time.Duration // per engine point
	DemoTime   time.Duration // per demo point
	Out        io.Writer
}

// Point is the figures at one count of shards.
type Point struct {
	Shards           int     `json:"shards"`
	EngineRPCsPerSec float64 `json:"engine_small_rpcs_per_sec"`
	EngineGbps       float64 `json:"engine_1mb_gbps"`
	DemoRPCsPerSec   float64 `json:"demo_pair_small_rpcs_per_sec"`
}

// Result is scale.json.
type Result struct {
	Method string  `json:"method"`
	CPUs   int     `json:"cpus"`
	Points []Point `json:"points"`
}

// Method is how the scenario measures.
const Method = `For n = 1 to the maximum: the engine benchmark on a client and a server host sharded ` +
	`alike into n shards (enginebench.Sharded: shard i of each on goroutine i locked to its thread, each host's ` +
	`shards sharing its grant view and link clock), small RPCs (100 B each way, 16 in flight a shard) and 1 MB ` +
	`streams (4 in flight a shard); then homa-dpdk demo --shards n --sizes 100 --concurrency 64 as a child ` +
	`(each host n shards, shard s of both on the s-th worker lcore, lcores mapped onto the CPUs). Over 1: each ` +
	`figure over its value at n = 1 in the same run.`

func command(fs *pflag.FlagSet) func(perf.Invocation) error {
	maxShards := max(2, runtime.NumCPU()-1)
	f := perf.BindFlags(fs, "", false)
	fs.IntVar(&maxShards, "max", maxShards, "the most shards a host (1..16)")
	return func(inv perf.Invocation) error {
		if maxShards < 1 || maxShards > 16 {
			return fmt.Errorf("--max %d: want 1..16", maxShards)
		}
		o, err := f.Options(inv.Out)
		if err != nil {
			return err
		}
		cfg := Config{Self: o.Self, OutDir: o.Dir, Max: maxShards, EngineTime: 2 * time.Second, DemoTime: 3 * time.Second, Out: inv.Out}
		if f.Smoke {
			cfg.EngineTime, cfg.DemoTime = 200*time.Millisecond, time.Second
		}
		prog := perf.NewProgress(os.Stderr, "scale", 3*maxShards)
		res, err := Measure(cfg, prog)
		prog.Done()
		if err != nil {
			return err
		}
		return res.Report().Write(inv.Out, o.Dir)
	}
}

// Measure runs every point.
func Measure(cfg Config, prog *perf.Progress) (*Result, error) {
	res := &Result{Method: Method, CPUs: runtime.NumCPU()}
	for n := 1; n <= cfg.Max; n++ {
		p := Point{Shards: n}
		prog.Step(fmt.Sprintf("engine small RPCs on %d shards", n))
		r, err := enginebench.RunSharded(enginebench.SmallRPC, n, cfg.EngineTime)
		if err != nil {
			return nil, fmt.Errorf("engine on %d shards: %w", n, err)
		}
		p.EngineRPCsPerSec = float64(r.RPCs) / r.Seconds
		prog.Step(fmt.Sprintf("engine 1 MB streams on %d shards", n))
		if r, err = enginebench.RunSharded(enginebench.Stream1MB, n, cfg.EngineTime); err != nil {
			return nil, fmt.Errorf("engine streams on %d shards: %w", n, err)
		}
		p.EngineGbps = r.Gbps
		prog.Step(fmt.Sprintf("demo pair on %d lcores", n))
		args := []string{"demo", "--shards", strconv.Itoa(n), "--sizes", "100", "--concurrency", "64",
			"--seconds", strconv.FormatFloat(cfg.DemoTime.Seconds(), 'f', -1, 64)}
		d, err := homapeer.RunDemo(cfg.Self, filepath.Join(cfg.OutDir, fmt.Sprintf("scale-demo-%d.log", n)), args)
		if err != nil {
			return nil, fmt.Errorf("demo pair on %d lcores: %w", n, err)
		}
		p.DemoRPCsPerSec = d.RPCsPerSec
		res.Points = append(res.Points, p)
		fmt.Fprintf(cfg.Out, "scale: %d shards: engine %.0f RPCs/s, %.1f Gbps; demo pair %.0f RPCs/s\n",
			n, p.EngineRPCsPerSec, p.EngineGbps, p.DemoRPCsPerSec)
	}
	return res, nil
}

// over is v over the 1-shard value one ("" without one).
func over(v, one float64) string {
	if one == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", v/one)
}

// Table is the points with each figure over its 1-shard value.
func (r *Result) Table() perf.Table {
	t := perf.Table{Header: []string{"shards", "engine RPCs/s", "over 1", "engine 1 MB Gbps", "over 1", "demo pair RPCs/s", "over 1"}}
	if len(r.Points) == 0 {
		return t
	}
	one := r.Points[0]
	for _, p := range r.Points {
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Shards),
			fmt.Sprintf("%.0f", p.EngineRPCsPerSec), over(p.EngineRPCsPerSec, one.EngineRPCsPerSec),
			fmt.Sprintf("%.1f", p.EngineGbps), over(p.EngineGbps, one.EngineGbps),
			fmt.Sprintf("%.0f", p.DemoRPCsPerSec), over(p.DemoRPCsPerSec, one.DemoRPCsPerSec)})
	}
	return t
}

// Report is the scale scenario's report: the table, and each series
// over its 1-shard value plotted against the shards, with the line of
// perfect scaling.
func (r *Result) Report() perf.Report {
	c := plots.Lines{Title: fmt.Sprintf("Scaling over shards (%d CPUs)", r.CPUs), X: "shards a host", Y: "over 1 shard", W: 7 * vg.Inch, H: 4 * vg.Inch}
	if len(r.Points) > 0 {
		one := r.Points[0]
		shards := func(x Point) float64 { return float64(x.Shards) }
		for i, s := range []struct {
			name string
			get  func(Point) float64
		}{
			{"engine small RPCs/s", func(x Point) float64 { return x.EngineRPCsPerSec / max(one.EngineRPCsPerSec, 1e-9) }},
			{"engine 1 MB Gbps", func(x Point) float64 { return x.EngineGbps / max(one.EngineGbps, 1e-9) }},
			{"demo pair RPCs/s", func(x Point) float64 { return x.DemoRPCsPerSec / max(one.DemoRPCsPerSec, 1e-9) }},
		} {
			c.Lines = append(c.Lines, plots.Line{Name: s.name, Color: plots.Palette[i], XY: plots.XYs(r.Points, shards, s.get)})
		}
		c.Lines = append(c.Lines, plots.Line{Name: "perfect", Color: plots.Palette[3], Dashes: plots.Dashed, XY: plots.XYs(r.Points, shards, shards)})
	}
	return perf.Report{Name: "scale", Title: Title, Method: r.Method, Tables: []perf.Table{r.Table()},
		Notes: []string{fmt.Sprintf("This machine has %d CPUs: with fewer than the shards need, they share them.", r.CPUs)},
		JSON:  "scale.json", Result: r, Plots: []perf.Plot{{File: "scale.png", Chart: c}}}
}
