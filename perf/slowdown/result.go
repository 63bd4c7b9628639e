package slowdown

import (
	"fmt"

	"github.com/homa-dpdk/homa-dpdk/engine/workload"
)

// RunResult is one transport × workload × load.
type RunResult struct {
	Transport string  `json:"transport"`
	Workload  string  `json:"workload"`
	Load      float64 `json:"load"`
	RateBps   float64 `json:"rate_bps"` // the bottleneck's rate in this run
	// HomaProtocol is the protocol: section the daemons ran with (Homa).
	HomaProtocol string `json:"homa_protocol,omitempty"`
	// DaemonCounters are each Homa daemon's engine counters (those not 0)
	// at the end of the run, warm-up included: packets sent and received
	// by type, RESENDs, timeouts, drops.
	DaemonCounters map[string]map[string]float64 `json:"daemon_counters,omitempty"`
	Offered        int                           `json:"rpcs_offered"`
	Sent           int                           `json:"rpcs_sent"`
	Done           int                           `json:"rpcs_done"`
	Failed         int                           `json:"rpcs_failed"`
	Lost           int                           `json:"rpcs_unanswered"`
	// ServerReplyFailed: requests whose Reply the server daemon refused
	// (the RPC had ended, e.g. the client's side timed out).
	ServerReplyFailed int    `json:"server_reply_failed,omitempty"`
	FirstErr          string `json:"first_error,omitempty"`
	Sampled           int    `json:"rpcs_sampled"`
	// OfferedMbps is the schedule's rate in Homa DATA wire bytes;
	// AchievedMbps the same measure over the requests answered.
	OfferedMbps  float64 `json:"offered_mbps"`
	AchievedMbps float64 `json:"achieved_mbps"`
	// MaxSendLagUs: the latest an RPC left against its Poisson time.
	MaxSendLagUs float64 `json:"max_send_lag_us"`
	// LateFraction: the share of sends more than 1 ms late. Above 5% the
	// harness did not keep the schedule (CPU starvation): ScheduleKept
	// is false and the run's slowdowns measure the machine, not the
	// transport.
	LateFraction float64 `json:"late_send_fraction"`
	ScheduleKept bool    `json:"schedule_kept"`
	// MaxSendCallUs: the longest Send call (Homa: the daemon's answer to
	// the submission); MaxWaitOverrunUs: the longest a Receive overran its
	// timeout (the harness's goroutine not scheduled).
	MaxSendCallUs    float64 `json:"max_send_call_us"`
	MaxWaitOverrunUs float64 `json:"max_wait_overrun_us,omitempty"`
	// Loops: the longest gap between two passes of each polling loop:
	// the harness's driver loops (client-N: waits for the next arrival
	// included, so at least the largest inter-arrival time), and the
	// daemons' homa_loop_max_pass_gap_seconds (idle sleeps excluded; the
	// daemon keeps the maximum since it started, read after this run).
	Loops    []LoopGap `json:"loops"`
	Bands    []Band    `json:"bottleneck_bands"`
	Short    *Bucket   `json:"short_messages,omitempty"` // <= ShortLimit bytes
	AllP99   float64   `json:"all_p99"`                  // the P99 slowdown of every message sampled
	Buckets  []Bucket  `json:"buckets"`
	Unloaded *Unloaded `json:"unloaded"`
	Seconds  float64   `json:"seconds"`
	// LoadAvg is /proc/loadavg just before the run: other work on the
	// machine shows up here.
	LoadAvg string `json:"loadavg_before"`
	samples []Sample
}

// LoopGap is one polling loop's longest gap.
type LoopGap struct {
	Loop     string  `json:"loop"`
	MaxGapUs float64 `json:"max_gap_us"`
	Note     string  `json:"note,omitempty"`
}

// Result is what the scenario writes to slowdown.json.
type Result struct {
	Scenario    string  `json:"scenario"`
	Method      string  `json:"method"`
	Distortions string  `json:"distortions"`
	RateBps     float64 `json:"max_rate_bps"` // --rate; each run has its own rate_bps
	RPCRate     float64 `json:"rpc_rate"`     // --rpc-rate
	Clients     int     `json:"clients"`
	Seconds     float64 `json:"seconds_per_run"`
	// Skipped lists the workload × load runs not made, and why.
	Skipped []string     `json:"skipped,omitempty"`
	CPUs    int          `json:"cpus"`
	Runs    []*RunResult `json:"runs"`
	Plots   []string     `json:"plots"` // the report's plots (Report)
}

// newRunResult fills in what every transport's run has.
func newRunResult(tr string, w *workload.Workload, load, rate float64, sched [][]workload.Arrival, cfg Config, res []driverResult, u *Unloaded, loadAvg string) *RunResult {
	r := &RunResult{Transport: tr, Workload: w.Name, Load: load, RateBps: rate, Unloaded: u, Seconds: cfg.Period.Seconds(), LoadAvg: loadAvg}
	var offered, achieved float64
	for _, s := range sched {
		r.Offered += len(s)
		for _, a := range s {
			offered += workload.HomaWireBytes(a.Size)
		}
	}
	late := 0
	for i, d := range res {
		r.Sent += d.sent
		r.Done += d.done
		r.Failed += d.failed
		r.Lost += d.lost
		if d.firstErr != nil && r.FirstErr == "" {
			r.FirstErr = d.firstErr.Error()
		}
		r.MaxSendLagUs = max(r.MaxSendLagUs, float64(d.maxLag)/1e3)
		r.MaxSendCallUs = max(r.MaxSendCallUs, float64(d.maxCall)/1e3)
		r.MaxWaitOverrunUs = max(r.MaxWaitOverrunUs, float64(d.maxOver)/1e3)
		r.samples = append(r.samples, d.samples...)
		r.Loops = append(r.Loops, LoopGap{Loop: fmt.Sprintf("%s driver client-%d", tr, i+1), MaxGapUs: float64(d.maxGap) / 1e3,
			Note: "harness loop; includes waiting for the next arrival"})
		late += d.late
	}
	// Achieved: the answered share of the offered wire bytes.
	if r.Offered > 0 {
		achieved = offered * float64(r.Done) / float64(r.Offered)
		r.LateFraction = float64(late) / float64(r.Offered)
	}
	r.OfferedMbps = offered * 8 / cfg.Period.Seconds() / 1e6
	r.AchievedMbps = achieved * 8 / cfg.Period.Seconds() / 1e6
	r.ScheduleKept = r.LateFraction <= 0.05
	r.Sampled = len(r.samples)
	r.Buckets = Buckets(r.samples, u)
	r.Short = Short(r.samples, u)
	if len(r.samples) > 0 {
		r.AllP99 = summarize(r.samples, u).P99
	}
	return r
}
