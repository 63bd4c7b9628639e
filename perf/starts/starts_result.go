package starts

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
	"github.com/homa-dpdk/homa-dpdk/perf/plots"
	"github.com/homa-dpdk/homa-dpdk/perf/procstat"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// StartRun is one fresh daemon's figures: start Start on Link.
type StartRun struct {
	Link      string  `json:"link"`      // memif, ring (demo --link)
	Start     int     `json:"start"`     // 1..Starts, in the order run (the links take turns)
	UpMs      float64 `json:"up_ms"`     // from starting the daemon to its "up" line
	AttachMs  float64 `json:"attach_ms"` // dialling both workers (the daemon makes their regions then)
	DaemonLog string  `json:"daemon_log,omitempty"`
	// The machine's 2 MB hugepages before the start: free, and of those
	// reserved by mappings not yet touched (other processes' too), so
	// free − reserved is what a new hugetlb region can still get.
	HugepagesFree     int `json:"hugepages_free_before"`
	HugepagesReserved int `json:"hugepages_reserved_before"`
	// First are the first FirstRPCs small RPCs of the fresh daemon, in
	// order (the first also waits for ARP).
	First []FirstRPC `json:"first_rpcs"`
	// FirstP50Us is the median of First; Steady the small RPCs after
	// the warm-up; WarmupRatio FirstP50Us over Steady's P50.
	FirstP50Us  float64       `json:"first_p50_us"`
	Steady      perf.RTTPoint `json:"steady"`
	WarmupRatio float64       `json:"warmup_ratio"`
	Large       perf.RTTPoint `json:"large"` // the large RPCs (1 MB)
	// Phases are the page faults and the harness's collections of each
	// phase: attach (dialling both workers), first, steady (its warm-up
	// included), large (its warm-up included).
	Phases []PhaseFaults `json:"phases"`
	// How the worker regions were mapped: by the harness and by the
	// daemon after the attach, by the daemon after the first RPCs and at
	// the end (what the phases made resident).
	HarnessRegions    procstat.RegionMem `json:"harness_regions"`
	DaemonRegions     procstat.RegionMem `json:"daemon_regions"`
	RegionsAfterFirst procstat.RegionMem `json:"daemon_regions_after_first"`
	RegionsAtEnd      procstat.RegionMem `json:"daemon_regions_at_end"`
	Loop              perf.LoopStats     `json:"loop"`
	Error             string             `json:"error,omitempty"` // the start failed: why (its figures are not counted)
}

// FirstRPC is one of a fresh daemon's first small RPCs: its RTT and the
// minor page faults the daemon and the harness took during it.
type FirstRPC struct {
	Us           float64 `json:"us"`
	DaemonMinor  int64   `json:"daemon_minflt"`
	HarnessMinor int64   `json:"harness_minflt"`
}

// PhaseFaults are the page faults of the daemon and of the harness during
// one phase of a start, the harness's garbage collections and the
// context switches of the daemon's loop thread.
type PhaseFaults struct {
	Phase        string `json:"phase"`
	DaemonMinor  int64  `json:"daemon_minflt"`
	DaemonMajor  int64  `json:"daemon_majflt"`
	HarnessMinor int64  `json:"harness_minflt"`
	HarnessMajor int64  `json:"harness_majflt"`
	HarnessGCs   int    `json:"harness_gcs"`
	// The context switches of the daemon's polling-loop thread: voluntary
	// (the Go scheduler parked it, e.g. to hand its goroutine over after a
	// preemption) and involuntary (another thread ran on its CPU).
	LoopVoluntary   int64 `json:"loop_voluntary_switches"`
	LoopInvoluntary int64 `json:"loop_involuntary_switches"`
}

