package perf

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
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
	FirstP50Us  float64  `json:"first_p50_us"`
	Steady      RTTPoint `json:"steady"`
	WarmupRatio float64  `json:"warmup_ratio"`
	Large       RTTPoint `json:"large"` // the large RPCs (1 MB)
	// Phases are the page faults and the harness's collections of each
	// phase: attach (dialling both workers), first, steady (its warm-up
	// included), large (its warm-up included).
	Phases []PhaseFaults `json:"phases"`
	// How the worker regions were mapped: by the harness and by the
	// daemon after the attach, by the daemon after the first RPCs and at
	// the end (what the phases made resident).
	HarnessRegions    RegionMem `json:"harness_regions"`
	DaemonRegions     RegionMem `json:"daemon_regions"`
	RegionsAfterFirst RegionMem `json:"daemon_regions_after_first"`
	RegionsAtEnd      RegionMem `json:"daemon_regions_at_end"`
	Loop              LoopStats `json:"loop"`
	Error             string    `json:"error,omitempty"` // the start failed: why (its figures are not counted)
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

// StartsLink is one link's starts summed up.
type StartsLink struct {
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

// StartsGoal is one goal's verdict on one link.
type StartsGoal struct {
	Goal      string  `json:"goal"` // "no bimodal starts", "no warm-up penalty"
	Link      string  `json:"link"`
	Criterion string  `json:"criterion"` // what is compared with the limit
	Value     float64 `json:"value"`
	Limit     float64 `json:"limit"`
	Pass      bool    `json:"pass"`
	Why       string  `json:"why,omitempty"` // a verdict without a figure: why
}

// StartsResult is the starts scenario's result.
type StartsResult struct {
	Method      string       `json:"method"`
	Distortions string       `json:"distortions"`
	Smoke       bool         `json:"smoke"`
	Starts      int          `json:"starts_per_link"`
	FirstRPCs   int          `json:"first_rpcs"`
	SmallSize   int          `json:"small_size_bytes"`
	LargeSize   int          `json:"large_size_bytes"`
	SpreadGoal  float64      `json:"spread_goal"` // max/min − 1 of the large P50s, at most
	WarmupGoal  float64      `json:"warmup_goal"` // first P50 / steady P50, at most, in every start
	Runs        []StartRun   `json:"runs"`
	Links       []StartsLink `json:"links"`
	Goals       []StartsGoal `json:"goals"`
}

// Goal names, as the issue has them.
const (
	goalBimodal = "no bimodal starts"
	goalWarmup  = "no warm-up penalty"
)

// summarize fills each run's first P50 and warm-up ratio, the links'
// summaries and the goals' verdicts from the runs.
func (r *StartsResult) summarize() {
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
		x.FirstP50Us = Median(us)
		if x.Steady.P50Us > 0 {
			x.WarmupRatio = x.FirstP50Us / x.Steady.P50Us
		}
	}
	for _, link := range links {
		s := StartsLink{Link: link}
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
			s.LargeP50MinUs, s.LargeP50MaxUs, s.LargeP50MedianUs = slices.Min(large), slices.Max(large), Median(large)
			if s.LargeP50MinUs > 0 {
				s.SpreadMaxMin = s.LargeP50MaxUs/s.LargeP50MinUs - 1
			}
			if s.LargeP50MedianUs > 0 {
				s.SpreadOverMedian = (s.LargeP50MaxUs - s.LargeP50MinUs) / s.LargeP50MedianUs
			}
			s.WarmupMedian, s.WarmupMax = Median(ratios), slices.Max(ratios)
			s.SteadyP50Us, s.FirstP50Us = Median(steady), Median(first)
		}
		r.Links = append(r.Links, s)
		r.Goals = append(r.Goals, r.spreadGoal(s), r.warmupGoal(s))
	}
}

