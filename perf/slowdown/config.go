package slowdown

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// Config is one invocation of the slowdown scenario.
type Config struct {
	Bin       string // the homa-dpdk program (daemons run `Bin run`)
	Workloads []string
	Loads     []float64 // fractions of the bottleneck rate
	Period    time.Duration
	// RateBps is the highest bottleneck rate; each workload runs at the
	// rate that needs RPCRate RPCs per second at its highest load, if
	// that is lower (rateFor).
	RateBps float64
	// RPCRate is the RPCs per second a workload's highest load offers
	// (unless RateBps caps it lower): what the daemons and the harness
	// sustain on this machine. W1 and W2 (hundreds of bytes per message)
	// would need thousands per second at tens of Mb/s.
	RPCRate    float64
	Clients    int
	Transports []string // homa, tcp
	Reps       int      // unloaded RPCs per probe size
	Seed       uint64
	Log        io.Writer
	MaxMessage int
	Prefix     string // of the namespaces' names; "" = sd<pid>
	// LinkSpeed is the daemons' ports.link_speed, which sets their
	// pacers' rate: "auto" (the veth's, 10G) or a rate such as 100M.
	LinkSpeed string
	// Float lets every daemon's polling thread run on either CPU
	// (EAL --lcores 1@(0-1)) instead of all on CPU 1.
	Float bool
	// Protocol is the daemons' protocol: section, YAML lines indented by
	// two spaces; "" = Protocol of each workload's rate.
	Protocol string
	// IdleSpin and IdleMaxSleepUs are the daemons' runtime.idle_spin_passes
	// and runtime.idle_max_sleep_us.
	IdleSpin, IdleMaxSleepUs int
	// Sessions is the worker sessions per Homa client host.
	Sessions int
}

// DefaultConfig is a full run.
func DefaultConfig() Config {
	return Config{Workloads: []string{"W1", "W2", "W3", "W4", "W5"}, Loads: []float64{0.5, 0.8},
		Period: 10 * time.Second, RateBps: 200e6, Clients: 2, Transports: []string{"homa", "tcp"},
		Reps: 30, Seed: 1, Log: io.Discard, MaxMessage: 1_000_000, LinkSpeed: "auto", Float: true, Sessions: 4, RPCRate: 1500,
		IdleSpin: 100, IdleMaxSleepUs: 100}
}

// SmokeConfig is a run that finishes well within a minute.
func SmokeConfig() Config {
	c := DefaultConfig()
	c.Workloads, c.Loads, c.Period, c.Clients, c.Reps = []string{"W3"}, []float64{0.5}, 3*time.Second, 2, 8
	return c
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

// rateFor is the bottleneck rate for w: the rate at which the highest
// load offers cfg.RPCRate RPCs per second, at most cfg.RateBps, rounded
// down to 1 kbit/s.
func rateFor(cfg Config, w *workload.Workload) float64 {
	r := cfg.RateBps
	if cfg.RPCRate > 0 {
		r = min(r, cfg.RPCRate*w.Mean(workload.HomaWireBytes)*8/slices.Max(cfg.Loads))
	}
	return max(math.Floor(r/1000)*1000, 1000)
}

// Protocol scales Homa's knobs to the bottleneck: the unscheduled
// bytes to the rate times 1 ms (the software RTT here is 0.15-0.3 ms;
// the kernel default, 40 KB, would be 3 ms of queue at 100 Mb/s; at
// least 2 full packets) and max_incoming to 4 times that. RESENDs wait
// for 100 ms of silence, twice what one band of the bottleneck queues
// (BandQueue): a RESEND sooner would ask again for packets still
// waiting there, and the server, not yet knowing the request, would
// answer RPC_UNKNOWN and make the client send all of it again. A server
// asks for a missing ack (NEED_ACK) as seldom: every 2 ms, as kernel Homa
// does, each unacknowledged RPC would cost an ACK packet through a
// bottleneck a thousand times slower than a datacenter link, and at a
// few Mb/s those ACKs alone filled the top band and collapsed the run.
// An RPC fails after 5 s of silence.
func Protocol(rateBps float64) string {
	unsched := max(int(rateBps/8*1e-3), 2*workload.HomaPerPacketPayload)
	resend := int(2 * BandQueue / time.Millisecond)
	return fmt.Sprintf("  unsched_bytes: %d\n  max_incoming: %d\n  resend_ticks: %d\n  resend_interval: %d\n  request_ack_ticks: %d\n  timeout_ticks: %d\n",
		unsched, 4*unsched, resend, resend, resend, 5000)
}