// Link is one link's starts summed up.
type Link struct {
	Link   string `json:"link"`
	Starts int    `json:"starts"` // that completed
	Failed int    `json:"failed"`
	// The large P50s of the starts: least, median, most, and their
	// spread two ways, max/min − 1 (the goal's) and (max − min)/median.
	LargeP50MinUs    float64 `json:"large_p50_min_us"`
	LargeP50MedianUs float64 `json:"large_p50_median_us"`
	LargeP50MaxUs    float64 `json:"large_p50_max_us"`
	SpreadMaxMin     float64 `json:"spread_max_over_min_minus_1"`
	SpreadOverMedian float64 `json:"spread_range_over_median"`
	// Warm-up ratios of the starts: the median and the worst.
	WarmupMedian float64 `json:"warmup_ratio_median"`
	WarmupMax    float64 `json:"warmup_ratio_max"`
	SteadyP50Us  float64 `json:"steady_p50_median_us"` // median over the starts
	FirstP50Us   float64 `json:"first_p50_median_us"`  // median over the starts
}

// Goal is one goal's verdict on one link.
type Goal struct {
	Goal      string  `json:"goal"` // "no bimodal starts", "no warm-up penalty"
	Link      string  `json:"link"`
	Criterion string  `json:"criterion"` // what is compared with the limit
	Value     float64 `json:"value"`
	Limit     float64 `json:"limit"`
	Pass      bool    `json:"pass"`
	Why       string  `json:"why,omitempty"` // a verdict without a figure: why
}

// Result is the starts scenario's result.
type Result struct {
	Method      string     `json:"method"`
	Distortions string     `json:"distortions"`
	Smoke       bool       `json:"smoke"`
	Starts      int        `json:"starts_per_link"`
	FirstRPCs   int        `json:"first_rpcs"`
	SmallSize   int        `json:"small_size_bytes"`
	LargeSize   int        `json:"large_size_bytes"`
	SpreadGoal  float64    `json:"spread_goal"` // max/min − 1 of the large P50s, at most
	WarmupGoal  float64    `json:"warmup_goal"` // first P50 / steady P50, at most, in every start
	Runs        []StartRun `json:"runs"`
	Links       []Link     `json:"links"`
	Goals       []Goal     `json:"goals"`
}

// Goal names, as the issue has them.
const (
	goalBimodal = "no bimodal starts"
	goalWarmup  = "no warm-up penalty"
)

// summarize fills each run's first P50 and warm-up ratio, the links'
// summaries and the goals' verdicts from the runs.
func (r *Result) summarize() {
	r.Links, r.Goals = nil, nil
	var links []string
	for i := range r.Runs {
		x := &r.Runs[i]
		if !slices.Contains(links, x.Link) {
			links = append(links, x.Link)
		}
		if x.Error != "" {
			continue
		}
		us := make([]float64, len(x.First))
		for k, f := range x.First {
			us[k] = f.Us
		}
		x.FirstP50Us = perf.Median(us)
		if x.Steady.P50Us > 0 {
			x.WarmupRatio = x.FirstP50Us / x.Steady.P50Us
		}
	}
	for _, link := range links {
		s := Link{Link: link}
		var large, ratios, steady, first []float64
		for _, x := range r.Runs {
			switch {
			case x.Link != link:
			case x.Error != "":
				s.Failed++
			default:
				s.Starts++
				large, ratios = append(large, x.Large.P50Us), append(ratios, x.WarmupRatio)
				steady, first = append(steady, x.Steady.P50Us), append(first, x.FirstP50Us)
			}
		}
		if len(large) > 0 {
			s.LargeP50MinUs, s.LargeP50MaxUs, s.LargeP50MedianUs = slices.Min(large), slices.Max(large), perf.Median(large)
			if s.LargeP50MinUs > 0 {
				s.SpreadMaxMin = s.LargeP50MaxUs/s.LargeP50MinUs - 1
			}
			if s.LargeP50MedianUs > 0 {
				s.SpreadOverMedian = (s.LargeP50MaxUs - s.LargeP50MinUs) / s.LargeP50MedianUs
			}
			s.WarmupMedian, s.WarmupMax = perf.Median(ratios), slices.Max(ratios)
			s.SteadyP50Us, s.FirstP50Us = perf.Median(steady), perf.Median(first)
		}
		r.Links = append(r.Links, s)
		r.Goals = append(r.Goals, r.spreadGoal(s), r.warmupGoal(s))
	}
}

