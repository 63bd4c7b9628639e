// Package slowdown is the perf harness's slowdown scenario, the Homa
// papers' experiment on one machine: clients and a server in network
// namespaces, a tc bottleneck with 8 strict-priority bands, Homa daemons
// against kernel TCP under the workloads W1-W5. See Method for what is
// measured and how, and Distortions for what a 2-CPU virtual machine
// does to it.
//
// Where to read: run.go runs the scenario (per workload the bottleneck's
// rate, per transport every load); config.go is its configuration and
// the Homa protocol scaled to the link; engine/workload has the message
// sizes (W1-W5) and the Poisson arrivals; topology.go the namespaces and
// the tc bottleneck; homa.go and tcp.go the two transports (TCP's peer
// is perf/tcppeer's), daemon.go the homa-dpdk daemons Homa runs on and
// driver.go what both transports' drivers share; slowdown.go turns
// samples into slowdowns; result.go is what it records, report.go its
// report (the table, the notes and a plot per workload and load).
package slowdown
