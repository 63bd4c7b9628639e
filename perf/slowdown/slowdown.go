package slowdown

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

// Method is written into every result.
const Method = `Hosts are network namespaces: one server and C clients, each with a veth ` +
	`into a bridge in a switch namespace. The bottleneck is the switch port towards the server ` +
	`(its veth egress): tc htb with one class at the rate and under it 8 strict-priority bands ` +
	`(this kernel has no prio or ets qdisc: the bands are htb leaf classes with prio 0..7, each guaranteed ` +
	`8 kbit/s and borrowing up to the rate, which htb lends to the lowest prio first; each band a bfifo ` +
	`holding 50 ms of the rate's bytes, at least 16 full frames: a switch buffer is a time at its rate; ` +
	`buckets of one 1600-byte frame, so that each packet waits its transmission time as on a link of ` +
	`that rate); u32 filters put IPv4 TOS top-3-bits p (Homa priority p, TOS = p<<5, as ` +
	`kernel Homa) in band 7-p (band 0 first); non-IP frames (ARP) go to band 0. Offloads (TSO/GSO/GRO) ` +
	`are turned off on every veth so both transports hand the qdisc MTU-sized frames. ` +
	`Rate per workload: the one at which its highest load offers --rpc-rate RPCs/s (default 1500, what ` +
	`the daemons and the harness sustain here), at most --rate (default 200 Mb/s): W1 and W2, whose messages ` +
	`are hundreds of bytes, run at 4 and 8 Mb/s, W3 at 40, W4 and W5 at 200 (about 300 and 50 RPCs/s at 80%). ` +
	`Per workload Homa runs every load, then TCP does, through the same bottleneck. ` +
	`Homa: one homa-dpdk run daemon per namespace on net_af_packet over its eth0, fresh daemons for every ` +
	`load (one run's backlog cannot carry into the next); runtime.idle adaptive with 100 empty passes ` +
	`before a sleep of at most 100 µs (--idle-spin, --idle-max-sleep: three daemons spinning 10,000 passes ` +
	`kept both CPUs busy and starved each other), polling thread free to run on either CPU (EAL --lcores ` +
	`1@(0-1)); link_speed auto, so the senders' pacers run at the veth's 10G and the queue forms at the ` +
	`bottleneck as in a switch; protocol scaled to the link (SDProtocol: unscheduled bytes = rate x 1 ms, ` +
	`max_incoming 4 times that; RESEND after 100 ms of silence, twice a band's queue, and NEED_ACK as ` +
	`seldom: at kernel Homa's 2 ms, the ACKs of unacknowledged RPCs filled the top band of a 4 Mb/s link ` +
	`and collapsed the run; RPC timeout 5 s). This harness attaches to each client daemon 4 ` +
	`worker sessions (client.Dial; a Send waits for the daemon's answer, so the host's arrivals are dealt ` +
	`to its sessions in turn) and one server worker (port 99, answering with ReplyAsync: a burst of ` +
	`requests is answered in one pass of the daemon) to the server daemon, over their unix sockets; it ` +
	`runs with GOMAXPROCS of at least sessions + 4, so that a session woken from its blocking eventfd wait ` +
	`never waits for a P. ` +
	`TCP: the same IPv4 addresses are given to the kernel (taken away again after the workload), the server ` +
	`listens (one goroutine per connection), each client keeps a pool of TCP_NODELAY connections and uses one ` +
	`connection per outstanding RPC (an idle one from the pool, or a new one when all are busy), ` +
	`framed as a 4-byte length and the bytes (a driver thread per client sleeps in the kernel until each ` +
	`arrival, as the Homa drivers do in their eventfd wait); TOS 0, so all TCP traffic shares one band (kernel TCP ` +
	`gets no Homa priorities). ` +
	`Workload: requests of size S drawn from W_k (the CSV's length, relative frequency), 1-byte ` +
	`responses (the papers' slowdown is of one message; the response adds one small frame). ` +
	`PoissonArrivals are open-loop Poisson, the same seeded schedule for both transports, spread uniformly ` +
	`over the clients, at a rate that loads the bottleneck to the given fraction counting Homa's DATA ` +
	`frames with their Ethernet, IPv4 and Homa headers (what htb counts; no preamble/FCS). RTT is ` +
	`from just before Send/write to the response's arrival at the client worker/goroutine; only RPCs ` +
	`sent in the middle 90% of the period are sampled. ` +
	`SDUnloaded RTT: before the loaded runs of each transport and workload, RPCs of sizes at the workload's ` +
	`quantiles are sent one at a time from client 0, each after a pause that refills the bottleneck's ` +
	`bucket (median of several per size); a sample's slowdown is its ` +
	`RTT divided by the unloaded RTT at its size, interpolated linearly in log(size)-log(RTT). ` +
	`Samples are grouped in size buckets of 4 per decade; P50/P99 are nearest-rank.`