func (r *Result) spreadGoal(s Link) Goal {
	g := Goal{Goal: goalBimodal, Link: s.Link, Limit: r.SpreadGoal, Value: s.SpreadMaxMin,
		Criterion: fmt.Sprintf("max/min − 1 of the %s P50s of %d starts", perf.SizeName(r.LargeSize), s.Starts)}
	switch {
	case s.Failed > 0:
		g.Why = fmt.Sprintf("%d of %d starts failed", s.Failed, s.Failed+s.Starts)
	case s.Starts < 2:
		g.Why = "a spread needs two starts"
	default:
		g.Pass = s.SpreadMaxMin <= r.SpreadGoal
	}
	return g
}

func (r *Result) warmupGoal(s Link) Goal {
	g := Goal{Goal: goalWarmup, Link: s.Link, Limit: r.WarmupGoal, Value: s.WarmupMax,
		Criterion: fmt.Sprintf("the worst start's P50 of its first %d %s RPCs over its steady P50", r.FirstRPCs, perf.SizeName(r.SmallSize))}
	switch {
	case s.Failed > 0:
		g.Why = fmt.Sprintf("%d of %d starts failed", s.Failed, s.Failed+s.Starts)
	case s.Starts < 1:
		g.Why = "no start completed"
	default:
		g.Pass = s.WarmupMax <= r.WarmupGoal
	}
	return g
}

// Pass says whether every goal passed on every link.
func (r *Result) Pass() bool {
	for _, g := range r.Goals {
		if !g.Pass {
			return false
		}
	}
	return len(r.Goals) > 0
}

// RunTable is the starts as rows, in the order run.
func (r *Result) RunTable() perf.Table {
	small, large := perf.SizeName(r.SmallSize), perf.SizeName(r.LargeSize)
	t := perf.Table{Header: []string{"start", "link", "up ms", "attach ms", fmt.Sprintf("first %d P50 µs", r.FirstRPCs), small + " steady P50 µs",
		"warm-up ratio", large + " P50 µs", large + " P99 µs", "daemon faults first/steady/large", "loop preempted/slept " + large, "regions"}}
	for _, x := range r.Runs {
		if x.Error != "" {
			t.Rows = append(t.Rows, []string{fmt.Sprint(x.Start), x.Link, "failed", "-", "-", "-", "-", "-", "-", "-", "-", "-"})
			continue
		}
		faults := make([]string, 0, 3)
		for _, name := range []string{"first", "steady", "large"} {
			faults = append(faults, fmt.Sprint(x.phase(name).DaemonMinor))
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(x.Start), x.Link, fmt.Sprintf("%.0f", x.UpMs), fmt.Sprintf("%.0f", x.AttachMs),
			fmt.Sprintf("%.1f", x.FirstP50Us), fmt.Sprintf("%.1f", x.Steady.P50Us), fmt.Sprintf("%.2f", x.WarmupRatio),
			fmt.Sprintf("%.1f", x.Large.P50Us), fmt.Sprintf("%.1f", x.Large.P99Us), strings.Join(faults, "/"),
			fmt.Sprintf("%d/%d", x.phase("large").LoopInvoluntary, x.phase("large").LoopVoluntary), x.DaemonRegions.Pages()})
	}
	return t
}

// phase is the run's phase named name (zero: none).
func (x *StartRun) phase(name string) PhaseFaults {
	for _, p := range x.Phases {
		if p.Phase == name {
			return p
		}
	}
	return PhaseFaults{}
}

