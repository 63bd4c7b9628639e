// Package perf is homa-dpdk's performance harness: scenarios that measure
// the project side by side with a peer in the same run, on the same
// machine, and report ratios (these machines are noisy; absolute figures
// from different runs do not compare).
//
// Scenario pmd (pmd.go) compares our forwarding loop — dpdk/ and lcore/,
// reading each packet's Ethernet header in Go — with dpdk-testpmd in io
// mode: same virtual devices, same forwarding core, burst size, mbuf pool
// and descriptor counts, run one after the other in one invocation.
package perf
