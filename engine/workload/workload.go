package workload

import (
	"embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

//go:embed testdata/w*.csv
var workloadFiles embed.FS

// Workload is a message-size distribution: sizes with cumulative
// probabilities.
type Workload struct {
	Name  string
	Sizes []int
	CDF   []float64 // CDF[i] = P(size <= Sizes[i])
}

// LoadWorkload returns W1..W5 (case-insensitive) from testdata/ (embedded).
func LoadWorkload(name string) (*Workload, error) {
	n := strings.ToLower(name)
	f, err := workloadFiles.Open("testdata/" + n + ".csv")
	if err != nil {
		return nil, fmt.Errorf("workload %q: want one of W1..W5", name)
	}
	defer f.Close()
	return ParseWorkload(strings.ToUpper(n), f)
}

// ParseWorkload reads "length_bytes,relative_frequency" lines.
func ParseWorkload(name string, r io.Reader) (*Workload, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", name, err)
	}
	w := &Workload{Name: name}
	var freq []float64
	for i, row := range rows {
		if len(row) != 2 {
			return nil, fmt.Errorf("workload %s: line %d: want 2 fields", name, i+1)
		}
		size, err1 := strconv.Atoi(strings.TrimSpace(row[0]))
		fr, err2 := strconv.ParseFloat(strings.TrimSpace(row[1]), 64)
		if err1 != nil || err2 != nil {
			if i == 0 {
				continue // header
			}
			return nil, fmt.Errorf("workload %s: line %d: %q", name, i+1, row)
		}
		if size < 1 || fr < 0 {
			return nil, fmt.Errorf("workload %s: line %d: bad size or frequency", name, i+1)
		}
		if len(w.Sizes) > 0 && size <= w.Sizes[len(w.Sizes)-1] {
			return nil, fmt.Errorf("workload %s: line %d: sizes must increase", name, i+1)
		}
		w.Sizes = append(w.Sizes, size)
		freq = append(freq, fr)
	}
	total := 0.0
	for _, f := range freq {
		total += f
	}
	if len(w.Sizes) == 0 || total <= 0 {
		return nil, fmt.Errorf("workload %s: empty", name)
	}
	acc := 0.0
	for _, f := range freq {
		acc += f / total
		w.CDF = append(w.CDF, acc)
	}
	w.CDF[len(w.CDF)-1] = 1
	return w, nil
}

// Draw returns a size drawn from the distribution.
func (w *Workload) Draw(rng *rand.Rand) int { return w.Quantile(rng.Float64()) }

// Quantile returns the smallest size whose CDF is at least q.
func (w *Workload) Quantile(q float64) int {
	i := sort.SearchFloat64s(w.CDF, q)
	return w.Sizes[min(i, len(w.Sizes)-1)]
}

// Mean returns the expectation of f(size).
func (w *Workload) Mean(f func(int) float64) float64 {
	m, prev := 0.0, 0.0
	for i, s := range w.Sizes {
		m += (w.CDF[i] - prev) * f(s)
		prev = w.CDF[i]
	}
	return m
}

// Max returns the largest size.
func (w *Workload) Max() int { return w.Sizes[len(w.Sizes)-1] }

// Clamp returns w with every size above limit folded into limit (its
// probability moves there): the worker interface, like kernel Homa,
// carries messages of at most 1,000,000 bytes.
func (w *Workload) Clamp(limit int) *Workload {
	out := &Workload{Name: w.Name}
	for i, s := range w.Sizes {
		if s >= limit {
			out.Sizes = append(out.Sizes, limit)
			out.CDF = append(out.CDF, 1)
			return out
		}
		out.Sizes = append(out.Sizes, s)
		out.CDF = append(out.CDF, w.CDF[i])
	}
	return out
}

// Homa's framing on a 1500-byte MTU, as homa-dpdk sends it (wire package):
// Ethernet 14 + IPv4 20 + the DATA header, and the payload per packet.
var HomaPerPacketPayload = wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)

const (
	homaDataHeader = wire.DataHeaderLen
	ethIPHeaders   = 14 + wire.IPv4MinHeaderLen
)

// HomaWireBytes is the bytes of a message's DATA frames as the qdisc counts
// them (Ethernet and IP headers included, no preamble or FCS).
func HomaWireBytes(size int) float64 {
	n := (size + HomaPerPacketPayload - 1) / HomaPerPacketPayload
	return float64(size + n*(ethIPHeaders+homaDataHeader))
}

// Arrival is one offered RPC.
type Arrival struct {
	At   time.Duration // since the start of the run
	Size int
}

// PoissonArrivals draws open-loop Poisson arrivals for clients clients over
// period, sizes from w, at a total rate that loads a link of rateBps to
// load (0..1) in HomaWireBytes; the result is per client, in time order.
func PoissonArrivals(w *Workload, clients int, period time.Duration, rateBps, load float64, seed uint64) [][]Arrival {
	rng := rand.New(rand.NewPCG(seed, 6))
	perSec := load * rateBps / 8 / w.Mean(HomaWireBytes)
	out := make([][]Arrival, clients)
	t := 0.0
	for {
		t += rng.ExpFloat64() / perSec
		if t >= period.Seconds() {
			return out
		}
		c := rng.IntN(clients)
		out[c] = append(out[c], Arrival{At: time.Duration(t * 1e9), Size: w.Draw(rng)})
	}
}

// Message is one message offered between hosts of a simulation.
type Message struct {
	At       int64 // ns since the start of the run
	Src, Dst int   // host indices, distinct
	Size     int
}

// Messages draws count messages among hosts hosts (at least two):
// Poisson arrivals at perHost messages a second into each host (all hosts
// together: hosts x perHost), each from a uniformly random host to
// another one, sizes from w; rng is the run's, so that a seed gives the
// same messages.
func (w *Workload) Messages(rng *rand.Rand, hosts, count int, perHost float64) []Message {
	rate := perHost * float64(hosts) / 1e9 // messages/ns, all hosts
	out := make([]Message, count)
	t := 0.0
	for i := range out {
		t += rng.ExpFloat64() / rate
		src := rng.IntN(hosts)
		dst := (src + 1 + rng.IntN(hosts-1)) % hosts
		out[i] = Message{At: int64(t), Src: src, Dst: dst, Size: w.Draw(rng)}
	}
	return out
}

// ProbeSizes returns the sizes whose unloaded RTT is measured: the
// workload's smallest and largest and its quantiles, distinct.
func ProbeSizes(w *Workload) []int {
	var s []int
	for _, q := range []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999} {
		s = append(s, w.Quantile(q))
	}
	s = append(s, w.Max())
	slices.Sort(s)
	return slices.Compact(s)
}

// BySize groups xs into size buckets (4 per decade of size(x)), the
// buckets in size order: what Buckets summarizes, for the cluster
// simulation's samples as well.
func BySize[T any](xs []T, size func(T) int) [][]T {
	groups := map[int][]T{}
	for _, x := range xs {
		b := bucketOf(size(x))
		groups[b] = append(groups[b], x)
	}
	keys := make([]int, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, groups[k])
	}
	return out
}

// bucketOf is a size's bucket index: 4 per decade.
func bucketOf(size int) int { return int(math.Floor(math.Log10(float64(size)) * 4)) }
