package pmd

import (
	"fmt"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/perf"
)

// The result of the pmd forwarding benchmark, which needs DPDK in its
// own process: `perf all` runs it as a child process and reads its JSON
// back into a Result for the report.

// DeviceRun is one device's result.
type DeviceRun struct {
	Device      string    `json:"device"`
	Ours        []float64 `json:"ours_mpps"`    // per trial
	Testpmd     []float64 `json:"testpmd_mpps"` // per trial
	OursMpps    float64   `json:"ours_median_mpps"`
	TestpmdMpps float64   `json:"testpmd_median_mpps"`
	Ratios      []float64 `json:"ratios"` // ours / testpmd, per trial (each pair run back to back)
	Ratio       float64   `json:"ratio"`  // median of Ratios
	// PeerTxRefusedOurs and ...Testpmd count, for memif, packets the peer
	// could not send because the forwarder's ring was full: zero means the
	// forwarder kept up with the peer, so the figure is the peer's limit.
	PeerTxRefusedOurs    uint64 `json:"peer_tx_refused_ours,omitempty"`
	PeerTxRefusedTestpmd uint64 `json:"peer_tx_refused_testpmd,omitempty"`
}

// Result is the pmd scenario's result (pmd.Result).
type Result struct {
	Method     string      `json:"method"`
	PacketSize int         `json:"packet_size"`
	Burst      int         `json:"burst"`
	Runs       []DeviceRun `json:"runs"`
}

// Report is the pmd scenario's report: its last note is the ratio
// ours/testpmd per device (the median of the per-trial ratios).
func (r *Result) Report() perf.Report {
	t := perf.Table{Header: []string{"device", "ours Mpps", "testpmd Mpps", "ours/testpmd"}}
	var last []string
	for _, x := range r.Runs {
		t.Rows = append(t.Rows, []string{x.Device, fmt.Sprintf("%.2f", x.OursMpps), fmt.Sprintf("%.2f", x.TestpmdMpps), fmt.Sprintf("%.3f", x.Ratio)})
		last = append(last, fmt.Sprintf("%s %.3f", x.Device, x.Ratio))
	}
	return perf.Report{Name: "pmd", Title: Title, Method: r.Method, JSON: "pmd.json", Result: r,
		Notes: []string{"ours/testpmd: " + strings.Join(last, "  ")},
		Distortions: "On a 2-vCPU virtual machine runs vary by about ±30 %, so only ratios from the same " +
			"invocation mean anything; on memif the peer shares CPU 0 with both processes' main threads " +
			"and the Go runtime's threads; net_ring moves pointers only and is not a meaningful reference. " +
			"The forwarding loop polls busily: its longest gap between passes is not reported by pmd.",
		Tables: []perf.Table{t}}
}