// LinkTable is the links' summaries: the large P50s' spread and the
// warm-up ratios.
func (r *Result) LinkTable() perf.Table {
	large := perf.SizeName(r.LargeSize)
	t := perf.Table{Header: []string{"link", "starts", large + " P50 min µs", "median µs", "max µs", "max/min − 1", "(max − min)/median",
		"warm-up ratio median", "worst", "steady P50 µs", "first P50 µs"}}
	for _, s := range r.Links {
		n := fmt.Sprint(s.Starts)
		if s.Failed > 0 {
			n += fmt.Sprintf(" (%d failed)", s.Failed)
		}
		t.Rows = append(t.Rows, []string{s.Link, n, fmt.Sprintf("%.1f", s.LargeP50MinUs), fmt.Sprintf("%.1f", s.LargeP50MedianUs),
			fmt.Sprintf("%.1f", s.LargeP50MaxUs), pct(s.SpreadMaxMin), pct(s.SpreadOverMedian),
			fmt.Sprintf("%.2f", s.WarmupMedian), fmt.Sprintf("%.2f", s.WarmupMax), fmt.Sprintf("%.1f", s.SteadyP50Us), fmt.Sprintf("%.1f", s.FirstP50Us)})
	}
	return t
}

// GoalTable is the goals' verdicts, per link.
func (r *Result) GoalTable() perf.Table {
	t := perf.Table{Header: []string{"goal", "link", "measured", "value", "limit", "verdict"}}
	for _, g := range r.Goals {
		val, lim := fmt.Sprintf("%.2f", g.Value), fmt.Sprintf("%.2f", g.Limit)
		if g.Goal == goalBimodal {
			val, lim = pct(g.Value), pct(g.Limit)
		}
		verdict := "pass"
		switch {
		case g.Why != "":
			verdict, val = "fail: "+g.Why, "-"
		case !g.Pass:
			verdict = "FAIL"
		}
		if r.Smoke {
			verdict += " (smoke)"
		}
		t.Rows = append(t.Rows, []string{g.Goal, g.Link, g.Criterion, val, "≤ " + lim, verdict})
	}
	return t
}

// failures are the failed starts, a line each.
func (r *Result) failures() []string {
	var out []string
	for _, x := range r.Runs {
		if x.Error != "" {
			out = append(out, fmt.Sprintf("start %d on %s failed: %s", x.Start, x.Link, x.Error))
		}
	}
	return out
}

// Title is the starts section's title.
const Title = "starts: fresh daemons, their first RPCs and their spread"

// Report is the starts scenario's report: its tables, each start's first
// RPCs and each start's large P50 plotted.
func (r *Result) Report() perf.Report {
	rep := perf.Report{Name: "starts", Title: Title, Method: r.Method, Distortions: r.Distortions,
		Heading: fmt.Sprintf("starts: %d fresh daemons per link, first %d %s RPCs, steady %s, %s", r.Starts, r.FirstRPCs,
			perf.SizeName(r.SmallSize), perf.SizeName(r.SmallSize), perf.SizeName(r.LargeSize)),
		Tables: []perf.Table{r.GoalTable(), r.LinkTable(), r.RunTable()},
		Notes: append([]string{fmt.Sprintf("Goals (issue 14): %s — the %s P50s of the starts within %s of each other (max/min − 1); "+
			"%s — in every start, the P50 of the first %d %s RPCs within %.1fx of the steady P50.",
			goalBimodal, perf.SizeName(r.LargeSize), pct(r.SpreadGoal), goalWarmup, r.FirstRPCs, perf.SizeName(r.SmallSize), r.WarmupGoal),
			"Daemon faults: the daemon's minor page faults in each phase (/proc/PID/stat); regions: " +
				"the page size of the worker regions as the daemon maps them (smaps); loop preempted/slept: the daemon's loop thread's " +
				"involuntary context switches in the large phase (another thread ran on its CPU) and voluntary ones (the Go scheduler parked it; " +
				"it busy-polls otherwise). Each first RPC's time and faults are in starts.json."}, r.failures()...),
		JSON: "starts.json", Result: r,
		Plots: []perf.Plot{{File: "starts-first.png", Chart: r.firstChart()}, {File: "starts-large.png", Chart: r.largeChart()}}}
	if r.Smoke {
		rep.Smoke = "two starts on the ring link with short phases; the verdicts are not the goals' (those need the full run's ten starts)."
	}
	return rep
}

