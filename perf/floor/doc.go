// Package floor is the floor scenario: what one net_memif link costs with
// nothing else in it (dpdk-testpmd txonly on one end, rxonly on the other,
// frames of MTU 1500 and 9000), and Homa on memif at each MTU set beside
// it; in perf all, beside the throughput scenario's homa-memif runs.
package floor