func (r *StartsResult) spreadGoal(s StartsLink) StartsGoal {
	g := StartsGoal{Goal: goalBimodal, Link: s.Link, Limit: r.SpreadGoal, Value: s.SpreadMaxMin,
		Criterion: fmt.Sprintf("max/min − 1 of the %s P50s of %d starts", SizeName(r.LargeSize), s.Starts)}
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

func (r *StartsResult) warmupGoal(s StartsLink) StartsGoal {
	g := StartsGoal{Goal: goalWarmup, Link: s.Link, Limit: r.WarmupGoal, Value: s.WarmupMax,
		Criterion: fmt.Sprintf("the worst start's P50 of its first %d %s RPCs over its steady P50", r.FirstRPCs, SizeName(r.SmallSize))}
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
func (r *StartsResult) Pass() bool {
	for _, g := range r.Goals {
		if !g.Pass {
			return false
		}
	}
	return len(r.Goals) > 0
}

// RunTable is the starts as rows, in the order run.
func (r *StartsResult) RunTable() Table {
	small, large := SizeName(r.SmallSize), SizeName(r.LargeSize)
	t := Table{Header: []string{"start", "link", "up ms", "attach ms", fmt.Sprintf("first %d P50 µs", r.FirstRPCs), small + " steady P50 µs",
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
			fmt.Sprintf("%d/%d", x.phase("large").LoopInvoluntary, x.phase("large").LoopVoluntary), x.DaemonRegions.pages()})
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

// pages names the regions' pages: "2 MB", "4 KB", or "?" when unread.
func (m RegionMem) pages() string {
	switch {
	case m.Error != "" || m.Mappings == 0:
		return "?"
	case m.Hugetlb:
		return "2 MB"
	}
	return fmt.Sprintf("%d KB", m.PageKB)
}

// LinkTable is the links' summaries: the large P50s' spread and the
// warm-up ratios.
func (r *StartsResult) LinkTable() Table {
	large := SizeName(r.LargeSize)
	t := Table{Header: []string{"link", "starts", large + " P50 min µs", "median µs", "max µs", "max/min − 1", "(max − min)/median",
		"warm-up ratio median", "worst", "steady P50 µs", "first P50 µs"}}
	for _, s := range r.Links {
		n := fmt.Sprint(s.Starts)
		if s.Failed > 0 {
			n += fmt.Sprintf(" (%d failed)", s.Failed)
		}
		t.Rows = append(t.Rows, []string{s.Link, n, fmt.Sprintf("%.1f", s.LargeP50MinUs), fmt.Sprintf("%.1f", s.LargeP50MedianUs),
			fmt.Sprintf("%.1f", s.LargeP50MaxUs), Pct(s.SpreadMaxMin), Pct(s.SpreadOverMedian),
			fmt.Sprintf("%.2f", s.WarmupMedian), fmt.Sprintf("%.2f", s.WarmupMax), fmt.Sprintf("%.1f", s.SteadyP50Us), fmt.Sprintf("%.1f", s.FirstP50Us)})
	}
	return t
}

func Pct(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }

// GoalTable is the goals' verdicts, per link.
func (r *StartsResult) GoalTable() Table {
	t := Table{Header: []string{"goal", "link", "measured", "value", "limit", "verdict"}}
	for _, g := range r.Goals {
		val, lim := fmt.Sprintf("%.2f", g.Value), fmt.Sprintf("%.2f", g.Limit)
		if g.Goal == goalBimodal {
			val, lim = Pct(g.Value), Pct(g.Limit)
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
func (r *StartsResult) failures() []string {
	var out []string
	for _, x := range r.Runs {
		if x.Error != "" {
			out = append(out, fmt.Sprintf("start %d on %s failed: %s", x.Start, x.Link, x.Error))
		}
	}
	return out
}

// startsSmokeNote is what a smoke run's report says of its verdicts.
const startsSmokeNote = "Smoke run: two starts on the ring link with short phases; the verdicts are not the goals' (those need the full run's ten starts)."

// Print writes the tables and the failed starts.
func (r *StartsResult) Print(w io.Writer) {
	fmt.Fprintf(w, "starts: %d fresh daemons per link, first %d %s RPCs, steady %s, %s\n", r.Starts, r.FirstRPCs,
		SizeName(r.SmallSize), SizeName(r.SmallSize), SizeName(r.LargeSize))
	r.RunTable().Text(w)
	r.LinkTable().Text(w)
	r.GoalTable().Text(w)
	for _, f := range r.failures() {
		fmt.Fprintln(w, f)
	}
	if r.Smoke {
		fmt.Fprintln(w, startsSmokeNote)
	}
}

// StartsTitle is the starts section's title.
const StartsTitle = "starts: fresh daemons, their first RPCs and their spread"

// Section is the starts result for the report.
func (r *StartsResult) Section(images []string) Section {
	s := Section{Name: "starts", Title: StartsTitle, Method: r.Method, Distortions: r.Distortions,
		Tables: []Table{r.GoalTable(), r.LinkTable(), r.RunTable()}, Images: images}
	s.Notes = append(s.Notes, fmt.Sprintf("Goals (issue 14): %s — the %s P50s of the starts within %s of each other (max/min − 1); "+
		"%s — in every start, the P50 of the first %d %s RPCs within %.1fx of the steady P50.",
		goalBimodal, SizeName(r.LargeSize), Pct(r.SpreadGoal), goalWarmup, r.FirstRPCs, SizeName(r.SmallSize), r.WarmupGoal))
	s.Notes = append(s.Notes, "Daemon faults: the daemon's minor page faults in each phase (/proc/PID/stat); regions: "+
		"the page size of the worker regions as the daemon maps them (smaps); loop preempted/slept: the daemon's loop thread's "+
		"involuntary context switches in the large phase (another thread ran on its CPU) and voluntary ones (the Go scheduler parked it; "+
		"it busy-polls otherwise). Each first RPC's time and faults are in starts.json.")
	s.Notes = append(s.Notes, r.failures()...)
	if r.Smoke {
		s.Notes = append(s.Notes, startsSmokeNote)
	}
	return s
}

// WriteFiles writes starts.json and the plots into dir and returns the
// plots' names.
func (r *StartsResult) WriteFiles(dir string) ([]string, error) {
	if err := WriteJSON(filepath.Join(dir, "starts.json"), r); err != nil {
		return nil, err
	}
	if err := plotStartsFirst(r, filepath.Join(dir, "starts-first.png")); err != nil {
		return nil, err
	}
	if err := plotStartsLarge(r, filepath.Join(dir, "starts-large.png")); err != nil {
		return nil, err
	}
	return []string{"starts-first.png", "starts-large.png"}, nil
}
