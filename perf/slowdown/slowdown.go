package slowdown

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Unloaded maps size to unloaded RTT, interpolating in log-log.
type Unloaded struct {
	Sizes []int     `json:"sizes"`
	RTTUs []float64 `json:"rtt_us"` // median per size
}

// At returns the unloaded RTT of size bytes, in µs.
func (u *Unloaded) At(size int) float64 {
	n := len(u.Sizes)
	if n == 1 || size <= u.Sizes[0] {
		return u.RTTUs[0]
	}
	if size >= u.Sizes[n-1] {
		return u.RTTUs[n-1]
	}
	i := sort.SearchInts(u.Sizes, size)
	if u.Sizes[i] == size {
		return u.RTTUs[i]
	}
	x0, x1 := math.Log(float64(u.Sizes[i-1])), math.Log(float64(u.Sizes[i]))
	y0, y1 := math.Log(u.RTTUs[i-1]), math.Log(u.RTTUs[i])
	f := (math.Log(float64(size)) - x0) / (x1 - x0)
	return math.Exp(y0 + f*(y1-y0))
}

// Sample is one completed RPC.
type Sample struct {
	Size int
	RTT  time.Duration
}

// Bucket is the slowdown of the samples of one size range.
type Bucket struct {
	MinSize    int     `json:"min_size"`
	MaxSize    int     `json:"max_size"` // inclusive
	MedianSize int     `json:"median_size"`
	Count      int     `json:"count"`
	P50        float64 `json:"p50_slowdown"`
	P99        float64 `json:"p99_slowdown"`
	P50RTTUs   float64 `json:"p50_rtt_us"`
	P99RTTUs   float64 `json:"p99_rtt_us"`
}

// rank returns the q-quantile of sorted v.
func rank(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(i, 0)]
}

// Buckets groups samples by size and computes their slowdowns.
func Buckets(samples []Sample, u *Unloaded) []Bucket {
	var out []Bucket
	for _, g := range workload.BySize(samples, func(s Sample) int { return s.Size }) {
		out = append(out, summarize(g, u))
	}
	return out
}

// summarize computes one bucket of samples.
func summarize(g []Sample, u *Unloaded) Bucket {
	sd := make([]float64, len(g))
	rtt := make([]float64, len(g))
	sizes := make([]int, len(g))
	for i, s := range g {
		us := float64(s.RTT) / 1e3
		rtt[i] = us
		sd[i] = us / u.At(s.Size)
		sizes[i] = s.Size
	}
	slices.Sort(sd)
	slices.Sort(rtt)
	slices.Sort(sizes)
	return Bucket{MinSize: sizes[0], MaxSize: sizes[len(sizes)-1], MedianSize: sizes[(len(sizes)-1)/2],
		Count: len(g), P50: rank(sd, 0.5), P99: rank(sd, 0.99),
		P50RTTUs: rank(rtt, 0.5), P99RTTUs: rank(rtt, 0.99)}
}

// ShortLimit is the size of the "short messages" of the headline.
const ShortLimit = 1000

// Short summarizes the samples of at most ShortLimit bytes.
func Short(samples []Sample, u *Unloaded) *Bucket {
	var g []Sample
	for _, s := range samples {
		if s.Size <= ShortLimit {
			g = append(g, s)
		}
	}
	if len(g) == 0 {
		return nil
	}
	b := summarize(g, u)
	return &b
}

// median returns the median of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return rank(v, 0.5)
}