// Distortions lists what the machine does to the measurement.
const Distortions = `2 vCPUs shared by the three daemons' polling loops, the harness's ` +
	`workers and drivers, the kernel's softirq work for every veth and the qdisc, and whatever ` +
	`else runs on the machine (loadavg_before in each run). CPU contention inflates both transports' ` +
	`RTTs and shows up directly as tail latency: a daemon descheduled for milliseconds (its max pass gap) ` +
	`delays every packet it holds, and kernel TCP, which runs in softirq context, suffers less. The ` +
	`unloaded RTT is measured alone on an idle machine, so with sleeping loops (Homa ~0.4 ms for a small ` +
	`RPC: up to 100 µs to wake each idle loop on 4 crossings; TCP 0.03-0.08 ms), so Homa's slowdown ` +
	`denominators are larger than a busy-polled daemon's (3 µs in the rtt scenario) and than TCP's: ` +
	`compare the absolute RTTs too (short_messages.p99_rtt_us, printed beside the slowdowns). The ` +
	`bottleneck runs at megabits, not the papers' 10-100 Gb/s: a full packet takes ` +
	`0.3 ms at 40 Mb/s and 3 ms at 4 Mb/s, so queueing, not software, dominates the loaded RTTs, as in ` +
	`the papers; Homa's control packets (grants, RESENDs, BUSY) cost a larger share of so slow a link. ` +
	`Sends late against the Poisson schedule (late_send_fraction, ` +
	`schedule_kept) mean the offered load was not applied as drawn. The bottleneck's strict priority ` +
	`is htb's (no prio/ets qdisc in this kernel): each band is guaranteed 8 kbit/s, so a low band ` +
	`is never fully starved. Messages above 1,000,000 bytes (W3-W5) are folded into 1,000,000 (the ` +
	`worker interface's and kernel Homa's limit). Homa's DATA header (56 B) and TCP's (32 B with ` +
	`timestamps) differ: the same schedule is a slightly lower wire load for TCP. W5 offers about 500 ` +
	`RPCs per 10-s run at 80% and has no short messages; its P99s per size rest on few samples.`

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

// Homa's framing on a 1500-byte MTU, as homa-dpdk sends it (wire package):
// Ethernet 14 + IPv4 20 + the DATA header, and the payload per packet.
var homaPerPacketPayload = wire.PayloadPerPacket(1500, wire.IPv4MinHeaderLen)

const (
	homaDataHeader = wire.DataHeaderLen
	ethIPHeaders   = 14 + wire.IPv4MinHeaderLen
)

// HomaWireBytes is the bytes of a message's DATA frames as the qdisc counts
// them (Ethernet and IP headers included, no preamble or FCS).
func HomaWireBytes(size int) float64 {
	n := (size + homaPerPacketPayload - 1) / homaPerPacketPayload
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

// bucketOf is a size's bucket index: 4 per decade.
func bucketOf(size int) int { return int(math.Floor(math.Log10(float64(size)) * 4)) }

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
	groups := map[int][]Sample{}
	for _, s := range samples {
		groups[bucketOf(s.Size)] = append(groups[bucketOf(s.Size)], s)
	}
	keys := make([]int, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Bucket
	for _, k := range keys {
		out = append(out, summarize(groups[k], u))
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

// ParseTCRate reads a tc-style rate: 1gbit, 500mbit, 100kbit, 2000bit
// (also 1G, 500M); it returns bits per second.
func ParseTCRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit"), "bps")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("rate %q: want e.g. 1gbit, 500mbit", s)
	}
	return v * mult, nil
}

// median returns the median of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return rank(v, 0.5)
}

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
