package workload

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// AI is the name of the AI mix, the workload beside W1-W5: what the hosts
// of a training cluster exchange (AIMix).
const AI = "AI"

// Kind is what a message of a run is part of.
type Kind uint8

// The kinds.
const (
	KindRPC        Kind = iota // a message of W1-W5, or the AI mix's small RPCs
	KindBackground             // the AI mix's background messages
	KindAllReduce              // a chunk of a ring all-reduce step
	KindAllToAll               // a message of an all-to-all round
)

func (k Kind) String() string {
	return [...]string{"rpc", "background", "allreduce", "alltoall"}[k]
}

// Msg is one message of a simulated cluster's run: when it is offered,
// between which hosts, its size, and for the AI mix what it is part of.
type Msg struct {
	Message
	Kind Kind
	// Op numbers the collective operation (an all-reduce, an all-to-all
	// round) the message is part of; -1 for the others.
	Op int32
	// After is the message whose delivery to this message's source starts
	// it (the previous step of a ring), or -1: it starts at
	// max(At, that delivery).
	After int32
}

// AIMix is the AI mix's parameters. Its hosts are split into groups of
// Group, each taking one host of a rack in turn (host h is the
// (h mod HostsPerRack × Racks + h div HostsPerRack)th in that order), so
// that a ring and an all-to-all cross racks as a job spread over a cluster
// does. Each group runs, with Poisson starts:
//   - ring all-reduces as NCCL runs them: 2(Group−1) steps, in each every
//     host sends a Chunk to its successor, and a host's chunk of a step
//     leaves when the chunk of the previous step has come from its
//     predecessor;
//   - all-to-all rounds (mixture of experts): every host sends the same
//     size, log-uniform in [A2AMin, A2AMax], to every other of the group
//     at once, an incast at each;
//
// and across all hosts, Poisson, to uniformly random others: background
// messages of BackgroundWorkload and small RPCs of RPCWorkload. The
// shares split the offered load (wire bytes of the host links, the
// one-byte responses counted) and sum to 1.
type AIMix struct {
	Group              int     `json:"group"`
	Chunk              int     `json:"chunk_bytes"`
	A2AMin             int     `json:"alltoall_min_bytes"`
	A2AMax             int     `json:"alltoall_max_bytes"`
	AllReduce          float64 `json:"allreduce_share"`
	AllToAll           float64 `json:"alltoall_share"`
	Background         float64 `json:"background_share"`
	RPC                float64 `json:"rpc_share"`
	BackgroundWorkload string  `json:"background_workload"`
	RPCWorkload        string  `json:"rpc_workload"`
}

// DefaultAIMix is rings and rounds of 8 hosts, NCCL's 512 KiB chunks,
// all-to-all of 64 KiB to 4 MiB per pair, W4 in the background and W1's
// RPCs; 45% of the bytes all-reduce, 30% all-to-all, 23% background, 2%
// RPCs.
func DefaultAIMix() AIMix {
	return AIMix{Group: 8, Chunk: 512 << 10, A2AMin: 64 << 10, A2AMax: 4 << 20,
		AllReduce: 0.45, AllToAll: 0.30, Background: 0.23, RPC: 0.02,
		BackgroundWorkload: "W4", RPCWorkload: "W1"}
}

// Validate checks m for a cluster of hosts.
func (m AIMix) Validate(hosts int) error {
	sum := m.AllReduce + m.AllToAll + m.Background + m.RPC
	switch {
	case m.Group < 2 || hosts%m.Group != 0:
		return fmt.Errorf("AI mix: groups of %d hosts: want at least 2, dividing the %d hosts", m.Group, hosts)
	case m.Chunk < 1:
		return fmt.Errorf("AI mix: a %d-byte all-reduce chunk", m.Chunk)
	case m.A2AMin < 1 || m.A2AMax < m.A2AMin:
		return fmt.Errorf("AI mix: all-to-all sizes %d..%d: want 1 <= min <= max", m.A2AMin, m.A2AMax)
	case m.AllReduce < 0 || m.AllToAll < 0 || m.Background < 0 || m.RPC < 0 || math.Abs(sum-1) > 1e-6:
		return fmt.Errorf("AI mix: shares %g + %g + %g + %g: want shares of at least 0 summing to 1", m.AllReduce, m.AllToAll, m.Background, m.RPC)
	}
	for _, w := range []string{m.BackgroundWorkload, m.RPCWorkload} {
		if _, err := LoadWorkload(w); err != nil {
			return fmt.Errorf("AI mix: %w", err)
		}
	}
	return nil
}

// Cluster is where the AI mix runs and how its load is counted: Racks
// racks of HostsPerRack hosts on links of LinkBps, offered Load of them
// (0 < Load < 1) in wire bytes as Wire counts a message's (its response
// of ResponseBytes counted too), for Duration ns; Seed draws it.
type Cluster struct {
	Racks, HostsPerRack int
	LinkBps, Load       float64
	Wire                func(size int) float64
	ResponseBytes       int
	Duration            int64
	Seed                uint64
}

// Hosts is the number of hosts.
func (c Cluster) Hosts() int { return c.Racks * c.HostsPerRack }

// Groups returns the AI mix's groups on c, each its hosts in ring order.
func (m AIMix) Groups(c Cluster) [][]int {
	n, g := c.Hosts(), m.Group
	order := make([]int, n)
	for h := range n {
		order[h%c.HostsPerRack*c.Racks+h/c.HostsPerRack] = h
	}
	var out [][]int
	for i := 0; i+g <= n; i += g {
		out = append(out, order[i:i+g])
	}
	return out
}

