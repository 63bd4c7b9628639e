package ncclring

import (
	"fmt"
	"slices"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The goals for the NCCL shape, as ratios within one run: the
// ring through the plugin against gloo's all_reduce (time at small
// sizes; bus bandwidth and CPU per GB at large ones), and the plugin
// against the same ring over libhoma directly (its overhead). perf nccl
// fills them in its own report; perf all, which does not run it, shows
// them without figures.

// SmallMax is the largest size of the small-size goals (64 KiB).
const SmallMax = 64 << 10

// LatencyGoal is the most the plugin's ring may take, over gloo's
// all_reduce, at every size from 8 B to SmallMax.
const LatencyGoal = 0.5

// LargeSizes are the sizes of the bandwidth and CPU goals.
var LargeSizes = []int{4 << 20, 64 << 20}

// OverheadGoalUs is the most the plugin may add per isend+test pair
// over libhoma directly, µs; BandwidthLoss the most bus bandwidth it may
// lose (a fraction).
const (
	OverheadGoalUs = 1.0
	BandwidthLoss  = 0.05
)

// WaitCPUGoalUs is the most CPU a rank may spend per message when
// messages go one at a time each way (the 2-rank all-reduce of 8 B: a
// test loop waiting on each), µs.
const WaitCPUGoalUs = 5.0

// GoalRanks are the job sizes the goals are set for.
var GoalRanks = []int{2, 4}

// Goals are the goal rows from r (nil: perf nccl did not run; every row
// then says so).
func Goals(r *Result) []perf.Goal {
	var gs []perf.Goal
	for _, n := range GoalRanks {
		j := r.job(n)
		absent := func(what string) string {
			switch {
			case r == nil:
				return "measured by perf nccl, which did not run here"
			case j == nil:
				return fmt.Sprintf("no %d-rank job in this run", n)
			}
			return what
		}
		src := fmt.Sprintf("nccl, %d ranks", n)

		g := perf.Goal{Goal: fmt.Sprintf("NCCL ring through the plugin, 8 B-64 KiB, %d ranks: time over gloo's (worst size)", n), Source: src}
		if v, ok := j.worst(func(p, _, gl Point) float64 { return p.TimeUs / gl.TimeUs }, 8, SmallMax, slices.Max); ok {
			perf.AtMost(&g, v, LatencyGoal)
		} else {
			g.Want, g.Absent = fmt.Sprintf("<= %.2f", LatencyGoal), absent("no sizes up to 64 KiB in this run")
		}
		gs = append(gs, g)

		for _, size := range LargeSizes {
			name := perf.SizeName(size)
			g := perf.Goal{Goal: fmt.Sprintf("NCCL ring through the plugin, %s, %d ranks: busbw over gloo's", name, n), Source: src}
			if v, ok := j.worst(func(p, _, gl Point) float64 { return gl.TimeUs / p.TimeUs } /* busbw over busbw: same bytes and ranks */, size, size, slices.Min); ok {
				perf.AtLeast(&g, v, 1)
			} else {
				g.Want, g.Absent = ">= 1.00", absent("no all-reduce of "+name+" in this run")
			}
			gs = append(gs, g)
			g = perf.Goal{Goal: fmt.Sprintf("NCCL ring through the plugin, %s, %d ranks: CPU s per GB over gloo's", name, n), Source: src}
			if v, ok := j.worst(func(p, _, gl Point) float64 { return p.CPUPerGB / gl.CPUPerGB }, size, size, slices.Max); ok {
				perf.AtMost(&g, v, 1)
			} else {
				g.Want, g.Absent = "<= 1.00", absent("no all-reduce of "+name+" in this run")
			}
			gs = append(gs, g)
		}

		g = perf.Goal{Goal: fmt.Sprintf("the plugin over libhoma directly, 8 B-64 KiB, %d ranks: µs more per isend+test pair (median size)", n),
			Source: src}
		if v, ok := j.median(func(p, l, _ Point) float64 { return (p.TimeUs - l.TimeUs) / float64(max(p.Msgs, 1)) }, 8, SmallMax); ok {
			perf.AtMost(&g, v, OverheadGoalUs)
		} else {
			g.Want, g.Absent = fmt.Sprintf("<= %.2f", OverheadGoalUs), absent("no sizes up to 64 KiB in this run")
		}
		gs = append(gs, g)

		g = perf.Goal{Goal: fmt.Sprintf("the plugin over libhoma directly, 4 MiB and 64 MiB, %d ranks: busbw ratio (worst)", n), Source: src}
		if v, ok := j.worst(func(p, l, _ Point) float64 { return l.TimeUs / p.TimeUs }, LargeSizes[0], LargeSizes[len(LargeSizes)-1], slices.Min); ok {
			perf.AtLeast(&g, v, 1-BandwidthLoss)
		} else {
			g.Want, g.Absent = fmt.Sprintf(">= %.2f", 1-BandwidthLoss), absent("no all-reduce of 4 MiB or more in this run")
		}
		gs = append(gs, g)

		if n == 2 {
			g = perf.Goal{Goal: "the plugin, one 8 B message at a time each way (the 8 B all-reduce), 2 ranks: CPU µs per message per rank", Source: src}
			if p, ok := j.point(func(j *Job) []Point { return j.Plugin }, 8); ok {
				perf.AtMost(&g, cpuPerMsgUs(p, n), WaitCPUGoalUs)
			} else {
				g.Want, g.Absent = fmt.Sprintf("<= %.2f", WaitCPUGoalUs), absent("no 8 B all-reduce in this run")
			}
			gs = append(gs, g)
		}
	}
	return gs
}

// cpuPerMsgUs is the CPU each of n ranks spent per message it sent in
// p's all-reduces, µs.
func cpuPerMsgUs(p Point, n int) float64 {
	return p.CPUPerGB * float64(p.Bytes) / 1e9 / float64(n) / float64(p.Msgs) * 1e6
}

// point is the point of bytes in j's series (a nil job has none) that
// counted its messages and CPU.
func (j *Job) point(series func(*Job) []Point, bytes int) (Point, bool) {
	if j == nil {
		return Point{}, false
	}
	p, ok := find(series(j), bytes)
	return p, ok && p.Msgs > 0 && p.CPUPerGB > 0
}

// job is the job of n ranks, or nil.
func (r *Result) job(n int) *Job {
	if r == nil {
		return nil
	}
	for i := range r.Jobs {
		if r.Jobs[i].Ranks == n {
			return &r.Jobs[i]
		}
	}
	return nil
}

// ratios are f of the plugin's, libhoma's and gloo's points at each size
// from lo to hi that all three measured.
func (j *Job) ratios(f func(plugin, libhoma, gloo Point) float64, lo, hi int) []float64 {
	if j == nil {
		return nil
	}
	var out []float64
	for _, p := range j.Plugin {
		if p.Bytes < lo || p.Bytes > hi {
			continue
		}
		l, okL := find(j.Libhoma, p.Bytes)
		g, okG := find(j.Gloo, p.Bytes)
		if okL && okG && p.TimeUs > 0 && l.TimeUs > 0 && g.TimeUs > 0 {
			out = append(out, f(p, l, g))
		}
	}
	return out
}

// worst is pick (slices.Max or slices.Min) of the ratios; false if none.
func (j *Job) worst(f func(plugin, libhoma, gloo Point) float64, lo, hi int, pick func([]float64) float64) (float64, bool) {
	v := j.ratios(f, lo, hi)
	if len(v) == 0 {
		return 0, false
	}
	return pick(v), true
}

// median is the ratios' median; false if none.
func (j *Job) median(f func(plugin, libhoma, gloo Point) float64, lo, hi int) (float64, bool) {
	v := j.ratios(f, lo, hi)
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

func find(pts []Point, bytes int) (Point, bool) {
	for _, p := range pts {
		if p.Bytes == bytes {
			return p, true
		}
	}
	return Point{}, false
}
