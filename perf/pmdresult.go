package perf

import "fmt"

// The result of the pmd forwarding benchmark, which runs in package
// perf/pmd: it needs DPDK in its own process, and so cgo, which this
// package does without. `perf all` runs it as a child process and reads
// its JSON back into a PMDResult for the report.

// PMDRun is one device's result.
type PMDRun struct {
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

// PMDResult is the pmd scenario's result (pmd.Result).
type PMDResult struct {
	Method     string   `json:"method"`
	PacketSize int      `json:"packet_size"`
	Burst      int      `json:"burst"`
	Runs       []PMDRun `json:"runs"`
}

// WriteJSON writes the result to path, creating its directory.
func (r *PMDResult) WriteJSON(path string) error { return WriteJSON(path, r) }

// PMDSection is the pmd result for the report.
func PMDSection(r *PMDResult) Section {
	t := Table{Header: []string{"device", "ours Mpps", "testpmd Mpps", "ours/testpmd"}}
	for _, x := range r.Runs {
		t.Rows = append(t.Rows, []string{x.Device, fmt.Sprintf("%.2f", x.OursMpps), fmt.Sprintf("%.2f", x.TestpmdMpps), fmt.Sprintf("%.3f", x.Ratio)})
	}
	return Section{Name: "pmd", Title: "pmd: forwarding, our Go loop vs dpdk-testpmd", Method: r.Method,
		Distortions: "On a 2-vCPU virtual machine runs vary by about ±30 %, so only ratios from the same " +
			"invocation mean anything; on memif the peer shares CPU 0 with both processes' main threads " +
			"and the Go runtime's threads; net_ring moves pointers only and is not a meaningful reference. " +
			"The forwarding loop polls busily: its longest gap between passes is not reported by pmd.",
		Tables: []Table{t}}
}