// a2aSize draws an all-to-all size, log-uniform in [min, max].
func (m AIMix) a2aSize(rng *rand.Rand) int {
	lo, hi := math.Log(float64(m.A2AMin)), math.Log(float64(m.A2AMax))
	return int(math.Round(math.Exp(lo + rng.Float64()*(hi-lo))))
}

// a2aMeanWire is the mean wire bytes of an all-to-all message and its
// response.
func (m AIMix) a2aMeanWire(c Cluster) float64 {
	const n = 4096
	sum := 0.0
	lo, hi := math.Log(float64(m.A2AMin)), math.Log(float64(m.A2AMax))
	for i := range n {
		sum += c.Wire(int(math.Round(math.Exp(lo+(float64(i)+0.5)/n*(hi-lo))))) + c.Wire(c.ResponseBytes)
	}
	return sum / n
}

// Messages draws the AI mix's messages of c.Duration ns of starts (the
// first limit of them when it is not 0, whole operations kept), in start
// order; a message's After is always earlier.
func (m AIMix) Messages(c Cluster, limit int) ([]Msg, error) {
	if err := m.Validate(c.Hosts()); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x61692d6d6978)) // "ai-mix"
	perHostBps := c.Load * c.LinkBps / 8                 // wire bytes/s into (and out of) each host
	dur := float64(c.Duration)
	var out []Msg
	op := int32(0)
	poisson := func(rate float64, f func(at int64)) { // rate per ns
		if rate <= 0 {
			return
		}
		for t := rng.ExpFloat64() / rate; t < dur; t += rng.ExpFloat64() / rate {
			f(int64(t))
		}
	}
	g := m.Group
	steps := 2 * (g - 1)
	arWire := float64(steps) * (c.Wire(m.Chunk) + c.Wire(c.ResponseBytes)) // per host per all-reduce
	a2aWire := float64(g-1) * m.a2aMeanWire(c)                             // per host per round
	for _, grp := range m.Groups(c) {
		poisson(m.AllReduce*perHostBps/arWire/1e9, func(at int64) {
			first := int32(len(out))
			for s := range steps {
				for i, src := range grp {
					after := int32(-1)
					if s > 0 { // the predecessor's chunk of the previous step
						after = first + int32((s-1)*g+(i+g-1)%g)
					}
					out = append(out, Msg{Message: Message{At: at, Src: src, Dst: grp[(i+1)%g], Size: m.Chunk},
						Kind: KindAllReduce, Op: op, After: after})
				}
			}
			op++
		})
		poisson(m.AllToAll*perHostBps/a2aWire/1e9, func(at int64) {
			size := m.a2aSize(rng)
			for _, src := range grp {
				for _, dst := range grp {
					if src != dst {
						out = append(out, Msg{Message: Message{At: at, Src: src, Dst: dst, Size: size},
							Kind: KindAllToAll, Op: op, After: -1})
					}
				}
			}
			op++
		})
	}
	for _, p := range []struct {
		name  string
		share float64
		kind  Kind
	}{{m.BackgroundWorkload, m.Background, KindBackground}, {m.RPCWorkload, m.RPC, KindRPC}} {
		wl, _ := LoadWorkload(p.name)
		perHost := p.share * perHostBps / (wl.Mean(c.Wire) + c.Wire(c.ResponseBytes))
		count := int(math.Ceil(perHost * float64(c.Hosts()) * dur / 1e9))
		if p.share == 0 || count == 0 {
			continue
		}
		for _, x := range wl.Messages(rng, c.Hosts(), count, perHost) {
			if float64(x.At) < dur {
				out = append(out, Msg{Message: x, Kind: p.kind, Op: -1, After: -1})
			}
		}
	}
	// Start order; a ring's later steps keep their place after the
	// earlier ones (same At, stable), and After follows the moves.
	idx := make([]int32, len(out))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(out[a].At, out[b].At) })
	where := make([]int32, len(out))
	sorted := make([]Msg, len(out))
	for to, from := range idx {
		where[from] = int32(to)
		sorted[to] = out[from]
	}
	for i := range sorted {
		if a := sorted[i].After; a >= 0 {
			sorted[i].After = where[a]
		}
	}
	if limit > 0 && len(sorted) > limit { // whole operations: cut at the first start past the count
		at := sorted[limit].At
		n := limit
		for n > 0 && sorted[n-1].At == at {
			n--
		}
		sorted = sorted[:n]
	}
	if len(sorted) == 0 {
		return nil, errors.New("AI mix: no message starts in " + strconv.FormatInt(c.Duration/1e6, 10) + " ms: give a longer run")
	}
	return sorted, nil
}

// SizesOf is the distribution of msgs' sizes (for the priority cutoffs
// hosts compute from their workload).
func SizesOf(name string, msgs []Msg) *Workload {
	count := map[int]int{}
	for _, x := range msgs {
		count[x.Size]++
	}
	w := &Workload{Name: name}
	for s := range count {
		w.Sizes = append(w.Sizes, s)
	}
	slices.Sort(w.Sizes)
	acc := 0
	for _, s := range w.Sizes {
		acc += count[s]
		w.CDF = append(w.CDF, float64(acc)/float64(len(msgs)))
	}
	return w
}