// startsColor is the colour of a link's starts in the starts plots: that
// of its rtt series.
func startsColor(link string) color.Color { return plots.ColorOf(perf.HomaSeries(link)) }

// firstChart is each start's first RPCs, RTT against the RPC's number
// (a line per start, coloured by link, log RTT), with each link's median
// steady P50 dashed across.
func (r *Result) firstChart() plots.Lines {
	c := plots.Lines{Title: fmt.Sprintf("First %d %s RPCs of each fresh daemon", r.FirstRPCs, perf.SizeName(r.SmallSize)),
		X: "RPC of the start", Y: "RTT (µs)", LogY: true, W: 9.5 * vg.Inch}
	named := map[string]bool{}
	for _, x := range r.Runs {
		l := plots.Line{Color: startsColor(x.Link), Width: vg.Points(0.8)}
		for k, f := range x.First {
			if f.Us > 0 {
				l.XY = append(l.XY, plotter.XY{X: float64(k + 1), Y: f.Us})
			}
		}
		if !named[x.Link] && len(l.XY) > 0 {
			named[x.Link], l.Name = true, perf.HomaSeries(x.Link)+" (a line per start)"
		}
		c.Lines = append(c.Lines, l)
	}
	for _, s := range r.Links {
		if s.SteadyP50Us > 0 && len(r.Runs) > 0 {
			c.Lines = append(c.Lines, plots.Line{Name: perf.HomaSeries(s.Link) + " steady P50 (median of the starts)",
				Color: startsColor(s.Link), Width: vg.Points(2), Dashes: plots.Dashed,
				XY: plotter.XYs{{X: 1, Y: s.SteadyP50Us}, {X: float64(max(r.FirstRPCs, 2)), Y: s.SteadyP50Us}}})
		}
	}
	return c
}

// largeChart is each start's large P50 against its number, a series of
// points per link, from 0 so that the spread reads as a fraction.
func (r *Result) largeChart() plots.Lines {
	c := plots.Lines{Title: fmt.Sprintf("%s P50 of each fresh daemon", perf.SizeName(r.LargeSize)), X: "start", Y: "P50 RTT (µs)",
		YFromZero: true, W: 8.5 * vg.Inch, H: 4 * vg.Inch}
	for _, s := range r.Links {
		var xys plotter.XYs
		for _, x := range r.Runs {
			if x.Link == s.Link && x.Error == "" && x.Large.P50Us > 0 {
				xys = append(xys, plotter.XY{X: float64(x.Start), Y: x.Large.P50Us})
				c.YMax = max(c.YMax, 1.1*x.Large.P50Us)
			}
		}
		c.Lines = append(c.Lines, plots.Line{Name: perf.HomaSeries(s.Link), XY: xys, Color: startsColor(s.Link), Dashes: plots.Dotted, Glyph: plots.Ring})
	}
	return c
}

// Goals are the goal rows on bimodal starts and the warm-up penalty on the goals' link (r nil: it did not run).
func Goals(r *Result) []perf.Goal {
	var gs []perf.Goal
	// Bimodal starts and the warm-up penalty, on the goals' link (the
	// starts section has memif's too).
	for _, name := range []string{goalBimodal, goalWarmup} {
		g := perf.Goal{Goal: name, Source: "starts " + perf.GoalLink, Absent: "the starts scenario did not judge it on " + perf.GoalLink}
		if r != nil {
			for _, sg := range r.Goals {
				if sg.Goal == name && perf.HomaSeries(sg.Link) == perf.GoalLink && sg.Why == "" {
					perf.AtMost(&g, sg.Value, sg.Limit)
					g.Absent = ""
				}
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// pct is a fraction in percent: "10.0 %".
func pct(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }
