// Package perf is homa-dpdk's performance harness: scenarios that measure
// the project side by side with a peer in the same run, on the same
// machine, and report ratios (these machines are noisy; absolute figures
// from different runs do not compare). Each writes JSON that carries its
// method and its known distortions, and PNG plots (gonum/plot), under a
// results directory; scenario.go has what they share (results, the
// progress line, the daemon started as `demo --workers`, loop gaps),
// report.go the markdown report of `perf all`.
//
//   - pmd (package perf/pmd): our forwarding loop — dpdk/ and lcore/,
//     reading each packet's Ethernet header in Go — against dpdk-testpmd
//     in io mode on the same virtual devices, core, burst size, pool and
//     descriptors. Its result and report section are here
//     (pmdresult.go).
//   - rtt (rtt.go): one RPC at a time, 100 B to 64 MB (MB: 10^6 bytes;
//     --smoke up to 1 MB), Homa workers over
//     shared memory through the daemon against kernel TCP (tcp.go) over
//     loopback and over a veth pair between network namespaces. Homa is
//     measured on two links between the daemon's hosts, a daemon each
//     (HomaLinks): homa-memif, a net_memif pair, which copies every byte
//     into and out of its rings, and homa-ring, a net_ring pair, where
//     the mbufs change hands (no copy in the link, as a NIC's DMA); each
//     has its own ratios to TCP.
//   - throughput (throughput.go): 1 MB, 8 MB and 64 MB messages
//     streamed (windows 4, 4 and 2; --smoke: 1 MB), Gbps and CPU seconds
//     per GB, Homa on both links against TCP, ratios per size.
//
// The sizes above kernel Homa's 1,000,000 bytes need the daemon's
// long-message config: demo/workers.yaml takes messages up to 64 MiB
// between its two hosts, in worker regions of 128 MiB of arena and 128
// MiB of pool (dialPair checks the largest message and the arena before
// measuring); the TCP peer's 4-byte length prefix carries up to 2^31 - 1.
//   - rate (rate.go; the Homa workers in rate_homa.go, the coordinator in
//     rate_run.go, TCP in rate_tcp.go, the daemon's memory, counters and
//     raised bounds in rate_limits.go): 100 B RPCs per second with 256
//     outstanding, four worker goroutines with sessions of their own
//     against TCP with a connection per outstanding RPC, CPU seconds per
//     million RPCs; and the daemon's RSS with 10,000 RPCs held
//     outstanding, which the demo's config refuses (the run says which
//     bounds) and a second daemon, those bounds raised, holds.
//   - starts (starts.go, starts_result.go): fresh daemons, ten per link
//     (--smoke two, ring alone): the first 100 small RPCs of each
//     against its steady P50 (the warm-up penalty), and the spread of
//     the starts' 1 MB P50s (bimodal starts), with the page faults and
//     the regions' mapping of each phase as evidence (procstat.go).
//   - slowdown (package perf/slowdown): the Homa papers' experiment
//     through a tc bottleneck with 8 priority bands, Homa daemons against
//     TCP, W1-W5.
//   - testpmd-path (testpmdpath.go): rtt and throughput with dpdk-testpmd
//     forwarding between the two Homa hosts (memif ports: homa-memif
//     alone).
//
// worker-rtt lives with the daemon (cmd/homa-dpdk), whose insides it
// measures; `perf all` runs it as a child process.
//
// This package is pure Go: it starts DPDK programs (the daemon,
// dpdk-testpmd) but never brings DPDK up in its own process, which only
// perf/pmd does.
package perf
